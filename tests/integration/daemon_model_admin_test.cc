// Model management on the real daemon (Ollama's /api/pull, /api/create, /api/copy,
// /api/delete, /api/blobs): a pull from a loopback server (a plain URL, and a Hugging Face
// repository served from loopback through hub_url) streams Ollama's progress lines and the
// model is listed and generates; create makes an alias whose SYSTEM and PARAMETER take effect,
// or a model from an uploaded blob; copy stands alone; delete withdraws, and is refused while
// a request holds the model, for the config's models and in system directories. Security: a
// non-admin UID (nobody) is refused every call with 403; traversal names and symlinks that
// lead out of models_dir are refused. No test reaches the network.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fetch/sha256.h"
#include "fetch/test_http_server.h"
#include "llmd/client.h"
#include "proto/messages.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using fetch::testing::Mode;
using fetch::testing::Resource;
using fetch::testing::TestHttpServer;

json Body(const HttpReply& r) {
  json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json::object() : j;
}

// NDJSON lines, each parsed.
std::vector<json> Lines(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
  }
  return out;
}

std::vector<std::string> Statuses(const std::vector<json>& lines) {
  std::vector<std::string> s;
  for (const json& l : lines) s.push_back(l.is_object() ? l.value("status", l.value("error", "?")) : "?");
  return s;
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A models directory (with copies of the tiny model), a folder outside it, and a loopback
// server that serves the tiny model's bytes as a file and as a hub repository.
class ModelAdmin : public ::testing::Test {
 protected:
  ModelAdmin() : root_(MakeTempDir()), tiny_(ReadAll(TinyModelPath())) {
    fs::create_directories(models());
    fs::create_directories(outside());
    fs::create_directories(system_dir());
    server_.Serve("/files/pulled.gguf", Resource{tiny_, Mode::kNormal, 0, ""});
    const std::string sha = fetch::Sha256Hex(tiny_);
    const std::string entry = R"({"type":"file","oid":"1","size":)" + std::to_string(tiny_.size()) +
                              R"(,"path":"hubtiny-Q8_0.gguf","lfs":{"oid":")" + sha + R"(","size":)" +
                              std::to_string(tiny_.size()) + R"(,"pointerSize":134}})";
    server_.Serve("/api/models/acme/tiny-GGUF/tree/main", Resource{"[" + entry + "]", Mode::kNormal, 0, ""});
    server_.Serve("/acme/tiny-GGUF/resolve/main/hubtiny-Q8_0.gguf", Resource{tiny_, Mode::kNormal, 0, ""});
  }
  ~ModelAdmin() override { fs::remove_all(root_); }

  std::string models() const { return root_ + "/models"; }
  std::string outside() const { return root_ + "/outside"; }
  std::string system_dir() const { return root_ + "/system"; }
  void Add(const std::string& dir, const std::string& name) {
    fs::copy_file(TinyModelPath(), dir + "/." + name + ".part");
    fs::rename(dir + "/." + name + ".part", dir + "/" + name + ".gguf");
  }
  std::unique_ptr<HttpDaemon> Start(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--models-dir", models(), "--system-models-dirs", system_dir(), "--hub-url",
                               server_.base_url(), "--http-max-body-bytes", std::to_string(64u << 20)});
    return std::make_unique<HttpDaemon>(extra);
  }
  static std::vector<std::string> Tags(HttpDaemon& d) {
    std::vector<std::string> names;
    const json body = Body(d.Unix("GET", "/api/tags"));
    for (const json& m : body.value("models", json::array())) names.push_back(m.value("name", ""));
    return names;
  }
  static HttpReply Generate(HttpDaemon& d, const std::string& model, const std::string& options = R"({"num_predict":4})") {
    return d.Unix("POST", "/api/generate",
                  R"({"model":")" + model + R"(","prompt":"Hello","stream":false,"options":)" + options + "}");
  }

  std::string root_;
  std::string tiny_;
  TestHttpServer server_;
};

TEST_F(ModelAdmin, PullStreamsOllamasProgressThenTheModelIsListedAndGenerates) {
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const HttpReply r = d->Unix("POST", "/api/pull", R"({"model":")" + server_.Url("/files/pulled.gguf") + R"("})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("application/x-ndjson"), std::string::npos) << r.headers;
  const std::vector<json> lines = Lines(r.body);
  const std::vector<std::string> statuses = Statuses(lines);
  ASSERT_GE(lines.size(), 5u) << r.body;
  EXPECT_EQ(statuses.front(), "pulling manifest");
  const std::vector<std::string> tail(statuses.end() - 3, statuses.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"verifying sha256 digest", "writing manifest", "success"})) << r.body;
  // The download's lines: Ollama's {status, total, completed}, the last one whole.
  const json& last_bytes = lines[lines.size() - 4];
  EXPECT_EQ(last_bytes.value("status", ""), "pulling pulled.gguf") << r.body;
  EXPECT_EQ(last_bytes.value("total", uint64_t{0}), tiny_.size());
  EXPECT_EQ(last_bytes.value("completed", uint64_t{0}), tiny_.size());
  // Listed at once, and it generates.
  EXPECT_TRUE(Has(Tags(*d), "pulled")) << d->process().log();
  EXPECT_EQ(ReadAll(models() + "/pulled.gguf"), tiny_);
  const HttpReply gen = Generate(*d, "pulled");
  EXPECT_EQ(gen.status, 200) << gen.body;
  EXPECT_TRUE(Body(gen).value("done", false)) << gen.body;
}

TEST_F(ModelAdmin, PullsAHuggingFaceRepositoryThroughHubUrlWithItsDigest) {
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const HttpReply r = d->Unix("POST", "/api/pull", R"({"name":"hf.co/acme/tiny-GGUF:Q8_0"})");
  ASSERT_EQ(r.status, 200) << r.body;
  // The download's lines carry the hub's digest, as Ollama's name a layer.
  const std::string sha = fetch::Sha256Hex(tiny_);
  bool saw_digest = false;
  for (const json& l : Lines(r.body)) {
    saw_digest |= l.value("digest", "") == "sha256:" + sha && l.value("status", "") == "pulling " + sha.substr(0, 12);
  }
  EXPECT_TRUE(saw_digest) << r.body;
  EXPECT_TRUE(Has(Tags(*d), "hubtiny-Q8_0"));
  // Again, not streamed: the file is there with the hub's digest; the answer is the last line.
  const HttpReply again = d->Unix("POST", "/api/pull", R"({"model":"hf.co/acme/tiny-GGUF:Q8_0","stream":false})");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Body(again), json({{"status", "success"}}));
  EXPECT_EQ(server_.RequestsFor("/acme/tiny-GGUF/resolve/main/hubtiny-Q8_0.gguf").size(), 1u) << "fetched once";
}

TEST_F(ModelAdmin, PullRefusesOllamaRegistryNamesAndNonGgufFilesSayingWhatIsAccepted) {
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  HttpReply r = d->Unix("POST", "/api/pull", R"({"model":"llama3"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(Body(r).value("error", "").find("hf.co/owner/repo"), std::string::npos) << r.body;
  server_.Serve("/files/notes.txt", Resource{"hello", Mode::kNormal, 0, ""});
  r = d->Unix("POST", "/api/pull", R"({"model":")" + server_.Url("/files/notes.txt") + R"("})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("not a GGUF"), std::string::npos) << r.body;
  EXPECT_TRUE(server_.RequestsFor("/files/notes.txt").empty()) << "refused before a byte is fetched";
}

TEST_F(ModelAdmin, CreateMakesAnAliasWhoseSystemAndParameterTakeEffect) {
  Add(models(), "alpha");
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const HttpReply r = d->Unix("POST", "/api/create",
                              R"({"model":"terse","from":"alpha","system":"Be terse.","parameters":{"num_predict":2,"stop":["<x>","<y>"]}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Statuses(Lines(r.body)).back(), "success") << r.body;
  EXPECT_TRUE(Has(Tags(*d), "terse"));
  const std::string manifest = ReadAll(models() + "/terse.modelfile");
  EXPECT_NE(manifest.find("FROM alpha"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("PARAMETER num_predict 2"), std::string::npos) << manifest;
  // num_predict 2 is terse's default: a request that sets none generates 2 tokens.
  const HttpReply gen = d->Unix("POST", "/api/generate", R"({"model":"terse","prompt":"Hello","stream":false,"options":{"temperature":0}})");
  ASSERT_EQ(gen.status, 200) << gen.body;
  EXPECT_EQ(Body(gen).value("eval_count", -1), 2) << gen.body;
  // A parameter llmd does not know is refused by name, and nothing is written.
  const HttpReply bad = d->Unix("POST", "/api/create", R"({"model":"odd","from":"alpha","parameters":{"mirostat":1}})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("mirostat"), std::string::npos) << bad.body;
  EXPECT_FALSE(fs::exists(models() + "/odd.modelfile"));
  // Ollama's Go templates cannot be rendered as written: refused, saying what to give instead.
  const HttpReply go = d->Unix("POST", "/api/create", R"({"model":"gotpl","from":"alpha","template":"{{ .Prompt }}"})");
  EXPECT_EQ(go.status, 400) << go.body;
  EXPECT_NE(go.body.find("Go template"), std::string::npos) << go.body;
  EXPECT_NE(go.body.find("give a Jinja template"), std::string::npos) << go.body;
  EXPECT_FALSE(fs::exists(models() + "/gotpl.modelfile"));
  // A Jinja one is the model's template: show says so.
  const std::string jinja = "{% for m in messages %}{{ m.content }}{% endfor %}";
  const HttpReply made = d->Unix("POST", "/api/create", json({{"model", "plain"}, {"from", "alpha"}, {"template", jinja}}).dump());
  ASSERT_EQ(made.status, 200) << made.body;
  EXPECT_EQ(Body(d->Unix("POST", "/api/show", R"({"model":"plain"})")).value("template", ""), jinja);
}

TEST_F(ModelAdmin, CreateFromAnUploadedBlob) {
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const std::string digest = "sha256:" + fetch::Sha256Hex(tiny_);
  auto head = [&](const std::string& dg) {
    return Curl(d->process().dir(), "--unix-socket " + d->http_socket() + " -I 'http://localhost/api/blobs/" + dg + "'");
  };
  EXPECT_EQ(head(digest).status, 404);
  const HttpReply wrong = d->Unix("POST", "/api/blobs/sha256:" + std::string(64, 'a'), tiny_);
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  EXPECT_NE(wrong.body.find(fetch::Sha256Hex(tiny_)), std::string::npos) << "names the body's digest: " << wrong.body;
  EXPECT_EQ(d->Unix("POST", "/api/blobs/sha256:../../etc/passwd", "x").status, 400);
  const HttpReply put = d->Unix("POST", "/api/blobs/" + digest, tiny_);
  EXPECT_EQ(put.status, 201) << put.body;
  EXPECT_EQ(head(digest).status, 200);
  const HttpReply r = d->Unix("POST", "/api/create",
                              R"({"model":"lib/fromblob:v1","files":{"model.gguf":")" + digest + R"("},"stream":false})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r), json({{"status", "success"}}));
  EXPECT_TRUE(Has(Tags(*d), "lib/fromblob:v1")) << d->process().log();
  EXPECT_EQ(Generate(*d, "lib/fromblob:v1").status, 200);
}

TEST_F(ModelAdmin, CopyStandsAloneAndDeleteWithdraws) {
  Add(models(), "alpha");
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  ASSERT_EQ(d->Unix("POST", "/api/create", R"({"model":"derived","from":"alpha","parameters":{"num_predict":3}})").status, 200);
  EXPECT_EQ(d->Unix("POST", "/api/copy", R"({"source":"alpha","destination":"beta"})").status, 200);
  EXPECT_EQ(d->Unix("POST", "/api/copy", R"({"source":"derived","destination":"derived2"})").status, 200);
  HttpReply exists = d->Unix("POST", "/api/copy", R"({"source":"alpha","destination":"beta"})");
  EXPECT_EQ(exists.status, 400) << exists.body;
  EXPECT_NE(exists.body.find("already exists"), std::string::npos) << exists.body;
  EXPECT_EQ(d->Unix("POST", "/api/copy", R"({"source":"nothere","destination":"x"})").status, 404);
  auto tags = Tags(*d);
  EXPECT_TRUE(Has(tags, "beta") && Has(tags, "derived2")) << d->process().log();
  // Deleting the sources leaves the copies whole: derived2 keeps derived's defaults.
  EXPECT_EQ(d->Unix("DELETE", "/api/delete", R"({"model":"derived"})").status, 200);
  EXPECT_EQ(d->Unix("DELETE", "/api/delete", R"({"name":"alpha"})").status, 200);
  tags = Tags(*d);
  EXPECT_FALSE(Has(tags, "alpha") || Has(tags, "derived"));
  EXPECT_FALSE(fs::exists(models() + "/alpha.gguf"));
  EXPECT_EQ(Generate(*d, "beta").status, 200);
  const HttpReply gen = d->Unix("POST", "/api/generate", R"({"model":"derived2","prompt":"Hi","stream":false,"options":{"temperature":0}})");
  ASSERT_EQ(gen.status, 200) << gen.body;
  EXPECT_EQ(Body(gen).value("eval_count", -1), 3) << gen.body;
  const HttpReply gone = d->Unix("DELETE", "/api/delete", R"({"model":"alpha"})");
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_EQ(d->Unix("POST", "/api/delete", R"({"model":"beta"})").status, 405);
}

TEST_F(ModelAdmin, DeleteIsRefusedWhileARequestHoldsTheModelAndForTheConfigsAndSystemModels) {
  Add(models(), "alpha");
  Add(system_dir(), "sys");
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  // A stream on alpha that cannot end by itself before the test closes it: 900 tokens with
  // the end-of-text token ignored. Its first event says the model is serving it.
  int held = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(held, 0);
  // Closed on every way out, an assertion's too; a reply that never comes fails the test
  // after a generous liveness bound instead of hanging it.
  const std::unique_ptr<int, void (*)(int*)> closer(&held, [](int* fd) { if (*fd >= 0) ::close(*fd); });
  const timeval patience{120, 0};
  ::setsockopt(held, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", d->http_socket().c_str());
  ASSERT_EQ(::connect(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string body = R"({"model":"alpha","prompt":"Once upon a time","max_tokens":900,"ignore_eos":true,"stream":true})";
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(held, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  std::string seen;
  char buf[4096];
  for (ssize_t n; seen.find("data: ") == std::string::npos && (n = ::recv(held, buf, sizeof buf, 0)) > 0;) {
    seen.append(buf, static_cast<size_t>(n));
  }
  ASSERT_NE(seen.find("data: "), std::string::npos) << seen;
  const HttpReply busy = d->Unix("DELETE", "/api/delete", R"({"model":"alpha"})");
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_NE(busy.body.find("serving"), std::string::npos) << busy.body;
  EXPECT_TRUE(fs::exists(models() + "/alpha.gguf"));
  ::close(std::exchange(held, -1));  // the daemon cancels the stream and gives the model's lease back
  // Once it is cancelled, the delete goes through.
  HttpReply done;
  WaitFor([&] { return (done = d->Unix("DELETE", "/api/delete", R"({"model":"alpha"})")).status == 200; });
  EXPECT_EQ(done.status, 200) << done.body;
  const HttpReply configured = d->Unix("DELETE", "/api/delete", R"({"model":"tiny-q8_0"})");
  EXPECT_EQ(configured.status, 400) << configured.body;
  EXPECT_NE(configured.body.find("config"), std::string::npos) << configured.body;
  const HttpReply system = d->Unix("DELETE", "/api/delete", R"({"model":"sys"})");
  EXPECT_EQ(system.status, 400) << system.body;
  EXPECT_NE(system.body.find("read-only"), std::string::npos) << system.body;
  EXPECT_TRUE(fs::exists(system_dir() + "/sys.gguf"));
}

// One HTTP/1.1 request over loopback TCP with the API key, from this process (the test forks
// it as nobody); the status, 0 on failure.
int TcpStatus(int port, const std::string& method, const std::string& path, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 0;
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nAuthorization: Bearer " +
                          HttpDaemon::kApiKey + "\r\nContent-Type: application/json\r\nConnection: close\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (!reply.starts_with("HTTP/1.1 ") || reply.size() < 12) return 0;
  // 403 must say who may.
  if (reply.substr(9, 3) == "403" && reply.find("admin_uids/admin_gids") == std::string::npos) return 1;
  return std::stoi(reply.substr(9, 3));
}

TEST_F(ModelAdmin, ANonAdminUidIsRefusedEveryManagementCall) {
  Add(models(), "alpha");
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const int port = d->port();
  const std::string url = server_.Url("/files/pulled.gguf");
  const std::string digest = "sha256:" + fetch::Sha256Hex("x");
  const std::vector<std::array<std::string, 3>> calls = {
      {"POST", "/api/pull", R"({"model":")" + url + R"("})"},
      {"POST", "/api/create", R"({"model":"evil","from":"alpha"})"},
      {"POST", "/api/copy", R"({"source":"alpha","destination":"evil"})"},
      {"DELETE", "/api/delete", R"({"model":"alpha"})"},
      {"HEAD", "/api/blobs/" + digest, ""},
      {"POST", "/api/blobs/" + digest, "x"},
  };
  for (const auto& [method, path, body] : calls) {
    const int rc = RunAsNobody([&] { return TcpStatus(port, method, path, body) == 403 ? 0 : 1; });
    EXPECT_EQ(rc, 0) << method << " " << path << " from nobody is not a 403 that says who may";
  }
  EXPECT_TRUE(server_.RequestsFor("/files/pulled.gguf").empty()) << "nothing was fetched";
  EXPECT_TRUE(fs::exists(models() + "/alpha.gguf"));
  EXPECT_FALSE(Has(Tags(*d), "evil"));
  // The same calls as root pass the check (a copy, here).
  EXPECT_EQ(TcpStatus(port, "POST", "/api/copy", R"({"source":"alpha","destination":"rootcopy"})"), 200);
}

TEST_F(ModelAdmin, AdminUidsLetAnotherUidManage) {
  Add(models(), "alpha");
  auto d = Start({"--admin-uid", "65534"});
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const int port = d->port();
  const int rc = RunAsNobody([&] {
    return TcpStatus(port, "DELETE", "/api/delete", R"({"model":"no-such"})") == 404 ? 0 : 1;
  });
  EXPECT_EQ(rc, 0) << "nobody in admin_uids reaches the model check";
}

std::string RunCommand(const std::string& cmd, int* exit_code) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  *exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

// The native requests, through the C++ client (nobody) and llmctl (root, piped: plain lines).
TEST_F(ModelAdmin, NativeRequestsForAdminsOnlyAndLlmctlPullCpRmLsPs) {
  Add(models(), "alpha");
  auto d = Start({"--allow-uid", "0,65534"});
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  const std::string socket = d->process().socket();
  ::chmod(socket.c_str(), 0666);
  const std::string url = server_.Url("/files/pulled.gguf");
  const int rc = RunAsNobody([&] {
    LlmClient c(socket);
    auto denied = [](const std::optional<ClientError>& e) {
      return e && e->kind == ClientError::Kind::kServerError &&
             e->server_code == static_cast<uint32_t>(proto::ErrorCode::kPermissionDenied) &&
             e->message.find("admin_uids/admin_gids") != std::string::npos;
    };
    if (!denied(c.PullModel(url, nullptr))) return 1;
    if (!denied(c.CopyModel("alpha", "evil"))) return 2;
    if (!denied(c.DeleteModel("alpha"))) return 3;
    auto running = c.RunningModels();  // a listing: any allowed peer
    return running.has_value() && *running == std::vector<std::string>{"tiny-q8_0"} ? 0 : 4;
  });
  EXPECT_EQ(rc, 0) << "nobody's native management requests are PermissionDenied, saying who may";
  EXPECT_TRUE(server_.RequestsFor("/files/pulled.gguf").empty());

  const std::string ctl = std::string(LLMCTL_BINARY) + " --socket " + socket;
  int code = -1;
  const std::string pulled = RunCommand(ctl + " pull " + url + " | cat", &code);
  EXPECT_EQ(code, 0) << pulled;
  EXPECT_NE(pulled.find("pulling manifest: 0 bytes\n"), std::string::npos) << pulled;
  EXPECT_NE(pulled.find("pulling pulled.gguf: " + std::to_string(tiny_.size()) + " of " + std::to_string(tiny_.size()) +
                        " bytes (100%)\n"),
            std::string::npos)
      << pulled;
  EXPECT_NE(pulled.find("success: model pulled\n"), std::string::npos) << pulled;
  EXPECT_EQ(pulled.find('\r'), std::string::npos) << "no bar when piped";
  EXPECT_NE(RunCommand(ctl + " ls", &code).find("pulled\n"), std::string::npos);
  EXPECT_EQ(RunCommand(ctl + " cp pulled pulled2", &code), "copied pulled to pulled2\n");
  EXPECT_TRUE(Has(Tags(*d), "pulled2"));
  EXPECT_EQ(RunCommand(ctl + " rm pulled2", &code), "deleted pulled2\n");
  EXPECT_FALSE(Has(Tags(*d), "pulled2"));
  EXPECT_EQ(RunCommand(ctl + " ps", &code), "tiny-q8_0\n");
  const std::string refused = RunCommand(ctl + " rm ../x 2>&1", &code);
  EXPECT_EQ(code, 1) << refused;
  EXPECT_NE(refused.find(".."), std::string::npos) << refused;
}

TEST_F(ModelAdmin, TraversalNamesAndSymlinksOutOfTheDirectoryAreRefused) {
  Add(models(), "alpha");
  Add(outside(), "secret");
  fs::create_symlink(outside() + "/secret.gguf", models() + "/evil.gguf");
  fs::create_directories(outside() + "/ns");
  fs::create_directory_symlink(outside() + "/ns", models() + "/linked");
  auto d = Start();
  ASSERT_TRUE(d->process().ready()) << d->process().log();
  for (const std::string name : {"../x", "/etc/passwd", "a/../../b", "a/b/c", "..", "x/"}) {
    const std::string n = json(name).dump();
    EXPECT_EQ(d->Unix("POST", "/api/create", R"({"model":)" + n + R"(,"from":"alpha"})").status, 400) << name;
    EXPECT_EQ(d->Unix("POST", "/api/copy", R"({"source":"alpha","destination":)" + n + "}").status, 400) << name;
    EXPECT_EQ(d->Unix("POST", "/api/copy", R"({"source":)" + n + R"(,"destination":"y"})").status, 400) << name;
    EXPECT_EQ(d->Unix("DELETE", "/api/delete", R"({"model":)" + n + "}").status, 400) << name;
  }
  // A model whose link leads out of models_dir is neither copied nor built on.
  HttpReply r = d->Unix("POST", "/api/copy", R"({"source":"evil","destination":"stolen"})");
  EXPECT_EQ(r.status, 400) << r.body;
  r = d->Unix("POST", "/api/create", R"({"model":"stolen","from":"evil"})");
  EXPECT_EQ(r.status, 400) << r.body;
  // A namespace folder that is a link out of models_dir is never written through.
  r = d->Unix("POST", "/api/create", R"({"model":"linked/m","from":"alpha"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("symlink"), std::string::npos) << r.body;
  r = d->Unix("POST", "/api/copy", R"({"source":"alpha","destination":"linked/m"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_TRUE(fs::is_empty(outside() + "/ns")) << "nothing was written outside models_dir";
  EXPECT_FALSE(fs::exists(models() + "/stolen.gguf") || fs::exists(models() + "/stolen.modelfile"));
  // Deleting the link removes the link, never what it names.
  EXPECT_EQ(d->Unix("DELETE", "/api/delete", R"({"model":"evil"})").status, 200);
  EXPECT_FALSE(fs::is_symlink(models() + "/evil.gguf"));
  EXPECT_TRUE(fs::exists(outside() + "/secret.gguf"));
}

}  // namespace
}  // namespace llmd::testing
