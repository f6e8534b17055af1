// Models on demand, on the real daemon: the models in models_dir are listed loaded or not, a
// request naming one loads it on the loader thread while the loaded models keep serving, the
// memory budget unloads the least recently used idle model, keep_alive 0 unloads after the
// request, and models added to or removed from the directory are listed or withdrawn; a
// manifest's SYSTEM, num_ctx and TEMPLATE take effect; /api/show says the context a model not
// yet loaded will get; /metrics counts the loaded models against the budget.
// Every wait is for a state (a log line, a listing), bounded by the liveness limit.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A models directory holding copies of the tiny model (a link would lead out of it, which the
// catalog refuses). Each model is written under a '.' name and renamed into place, as a writer
// should, so the watcher never sees half a file.
class ModelsDir {
 public:
  ModelsDir() : dir_(MakeTempDir() + "/models") { fs::create_directories(dir_); }
  ~ModelsDir() { fs::remove_all(fs::path(dir_).parent_path()); }
  void Add(const std::string& name) {
    const std::string tmp = dir_ + "/." + name + ".gguf.part";
    fs::copy_file(TinyModelPath(), tmp, fs::copy_options::overwrite_existing);
    fs::rename(tmp, dir_ + "/" + name + ".gguf");
  }
  void Remove(const std::string& name) { fs::remove(dir_ + "/" + name + ".gguf"); }
  // A manifest, `name`.modelfile, written whole before it appears.
  void Manifest(const std::string& name, const std::string& text) {
    const std::string tmp = dir_ + "/." + name + ".modelfile.part";
    std::ofstream(tmp) << text;
    fs::rename(tmp, dir_ + "/" + name + ".modelfile");
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

json Body(const HttpReply& r) {
  json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json::object() : j;
}

std::vector<std::string> Names(const json& list, const char* key = "name") {
  std::vector<std::string> names;
  if (!list.is_array()) return names;
  for (const auto& m : list) names.push_back(m.value(key, ""));
  return names;
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class Models {
 public:
  explicit Models(HttpDaemon& d) : d_(d) {}
  std::vector<std::string> Ps() { return Names(Body(d_.Unix("GET", "/api/ps"))["models"]); }
  std::vector<std::string> Tags() { return Names(Body(d_.Unix("GET", "/api/tags"))["models"]); }
  std::vector<std::string> OpenAi() { return Names(Body(d_.Unix("GET", "/v1/models"))["data"], "id"); }
  // A short generation on `model` (Ollama's /api/generate), `extra` JSON fields added.
  HttpReply Generate(const std::string& model, const std::string& extra = "") {
    return d_.Unix("POST", "/api/generate",
                   R"({"model":")" + model + R"(","prompt":"Hello","stream":false,"options":{"num_predict":4})" + extra + "}");
  }

 private:
  HttpDaemon& d_;
};

// The prompt tokens of one greedy token, as usage counts them (cached ones included): a chat
// (/v1/chat/completions) of `messages`, or a raw completion (/v1/completions) of `prompt`.
int PromptTokens(HttpDaemon& d, const std::string& model, const json& messages) {
  const json body = {{"model", model}, {"messages", messages}, {"max_tokens", 1}, {"temperature", 0}};
  const HttpReply r = d.Unix("POST", "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return Body(r)["usage"].value("prompt_tokens", -1);
}
int RawPromptTokens(HttpDaemon& d, const std::string& model, const std::string& prompt) {
  const json body = {{"model", model}, {"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}};
  const HttpReply r = d.Unix("POST", "/v1/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return Body(r)["usage"].value("prompt_tokens", -1);
}

// One sample of /metrics (`series` with its labels, as the page writes it); -1 if absent.
long Metric(HttpDaemon& d, const std::string& series) {
  const HttpReply page = d.Unix("GET", "/metrics");
  const size_t at = page.body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stol(page.body.substr(at + series.size() + 2));
}

// The first number after `key=` in the line of `event` that holds `needle`; -1 if none.
long LogNumber(const std::string& log, const std::string& event, const std::string& needle, const std::string& key) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(event) == std::string::npos || line.find(needle) == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(line, m, std::regex(key + "=([0-9]+)"))) return std::stol(m[1]);
  }
  return -1;
}

TEST(ModelsOnDemand, ListedUnloadedThenLoadedByNameWhileTheDefaultStreams) {
  ModelsDir dir;
  dir.Add("alpha");
  dir.Add("beta");
  HttpDaemon d({"--models-dir", dir.path()});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  Models m(d);
  // Listed, loaded or not; the configured model first.
  const auto tags = m.Tags();
  ASSERT_EQ(tags.size(), 3u) << d.process().log();
  EXPECT_EQ(tags[0], "tiny-q8_0");
  EXPECT_TRUE(Has(tags, "alpha") && Has(tags, "beta"));
  EXPECT_EQ(m.OpenAi(), tags);
  LlmClient native(d.process().socket(), std::chrono::seconds(60));
  auto listed = native.Models();
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(*listed, tags) << "the native Models reply lists them too";
  EXPECT_EQ(m.Ps(), std::vector<std::string>{"tiny-q8_0"}) << "only the default is loaded";

  // The default model streams; once its first piece has come, alpha is asked for.
  std::promise<void> first_piece;
  std::atomic<bool> signalled{false};
  auto stream = std::async(std::launch::async, [&] {
    GenerateOptions o;
    o.max_tokens = 200;
    o.temperature = 0;
    return native.GenerateStream("Once upon a time", o, [&](std::string_view) {
      if (!signalled.exchange(true)) first_piece.set_value();
      return true;
    });
  });
  ASSERT_EQ(first_piece.get_future().wait_for(kLiveness), std::future_status::ready);
  // Three requests for one unloaded model at once: one load.
  std::vector<std::future<HttpReply>> alpha;
  for (int i = 0; i < 3; ++i) alpha.push_back(std::async(std::launch::async, [&] { return m.Generate("alpha"); }));
  for (auto& r : alpha) {
    HttpReply reply = r.get();
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(Body(reply).value("model", ""), "alpha");
    EXPECT_TRUE(Body(reply).value("done", false));
  }
  auto streamed = stream.get();
  ASSERT_TRUE(streamed.has_value()) << streamed.error().message;
  EXPECT_GT(streamed->tokens_generated, 0u);
  EXPECT_NE(streamed->finish_reason, "cancelled");
  EXPECT_EQ(d.process().CountLog("model_loading_on_demand name=alpha"), 1u) << d.process().log();
  EXPECT_EQ(d.process().CountLog("model_loaded_on_demand name=alpha"), 1u);
  const auto ps = m.Ps();
  EXPECT_TRUE(Has(ps, "alpha") && Has(ps, "tiny-q8_0")) << "alpha stays loaded (models_keep_alive 5m)";
  EXPECT_FALSE(Has(ps, "beta"));
  // A ps entry says when it goes: in the future, not "never".
  // The reply is held by name: a range-for over a temporary's member would read freed memory.
  const json ps_reply = Body(d.Unix("GET", "/api/ps"));
  for (const auto& e : ps_reply["models"]) {
    if (e["name"] == "alpha") {
      EXPECT_NE(e["expires_at"], "9999-12-31T23:59:59Z");
    }
    if (e["name"] == "tiny-q8_0") {
      EXPECT_EQ(e["expires_at"], "9999-12-31T23:59:59Z") << "the default is pinned";
    }
  }
  // The native protocol loads by name too.
  GenerateOptions o;
  o.max_tokens = 2;
  o.model = "beta";
  auto beta = native.GenerateStream("Hi", o, nullptr);
  ASSERT_TRUE(beta.has_value()) << beta.error().message;
  EXPECT_TRUE(Has(m.Ps(), "beta"));
  // An unknown name is still refused as one.
  EXPECT_EQ(m.Generate("nope").status, 404);
}

TEST(ModelsOnDemand, TheBudgetUnloadsTheLeastRecentlyUsedIdleModel) {
  ModelsDir dir;
  dir.Add("alpha");
  dir.Add("beta");
  // What the default and one more take, measured by a daemon with room for everything.
  long base_mib = -1, model_mib = -1, estimate_mib = -1;
  {
    HttpDaemon probe({"--models-dir", dir.path(), "--memory-budget-mb", "1000000"});
    ASSERT_TRUE(probe.process().ready()) << probe.process().log();
    ASSERT_EQ(Models(probe).Generate("alpha").status, 200);
    const std::string log = probe.process().log();
    base_mib = LogNumber(log, "memory_planned", "", "memory_mib");
    model_mib = LogNumber(log, "model_loaded_on_demand", "name=alpha", "memory_mib");
    estimate_mib = LogNumber(log, "model_loading_on_demand", "name=alpha", "estimate_mib");
  }
  ASSERT_GE(base_mib, 0);
  ASSERT_GT(model_mib, 2) << "the test needs a model of a few MiB: raise --context";
  ASSERT_GE(estimate_mib, 0);
  // Room for the default and one model (each counted in bytes: +1 MiB each for the rounding).
  const long budget = base_mib + std::max(model_mib, estimate_mib) + 2;
  HttpDaemon d({"--models-dir", dir.path(), "--memory-budget-mb", std::to_string(budget)});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  Models m(d);
  ASSERT_EQ(m.Generate("alpha").status, 200);
  EXPECT_EQ(m.Ps(), (std::vector<std::string>{"tiny-q8_0", "alpha"}));
  auto beta = m.Generate("beta");
  ASSERT_EQ(beta.status, 200) << beta.body << d.process().log();
  EXPECT_EQ(m.Ps(), (std::vector<std::string>{"tiny-q8_0", "beta"})) << "alpha made room";
  EXPECT_EQ(d.process().CountLog("model_unloading name=alpha why=\"memory budget\""), 1u) << d.process().log();
  // alpha again: beta, now the least recently used, goes; the default never does.
  ASSERT_EQ(m.Generate("alpha").status, 200);
  EXPECT_EQ(m.Ps(), (std::vector<std::string>{"tiny-q8_0", "alpha"}));
  // A model kept by its request's keep_alive is not evicted: the next one is refused, with
  // the numbers, and nothing is unloaded.
  ASSERT_EQ(m.Generate("alpha", R"(,"keep_alive":-1)").status, 200);
  auto refused = m.Generate("beta");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(Body(refused).value("error", "").find("memory budget"), std::string::npos) << refused.body;
  EXPECT_NE(Body(refused).value("error", "").find("needs"), std::string::npos) << refused.body;
  EXPECT_EQ(m.Ps(), (std::vector<std::string>{"tiny-q8_0", "alpha"}));
}

// Also, under the automatic context: /api/show of a model not loaded says the context it will
// load with, and /metrics counts the loads and unloads against the budget.
TEST(ModelsOnDemand, KeepAliveZeroUnloadsAfterTheRequest) {
  ModelsDir dir;
  dir.Add("alpha");
  HttpDaemon d({"--models-dir", dir.path(), "--context", "0"});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  Models m(d);
  const json show = Body(d.Unix("POST", "/api/show", R"({"model":"alpha"})"));
  const int context = show["model_info"].value("qwen3.context_length", 0);
  EXPECT_GT(context, 0) << show.dump();
  EXPECT_NE(show.value("parameters", "").find("num_ctx                        " + std::to_string(context) + "\n"),
            std::string::npos)
      << show.dump();
  EXPECT_EQ(Metric(d, "llmd_models_available"), 2);
  EXPECT_EQ(Metric(d, "llmd_models_loaded"), 1);
  EXPECT_EQ(Metric(d, "llmd_model_loads_total{outcome=\"loaded\"}"), 1) << "the default, at startup";
  const long used_before = Metric(d, "llmd_memory_budget_used_bytes");
  EXPECT_GT(Metric(d, "llmd_memory_budget_bytes"), used_before);

  ASSERT_EQ(m.Generate("alpha", R"(,"keep_alive":0)").status, 200);
  EXPECT_TRUE(WaitFor([&] { return !Has(m.Ps(), "alpha"); })) << d.process().log();
  EXPECT_EQ(d.process().CountLog("model_unloading name=alpha why=keep_alive"), 1u);
  EXPECT_TRUE(Has(m.Tags(), "alpha")) << "still available";
  EXPECT_EQ(Metric(d, "llmd_model_loads_total{outcome=\"loaded\"}"), 2);
  EXPECT_EQ(Metric(d, "llmd_model_unloads_total{reason=\"keep_alive\"}"), 1);
  EXPECT_EQ(Metric(d, "llmd_models_loaded"), 1);
  EXPECT_EQ(Metric(d, "llmd_model_loaded_bytes{model=\"alpha\"}"), -1) << "no series for a model not loaded";
  EXPECT_EQ(Metric(d, "llmd_memory_budget_used_bytes"), used_before);
  // The pinned default stays whatever keep_alive says (its working memory is released).
  ASSERT_EQ(m.Generate("tiny-q8_0", R"(,"keep_alive":0)").status, 200);
  EXPECT_TRUE(Has(m.Ps(), "tiny-q8_0"));
  // Ollama's load request (no prompt) loads it; with keep_alive 0 it unloads it.
  ASSERT_EQ(d.Unix("POST", "/api/generate", R"({"model":"alpha"})").status, 200);
  EXPECT_TRUE(Has(m.Ps(), "alpha"));
  const long alpha_bytes = Metric(d, "llmd_model_loaded_bytes{model=\"alpha\"}");
  EXPECT_GT(alpha_bytes, 0);
  EXPECT_EQ(Metric(d, "llmd_memory_budget_used_bytes"), used_before + alpha_bytes);
  EXPECT_EQ(Metric(d, "llmd_models_loaded"), 2);
  const json ps = Body(d.Unix("GET", "/api/ps"));
  int loaded_context = 0;
  for (const auto& e : ps["models"]) {
    if (e["name"] == "alpha") loaded_context = e.value("context_length", 0);
  }
  EXPECT_EQ(loaded_context, context) << "what show said before the load: " << ps.dump();
  ASSERT_EQ(d.Unix("POST", "/api/generate", R"({"model":"alpha","keep_alive":0})").status, 200);
  EXPECT_TRUE(WaitFor([&] { return !Has(m.Ps(), "alpha"); })) << d.process().log();
}

TEST(ModelsOnDemand, ModelsAddedAndRemovedWhileServingAreListedAndWithdrawn) {
  ModelsDir dir;
  dir.Add("alpha");
  HttpDaemon d({"--models-dir", dir.path()});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  Models m(d);
  EXPECT_FALSE(Has(m.Tags(), "gamma"));
  dir.Add("gamma");
  EXPECT_TRUE(WaitFor([&] { return Has(m.Tags(), "gamma"); })) << d.process().log();
  EXPECT_TRUE(Has(m.OpenAi(), "gamma"));
  ASSERT_EQ(m.Generate("gamma").status, 200);
  EXPECT_TRUE(Has(m.Ps(), "gamma"));
  // Removed: withdrawn from every listing and unloaded (nothing holds it); the file the
  // weights came from is gone, so it cannot be asked for any more.
  dir.Remove("gamma");
  dir.Remove("alpha");
  EXPECT_TRUE(WaitFor([&] { return !Has(m.Tags(), "gamma") && !Has(m.Tags(), "alpha"); })) << d.process().log();
  EXPECT_TRUE(WaitFor([&] { return !Has(m.Ps(), "gamma"); })) << d.process().log();
  EXPECT_FALSE(Has(m.OpenAi(), "gamma"));
  EXPECT_EQ(d.process().CountLog("model_unloading name=gamma why=\"removed from disk\""), 1u) << d.process().log();
  EXPECT_EQ(m.Generate("gamma").status, 404);
  // The configured model is not the directory's to withdraw.
  EXPECT_EQ(m.Tags(), std::vector<std::string>{"tiny-q8_0"});
  EXPECT_EQ(m.Generate("tiny-q8_0").status, 200);
}

// A manifest's settings, each seen in what the model does: SYSTEM is the prompt's system
// message, num_ctx each request's context (a request's own wins; more than an explicit
// max_context_len is refused when the model would load), a Jinja TEMPLATE renders the prompt;
// a Go TEMPLATE leaves the model unserved. Token counts, not texts: the weights are random.
TEST(ModelsOnDemand, AManifestsSystemNumCtxAndTemplateTakeEffect) {
  ModelsDir dir;
  dir.Add("alpha");
  const std::string pirate_system = "You are a pirate who answers in rhymes.";
  dir.Manifest("pirate", "FROM alpha\nSYSTEM " + pirate_system + "\n");
  dir.Manifest("short", "FROM alpha\nPARAMETER num_ctx 16\n");
  dir.Manifest("wide", "FROM alpha\nPARAMETER num_ctx 4096\n");  // the harness loads --context 1024
  dir.Manifest("bare", "FROM alpha.gguf\nTEMPLATE {% for m in messages %}{{ m.content }}{% endfor %}\n");
  dir.Manifest("gotpl", "FROM alpha\nTEMPLATE {{ .Prompt }}\n");
  HttpDaemon d({"--models-dir", dir.path()});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  Models m(d);
  const auto tags = m.Tags();
  EXPECT_TRUE(Has(tags, "pirate") && Has(tags, "short") && Has(tags, "bare")) << d.process().log();
  EXPECT_FALSE(Has(tags, "gotpl")) << "a Go template cannot be rendered: the model is not served";
  EXPECT_GE(d.process().CountLog("model_unusable name=gotpl"), 1u) << "and the log says why";
  EXPECT_NE(d.process().log().find("TEMPLATE is a Go template"), std::string::npos);

  // SYSTEM: the pirate's prompt is alpha's with that system message, token for token; a
  // request's own system message wins over it.
  const json hello = {{"role", "user"}, {"content", "Hello there"}};
  const int pirate = PromptTokens(d, "pirate", json::array({hello}));
  EXPECT_EQ(pirate, PromptTokens(d, "alpha", json::array({{{"role", "system"}, {"content", pirate_system}}, hello})));
  EXPECT_NE(pirate, PromptTokens(d, "alpha", json::array({hello})))
      << "alpha has none: the config's system_prompt is the native socket's";
  const json own = json::array({{{"role", "system"}, {"content", "Be brief."}}, hello});
  EXPECT_EQ(PromptTokens(d, "pirate", own), PromptTokens(d, "alpha", own));

  // TEMPLATE: the messages' text alone, as the manifest's Jinja renders them.
  EXPECT_EQ(PromptTokens(d, "bare", own), RawPromptTokens(d, "alpha", "Be brief.") + RawPromptTokens(d, "alpha", "Hello there"));
  EXPECT_EQ(d.process().CountLog("template=manifest"), 1u) << d.process().log();

  // num_ctx: a prompt of 16 tokens or more does not fit short's requests, on every API.
  const std::string long_text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
  const json chat = {{"model", "short"}, {"messages", {{{"role", "user"}, {"content", long_text}}}}, {"stream", false}};
  const HttpReply refused = d.Unix("POST", "/api/chat", chat.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("context of 16"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("its model's manifest's"), std::string::npos) << refused.body;
  json openai = {{"model", "short"}, {"messages", chat["messages"]}, {"max_tokens", 1}};
  EXPECT_EQ(d.Unix("POST", "/v1/chat/completions", openai.dump()).status, 400);
  json asks_more = chat;
  asks_more["options"] = {{"num_ctx", 1024}, {"num_predict", 2}};
  const HttpReply fits = d.Unix("POST", "/api/chat", asks_more.dump());
  EXPECT_EQ(fits.status, 200) << "the request's own num_ctx wins: " << fits.body;
  const std::string shown = Body(d.Unix("POST", "/api/show", R"({"model":"short"})")).value("parameters", "");
  EXPECT_NE(shown.find("num_ctx                        16\n"), std::string::npos) << shown;
  const HttpReply wide = m.Generate("wide");
  EXPECT_EQ(wide.status, 400) << wide.body;
  EXPECT_NE(wide.body.find("num_ctx is 4096, more than max_context_len (1024"), std::string::npos) << wide.body;
}

}  // namespace
}  // namespace llmd::testing
