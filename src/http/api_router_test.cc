// ApiRouter over front ends the test registers and a ServerState it sets up: which front end
// gets a path, the shared checks and their order, every refusal in the shape of the API the
// path belongs to (the server's own errors too), the catch-all 500, the metrics label.
#include "http/api_router.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/clock.h"

namespace llmd::http {
namespace {

class TestState final : public sched::ServerState {
 public:
  TestState() : config_(std::make_shared<config::DaemonConfig>()), rate_limiter_(1000, RealClock::Get()) {}
  std::shared_ptr<const config::DaemonConfig> config() const override { return config_; }
  sched::ModelList models() const override { return models_; }
  bool ready() const override { return ready_; }
  bool stopping() const override { return false; }
  void RequestShutdown() override {}
  sched::RateLimiter& rate_limiter() override { return rate_limiter_; }
  sched::RequestCounters& requests() override { return requests_; }

  bool ready_ = true;
  std::string Counters() const {
    std::string out;
    requests_.Render(&out);
    return out;
  }

 private:
  std::shared_ptr<config::DaemonConfig> config_;
  sched::ModelList models_;
  sched::RateLimiter rate_limiter_;
  sched::RequestCounters requests_;
};

// A front end that claims `prefix`, writes errors as "NAME:MESSAGE" and answers 200 "NAME",
// or throws on /throw paths.
class TagFrontEnd final : public FrontEnd {
 public:
  TagFrontEnd(const char* name, std::string prefix) : name_(name), prefix_(std::move(prefix)) {}
  const char* name() const override { return name_; }
  bool Claims(std::string_view path) const override { return path.starts_with(prefix_); }
  std::string ErrorBody(const ApiError& e) const override { return std::string(name_) + ":" + e.message; }
  int Handle(const Request& req, Responder& out) override {
    if (req.path.ends_with("/throw")) throw std::runtime_error("boom");
    out.Send(200, "text/plain", name_);
    return 200;
  }

 private:
  const char* name_;
  const std::string prefix_;
};

class Recorder final : public Responder {
 public:
  bool Send(int status, std::string_view, std::string_view body, const Headers&) override {
    status_ = status;
    body_ = body;
    return true;
  }
  bool BeginStream(int, std::string_view, const Headers&) override { return false; }
  bool WriteChunk(std::string_view) override { return false; }
  bool EndStream() override { return false; }
  int fd() const override { return -1; }
  int status_ = 0;
  std::string body_;
};

class ApiRouterTest : public ::testing::Test {
 protected:
  ApiRouterTest() : router_(state_, Options()) {
    router_.Register(std::make_unique<TagFrontEnd>("default", "/v1/"));
    router_.Register(std::make_unique<TagFrontEnd>("special", "/v1/special"));
    router_.Register(std::make_unique<TagFrontEnd>("other", "/api/"));
  }
  static ApiOptions Options() {
    ApiOptions o;
    o.api_key = "0123456789abcdef";
    o.allowed_hosts = {"localhost:8080"};
    return o;
  }
  Recorder Get(const std::string& path, bool tcp = false, std::map<std::string, std::string> headers = {}) {
    Request req;
    req.method = "POST";
    req.path = path;
    req.peer.tcp = tcp;
    req.headers = std::move(headers);
    Recorder out;
    router_.Handle(req, out);
    return out;
  }
  TestState state_;
  ApiRouter router_;
};

TEST_F(ApiRouterTest, TheMostSpecificFrontEndGetsThePathTheDefaultTheRest) {
  EXPECT_EQ(Get("/v1/special/x").body_, "special");
  EXPECT_EQ(Get("/v1/chat").body_, "default");
  EXPECT_EQ(Get("/api/chat").body_, "other");
  const Recorder unknown = Get("/nowhere");
  EXPECT_EQ(unknown.status_, 404);
  EXPECT_EQ(unknown.body_, "default:no such endpoint: /nowhere");
}

TEST_F(ApiRouterTest, RefusalsComeInTheShapeOfThePathsApi) {
  const Recorder no_key = Get("/api/chat", /*tcp=*/true, {{"host", "localhost:8080"}});
  EXPECT_EQ(no_key.status_, 401);
  EXPECT_TRUE(no_key.body_.starts_with("other:")) << no_key.body_;
  const Recorder bad_host = Get("/v1/special/x", true, {{"host", "evil.example:8080"}});
  EXPECT_EQ(bad_host.status_, 403);
  EXPECT_TRUE(bad_host.body_.starts_with("special:")) << bad_host.body_;
  const Recorder origin = Get("/v1/chat", true,
                              {{"host", "localhost:8080"}, {"origin", "http://evil.example"},
                               {"authorization", "Bearer 0123456789abcdef"}});
  EXPECT_EQ(origin.status_, 403);
  EXPECT_EQ(Get("/v1/chat", true, {{"host", "localhost:8080"}, {"authorization", "Bearer 0123456789abcdef"}}).status_,
            200);
  state_.ready_ = false;
  const Recorder loading = Get("/api/chat");
  EXPECT_EQ(loading.status_, 503);
  EXPECT_TRUE(loading.body_.starts_with("other:")) << loading.body_;
}

// With an API key, the key decides, whatever the UID; without one, a TCP peer needs a UID the
// kernel's socket table found and the allowlist allows. Host and Origin rules apply either way.
TEST_F(ApiRouterTest, TcpPeersNeedTheKeyOrElseAnAllowedUid) {
  Peer allowed{true, 1000, 1000, 0, /*identified=*/true, /*allowed=*/true};
  Peer other = allowed;
  other.uid = 65534;
  other.allowed = false;
  Peer unknown;
  unknown.tcp = true;
  const std::map<std::string, std::string> host = {{"host", "localhost:8080"}};
  const auto ask = [&](ApiRouter& router, const Peer& peer, const std::string& path,
                       std::map<std::string, std::string> headers) {
    Request req;
    req.method = path == "/health" ? "GET" : "POST";
    req.path = path;
    req.peer = peer;
    req.headers = std::move(headers);
    Recorder out;
    router.Handle(req, out);
    return out;
  };
  EXPECT_EQ(ask(router_, allowed, "/v1/chat", host).status_, 401) << "a key is set: an allowed UID still needs it";
  auto keyed = host;
  keyed["authorization"] = "Bearer 0123456789abcdef";
  EXPECT_EQ(ask(router_, unknown, "/v1/chat", keyed).status_, 200) << "the key admits whoever sends it";

  ApiOptions no_key;
  no_key.allowed_hosts = {"localhost:8080"};
  ApiRouter keyless(state_, no_key);
  keyless.Register(std::make_unique<TagFrontEnd>("default", "/v1/"));
  keyless.Register(std::make_unique<TagFrontEnd>("other", "/api/"));
  EXPECT_EQ(ask(keyless, allowed, "/v1/chat", host).status_, 200);
  const Recorder refused = ask(keyless, other, "/api/chat", host);
  EXPECT_EQ(refused.status_, 403);
  EXPECT_EQ(refused.body_, "other:uid 65534 may not use this API (allowed_uids, allowed_gids)");
  const Recorder unidentified = ask(keyless, unknown, "/v1/chat", host);
  EXPECT_EQ(unidentified.status_, 401);
  EXPECT_NE(unidentified.body_.find("not in the kernel's socket table"), std::string::npos) << unidentified.body_;
  EXPECT_EQ(ask(keyless, unknown, "/health", host).status_, 200) << "health needs no identity";
  EXPECT_EQ(ask(keyless, allowed, "/v1/chat", {{"host", "evil.example"}}).status_, 403) << "Host still checked";
}

TEST_F(ApiRouterTest, AnExceptionIsA500InTheApisShape) {
  const Recorder r = Get("/api/throw");
  EXPECT_EQ(r.status_, 500);
  EXPECT_EQ(r.body_, "other:internal error");
}

TEST_F(ApiRouterTest, TheServersOwnErrorsTakeThePathsShape) {
  const ApiError busy{503, "invalid_request_error", "busy", "too many connections; retry later", {}};
  EXPECT_EQ(router_.ErrorBody("/api/chat", busy), "other:too many connections; retry later");
  EXPECT_EQ(router_.ErrorBody("/v1/special", busy), "special:too many connections; retry later");
  EXPECT_EQ(router_.ErrorBody("", busy), "default:too many connections; retry later");
}

TEST_F(ApiRouterTest, EachFrontEndCountsUnderItsOwnName) {
  Get("/v1/special/a");
  Get("/api/b");
  Get("/api/throw");
  Get("/nowhere");  // no API's: not counted
  const std::string counters = state_.Counters();
  EXPECT_NE(counters.find("api=\"special\",outcome=\"ok\"} 1"), std::string::npos) << counters;
  EXPECT_NE(counters.find("api=\"other\",outcome=\"ok\"} 1"), std::string::npos) << counters;
  EXPECT_NE(counters.find("api=\"other\",outcome=\"error\"} 1"), std::string::npos) << counters;
  EXPECT_EQ(counters.find("api=\"default\""), std::string::npos) << counters;
}

}  // namespace
}  // namespace llmd::http
