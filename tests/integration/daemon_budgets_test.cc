// Per-UID token budgets (class_token_budgets) and per-client visibility on the real daemon,
// with two real peer UIDs: the test process (root) and a child that drops to nobody (65534).
// The budget is one token a minute, so once a request has spent it the refusals last for
// tens of minutes: what is asserted is the replies and the counts, never a time. Skipped
// unless root (a second UID needs it).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

#include "tests/support/daemon_harness.h"
#include "tests/support/http_harness.h"
#include "tests/support/nobody_child.h"

namespace llmd::testing {
namespace {

proto::Request Stream(std::string prompt) { return GenerateRequest(std::move(prompt), 8, /*stream=*/true); }

// Reads a stream to its end: its Done, else the Error (or nothing).
std::optional<proto::Response> Final(RawConn& c) {
  while (auto r = c.Receive()) {
    if (r->type != proto::Response::Type::kToken) return r;
  }
  return std::nullopt;
}

// The first number matched by `pattern`'s group in `text`; -1 if none.
long NumberIn(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? std::stol(m[1]) : -1;
}

// As nobody, whose background budget is one token a minute: one request spends it, then the
// native socket says Busy with a retry-after and HTTP 429 with Retry-After, no later than it.
// `scratch` is where nobody may write curl's files.
int SpendThenBeRefused(const DaemonProcess& d, const std::string& scratch) {
  const std::string& socket = d.socket();
  RawConn first(socket);
  if (!first.Send(Stream("spend my budget"))) return 2;
  auto done = Final(first);
  if (!done || done->type != proto::Response::Type::kDone) return 3;

  RawConn second(socket);
  if (!second.Send(Stream("and once more"))) return 4;
  auto refused = Final(second);
  if (!refused || refused->type != proto::Response::Type::kError || refused->code != proto::ErrorCode::kBusy) return 5;
  const long native_s = NumberIn(refused->text, "retry after ([0-9]+) s");
  if (native_s <= 0 || refused->text.find("background token budget of uid 65534") == std::string::npos) return 6;

  const HttpReply http =
      Curl(scratch, "--unix-socket " + d.dir() + "/http.sock -X POST 'http://localhost/v1/chat/completions'",
           R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4})");
  if (http.status != 429) return 7;
  const long http_s = NumberIn(http.headers, "Retry-After: ([0-9]+)");
  if (http_s <= 0 || http_s > native_s) return 8;  // the bucket only refills between the two
  if (http.body.find("\"token_budget_exhausted\"") == std::string::npos) return 9;
  return 0;
}

// `llmctl stats --by-client`, as the test process runs it.
std::string ByClient(const std::string& socket) {
  std::string out;
  FILE* p = ::popen((std::string(LLMCTL_BINARY) + " --socket " + socket + " stats --by-client").c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  return out;
}

TEST(DaemonBudgets, ASpentBudgetIsRefusedWithWhenToRetryWhileAnotherUidIsServed) {
  SKIP_UNLESS_ROOT();
  DaemonProcess d({"--allow-uid", "0,65534", "--request-class", "uid:65534=background,uid:0=background",
                   "--class-token-budget", "background=1"});
  ASSERT_TRUE(d.ready()) << d.log();
  ::chmod(d.socket().c_str(), 0666);
  ::chmod((d.dir() + "/http.sock").c_str(), 0666);
  // Somewhere nobody may write curl's files.
  const std::string scratch = d.dir() + "/nobody";
  ASSERT_EQ(::mkdir(scratch.c_str(), 0700), 0);
  ASSERT_EQ(::chown(scratch.c_str(), kNobody, kNobody), 0);

  NobodyChild nobody([&](int, int) { return SpendThenBeRefused(d, scratch); });
  EXPECT_EQ(nobody.Wait(), 0) << d.log();

  // Root's background bucket is its own, and full.
  RawConn root(d.socket());
  ASSERT_TRUE(root.Send(Stream("my own budget")));
  auto done = Final(root);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->type, proto::Response::Type::kDone) << done->text;

  const HttpReply page = Curl(d.dir(), "--unix-socket " + d.dir() + "/http.sock 'http://localhost/metrics'");
  const std::string bg = "uid=\"65534\",class=\"background\"";
  EXPECT_NE(page.body.find("llmd_client_requests_total{" + bg + "} 3\n"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("llmd_client_refusals_total{" + bg + ",reason=\"budget\"} 2\n"), std::string::npos);
  EXPECT_NE(page.body.find("llmd_client_queue_wait_seconds_count{" + bg + "} 1\n"), std::string::npos);
  EXPECT_NE(page.body.find("llmd_client_requests_total{uid=\"0\",class=\"background\"} 1\n"), std::string::npos);
  EXPECT_NE(page.body.find("llmd_client_refusals_total{uid=\"0\",class=\"background\",reason=\"budget\"} 0\n"),
            std::string::npos);

  // The native Stats reply carries the same rows, and llmctl shows them.
  RawConn stats(d.socket());
  proto::Request ask;
  ask.type = proto::Request::Type::kStats;
  ASSERT_TRUE(stats.Send(ask));
  auto reply = stats.Receive();
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->type, proto::Response::Type::kServerStats);
  const auto& clients = reply->server_stats.clients;
  ASSERT_EQ(clients.size(), 2u);
  EXPECT_EQ(clients[0].uid, "0");
  EXPECT_EQ(clients[1].uid, "65534");
  EXPECT_EQ(clients[1].request_class, 2);
  EXPECT_EQ(clients[1].requests, 3u);
  EXPECT_EQ(clients[1].refused_budget, 2u);
  EXPECT_GT(clients[1].generated_tokens, 0u);
  const std::string table = ByClient(d.socket());
  EXPECT_TRUE(std::regex_search(table, std::regex("\n65534 +background +3 +2 +2 "))) << table;
}

}  // namespace
}  // namespace llmd::testing
