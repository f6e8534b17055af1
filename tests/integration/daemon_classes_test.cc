// Request classes on the real daemon, with two real peer UIDs: the test process (root) and
// children that drop to nobody (65534). The config gives each UID its class; the counts in
// /metrics and the replies say what happened, never the time it took. Skipped unless root
// (a second UID needs it).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/daemon_harness.h"
#include "tests/support/http_harness.h"
#include "tests/support/nobody_child.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

// A value of /metrics: `name{model="...",<labels>} value`, summed over models; -1 if absent.
long Metric(DaemonProcess& d, const std::string& name, const std::string& labels = "") {
  HttpReply page = Curl(d.dir(), "--unix-socket " + d.dir() + "/http.sock 'http://localhost/metrics'");
  const std::regex line(name + "\\{model=\"[^\"]*\"" + (labels.empty() ? "" : "," + labels) + "\\} ([0-9]+)");
  long total = -1;
  for (std::sregex_iterator it(page.body.begin(), page.body.end(), line), end; it != end; ++it) {
    total = std::max(total, 0L) + std::stol((*it)[1]);
  }
  return total;
}

proto::Request Stream(std::string prompt, uint32_t max_tokens, std::optional<uint8_t> request_class = std::nullopt) {
  proto::Request r = GenerateRequest(std::move(prompt), max_tokens, /*stream=*/true);
  r.params.request_class = request_class;
  return r;
}

// Reads a stream to its end: its Done, else the Error (or nothing).
std::optional<proto::Response> Final(RawConn& c) {
  while (auto r = c.Receive()) {
    if (r->type != proto::Response::Type::kToken) return r;
  }
  return std::nullopt;
}

TEST(DaemonClasses, AnInteractivePeerRunsAtOnceWhileBackgroundWorkFillsEverySlot) {
  SKIP_UNLESS_ROOT();
  DaemonProcess d({"--allow-uid", "0,65534", "--request-class", "uid:65534=background,uid:0=interactive",
                   "--parallel", "2", "--reserved-sequences", "1", "--max-new-tokens", "4096"});
  ASSERT_TRUE(d.ready()) << d.log();
  ::chmod(d.socket().c_str(), 0666);
  // Two background streams with no end but max_tokens (the grammar never lets one finish).
  auto background = [&](int signal_fd, int stop_fd) {
    RawConn c(d.socket());
    proto::Request r = Stream("background work: summarise the day", 4096);
    r.params.constraint = proto::Constraint{proto::Constraint::Kind::kGbnfGrammar, "root ::= \"ab \" root"};
    if (!c.Send(r)) return 2;
    auto first = c.Receive();
    if (!first || first->type != proto::Response::Type::kToken) return 3;
    return SignalAndHold(signal_fd, stop_fd);  // then hangs up: the daemon cancels the rest
  };
  NobodyChild first(background), second(background);
  ASSERT_TRUE(first.WaitForSignal());
  ASSERT_TRUE(second.WaitForSignal());

  RawConn voice(d.socket());
  ASSERT_TRUE(voice.Send(Stream("a person waits for this", 8)));
  auto done = Final(voice);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->type, proto::Response::Type::kDone) << done->text;

  EXPECT_EQ(Metric(d, "llmd_class_admitted_requests_total", "class=\"interactive\""), 1);
  EXPECT_EQ(Metric(d, "llmd_class_admitted_requests_total", "class=\"background\""), 2);
  // The width was full of background work: one of them sat out for the voice request.
  EXPECT_GE(Metric(d, "llmd_preemptions_total"), 1);
  EXPECT_EQ(first.Wait(), 0);
  EXPECT_EQ(second.Wait(), 0);
}

TEST(DaemonClasses, APeerNeverRisesAboveItsCeiling) {
  SKIP_UNLESS_ROOT();
  DaemonProcess d({"--allow-uid", "0,65534", "--request-class", "uid:65534=background"});
  ASSERT_TRUE(d.ready()) << d.log();
  ::chmod(d.socket().c_str(), 0666);
  NobodyChild climber([&](int signal_fd, int stop_fd) {
    RawConn c(d.socket());
    if (!c.Send(Stream("let me in first", 4, /*interactive=*/0))) return 2;
    auto end = Final(c);
    if (!end || end->type != proto::Response::Type::kDone) return 3;
    return SignalAndHold(signal_fd, stop_fd);
  });
  ASSERT_TRUE(climber.WaitForSignal());
  EXPECT_EQ(climber.Wait(), 0);
  // Root has no rule: normal, with normal as its ceiling.
  RawConn root(d.socket());
  ASSERT_TRUE(root.Send(Stream("me too", 4, /*interactive=*/0)));
  auto end = Final(root);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->type, proto::Response::Type::kDone);
  EXPECT_EQ(Metric(d, "llmd_class_admitted_requests_total", "class=\"interactive\""), 0);
  EXPECT_EQ(Metric(d, "llmd_class_admitted_requests_total", "class=\"background\""), 1);
  EXPECT_EQ(Metric(d, "llmd_class_admitted_requests_total", "class=\"normal\""), 1);
}

TEST(DaemonClasses, BackgroundConnectionsFillOnlyTheirOwnCap) {
  SKIP_UNLESS_ROOT();
  DaemonProcess d({"--allow-uid", "0,65534", "--request-class", "uid:65534=background", "--max-connections", "1",
                   "--admission-wait-ms", "200"});
  ASSERT_TRUE(d.ready()) << d.log();
  ::chmod(d.socket().c_str(), 0666);
  // One background connection, served and held open: the background cap of one is full.
  NobodyChild holder([&](int signal_fd, int stop_fd) {
    RawConn c(d.socket());
    if (!c.Send(Stream("holding my connection", 2))) return 2;
    auto end = Final(c);
    if (!end || end->type != proto::Response::Type::kDone) return 3;
    return SignalAndHold(signal_fd, stop_fd);
  });
  ASSERT_TRUE(holder.WaitForSignal());
  // Another background connection waits for the cap and is told Busy.
  NobodyChild refused([&](int signal_fd, int stop_fd) {
    RawConn c(d.socket());
    if (!c.Send(Stream("me as well", 2))) return 2;
    auto end = Final(c);
    if (!end || end->type != proto::Response::Type::kError || end->code != proto::ErrorCode::kBusy) return 3;
    if (end->text.find("background connections are in use") == std::string::npos) return 4;
    return SignalAndHold(signal_fd, stop_fd);
  });
  ASSERT_TRUE(refused.WaitForSignal());
  // A normal peer is served meanwhile: its class has its own cap.
  RawConn root(d.socket());
  ASSERT_TRUE(root.Send(Stream("a normal request", 2)));
  auto end = Final(root);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->type, proto::Response::Type::kDone) << end->text;
  EXPECT_EQ(refused.Wait(), 0);
  EXPECT_EQ(holder.Wait(), 0);
}

// GET /queue: a queued request's position and expected wait, to its own peer and to root;
// another UID sees nothing of it.
TEST(DaemonClasses, AQueuedRequestsPositionIsVisibleToItsPeerOnly) {
  SKIP_UNLESS_ROOT();
  DaemonProcess d({"--allow-uid", "0,65534", "--parallel", "1", "--reserved-sequences", "0", "--max-new-tokens", "4096"});
  ASSERT_TRUE(d.ready()) << d.log();
  ::chmod(d.socket().c_str(), 0666);
  ::chmod((d.dir() + "/http.sock").c_str(), 0666);
  const std::string queue_url = "--unix-socket " + d.dir() + "/http.sock 'http://localhost/queue'";
  // nobody holds the only slot with a stream that never ends by itself.
  NobodyChild holder([&](int signal_fd, int stop_fd) {
    RawConn c(d.socket());
    proto::Request r = Stream("holding the only slot", 4096);
    r.params.constraint = proto::Constraint{proto::Constraint::Kind::kGbnfGrammar, "root ::= \"ab \" root"};
    if (!c.Send(r)) return 2;
    auto first = c.Receive();
    if (!first || first->type != proto::Response::Type::kToken) return 3;
    return SignalAndHold(signal_fd, stop_fd);
  });
  ASSERT_TRUE(holder.WaitForSignal());
  // root's request waits for the slot.
  RawConn waiting(d.socket());
  ASSERT_TRUE(waiting.Send(Stream("waiting my turn", 2)));
  HttpReply page;
  ASSERT_TRUE(WaitFor([&] {
    page = Curl(d.dir(), queue_url);
    return page.body.find("\"position\":1") != std::string::npos;
  }, kLiveness)) << page.body;
  EXPECT_NE(page.body.find("\"uid\":0"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("\"class\":\"normal\""), std::string::npos) << page.body;
  // nobody's own view: root's request is not its to see.
  NobodyChild other([&](int signal_fd, int stop_fd) {
    const std::string scratch = "/tmp/llmd-queue-" + std::to_string(::getpid());
    ::mkdir(scratch.c_str(), 0700);
    HttpReply theirs = Curl(scratch, queue_url);
    if (theirs.status != 200) return 2;
    if (theirs.body != "{\"queued\":[]}") return 3;
    return SignalAndHold(signal_fd, stop_fd);
  });
  EXPECT_TRUE(other.WaitForSignal());
  EXPECT_EQ(other.Wait(), 0);
  EXPECT_EQ(holder.Wait(), 0);  // it hangs up: the slot frees and root's request runs
  auto end = Final(waiting);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->type, proto::Response::Type::kDone) << end->text;
}

}  // namespace
}  // namespace llmd::testing
