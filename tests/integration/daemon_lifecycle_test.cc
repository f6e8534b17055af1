// Start, stop, reload: robustness-tests.md items 15, 18, 19, 42 at startup, and SIGHUP.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/systemd_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

using proto::ErrorCode;
using proto::Response;
namespace fs = std::filesystem;

TEST(DaemonLifecycle, SigtermStopsCleanlyAndRemovesTheSocket) {
  DaemonProcess d;
  ASSERT_TRUE(d.ready()) << d.log();
  EXPECT_NE(d.log().find("ready_ms="), std::string::npos);
  d.Signal(SIGTERM);
  EXPECT_EQ(d.WaitExit(), 0);
  EXPECT_FALSE(fs::exists(d.socket()));
  EXPECT_NE(d.log().find("llmd info stopped"), std::string::npos);
}

TEST(DaemonLifecycle, Item15_ShutdownDuringFourStreamsGivesEachAFinalFrame) {
  DaemonProcess d({"--max-new-tokens", "4096", "--temperature", "0"});
  ASSERT_TRUE(d.ready());
  std::vector<std::unique_ptr<RawConn>> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(std::make_unique<RawConn>(d.socket()));
    ASSERT_TRUE(streams.back()->Send(GenerateRequest("Write forever, part " + std::to_string(i), 4000, true)));
  }
  auto seed = std::make_unique<RawConn>(d.socket());  // a seed-era Generate as the fourth
  ASSERT_TRUE(seed->Send(GenerateRequest("Write forever", 4000)));
  // Wait until one of them is generating (the engine serves them in queue order).
  std::vector<pollfd> fds;
  for (auto& st : streams) fds.push_back({st->fd(), POLLIN, 0});
  ASSERT_GT(::poll(fds.data(), fds.size(), kLivenessMillis), 0) << "a stream is running";
  LlmClient admin(d.socket());
  EXPECT_FALSE(admin.Shutdown().has_value()) << "root may shut down";
  // Every request gets a final frame: its normal end if it finished before the shutdown
  // (random weights may end a reply early), else a "shutting down" error.
  int shut = 0;
  for (auto& s : streams) {
    std::optional<Response> last;
    while (auto r = s->Receive()) last = r;  // to the end of the stream
    ASSERT_TRUE(last.has_value()) << "every stream gets a final frame";
    if (last->type == Response::Type::kError) {
      EXPECT_EQ(last->code, ErrorCode::kShuttingDown);
      ++shut;
    } else {
      EXPECT_EQ(last->type, Response::Type::kDone);
    }
  }
  EXPECT_GE(shut, 1) << "at least the queued streams were still in flight";
  auto r = seed->Receive();
  ASSERT_TRUE(r.has_value());
  if (r->type == Response::Type::kError) {
    EXPECT_EQ(r->code, ErrorCode::kGenerationFailed) << "a seed client gets a seed code";
  } else {
    EXPECT_EQ(r->type, Response::Type::kGenerated);
  }
  EXPECT_EQ(d.WaitExit(), 0);
  EXPECT_FALSE(fs::exists(d.socket()));
}

TEST(DaemonLifecycle, Item18_StaleSocketAfterKill9AndSecondInstance) {
  DaemonProcess first;
  ASSERT_TRUE(first.ready());
  first.Signal(SIGKILL);
  first.WaitExit();
  ASSERT_TRUE(fs::exists(first.socket())) << "kill -9 leaves the node behind";
  DaemonProcess restarted;
  // Reuse the same socket path: start a daemon there by hand.
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);  // never hold ctest's output pipe open
    ::dup2(null, 2);
    ::execl(LLMD_BINARY, LLMD_BINARY, "--model", TinyModelPath().c_str(), "--socket", first.socket().c_str(), nullptr);
    ::_exit(127);
  }
  // A liveness bound only: a sanitizer build on a busy machine starts slowly.
  const bool up = WaitFor([&] { return LlmClient(first.socket()).HealthCheck().has_value(); });
  EXPECT_TRUE(up) << "started over the stale node";
  // A second instance on the same path refuses and leaves the live socket alone.
  std::string cmd = std::string(LLMD_BINARY) + " --model " + TinyModelPath() + " --socket " + first.socket() +
                    " 2>" + first.dir() + "/second.log";
  int rc = ::system(cmd.c_str());
  EXPECT_NE(WEXITSTATUS(rc), 0);
  EXPECT_NE(ReadAll(first.dir() + "/second.log").find("another llmd is already serving"), std::string::npos);
  EXPECT_TRUE(LlmClient(first.socket()).HealthCheck().has_value()) << "the live daemon still serves";
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

TEST(DaemonLifecycle, Item19_RefusesToReplaceSymlinksAndFiles) {
  std::string dir = MakeTempDir();
  std::string target = dir + "/precious";
  std::ofstream(target) << "keep me";
  std::string link = dir + "/llm.sock";
  fs::create_symlink(target, link);
  std::string cmd = std::string(LLMD_BINARY) + " --model " + TinyModelPath() + " --socket " + link + " 2>" + dir + "/log";
  int rc = ::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_NE(ReadAll(dir + "/log").find("is not a socket (a symlink)"), std::string::npos) << ReadAll(dir + "/log");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadAll(target), "keep me");
  fs::remove_all(dir);
}

TEST(DaemonLifecycle, Item42_BadModelFailsStartupWithAClearMessage) {
  std::string dir = MakeTempDir();
  std::ofstream(dir + "/model.gguf") << "this is not a model\n";
  std::string cmd = std::string(LLMD_BINARY) + " --model " + dir + "/model.gguf --socket " + dir + "/s.sock 2>" + dir + "/log";
  int rc = ::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_NE(ReadAll(dir + "/log").find("unsupported model format: a text file"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/s.sock"));
  cmd = std::string(LLMD_BINARY) + " --model " + TinyModelPath() + " --temperature 9 2>" + dir + "/log";
  rc = ::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(ReadAll(dir + "/log").find("temperature = 9 (from the command line, --temperature): must be in [0, 2]"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(DaemonLifecycle, SighupReloadsAndKeepsTheOldModelOnFailure) {
  std::string dir = MakeTempDir();
  std::string config = dir + "/llmd.toml";
  std::ofstream(config) << "model_path = \"" << TinyModelPath() << "\"\nmax_new_tokens = 3\ntemperature = 0.0\n";
  DaemonProcess d({"--config", config}, /*model=*/"");  // the model comes from the file
  ASSERT_TRUE(d.ready());
  LlmClient client(d.socket());
  auto before = client.Generate("Hello");
  ASSERT_TRUE(before.has_value());
  EXPECT_LE(before->tokens_generated, 3u);

  std::ofstream(config) << "model_path = \"" << TinyModelPath() << "\"\nmax_new_tokens = 7\ntemperature = 0.0\n";
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("llmd info reloaded")) << d.log();
  auto after = client.Generate("Hello");
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(after->tokens_generated, 3u) << "the new settings are in force";

  std::ofstream(config) << "model_path = \"" << dir << "/missing.gguf\"\n";
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload_failed")) << d.log();
  EXPECT_NE(d.log().find("keeping=\"the current model\""), std::string::npos);
  auto still = client.Generate("Hello");
  ASSERT_TRUE(still.has_value()) << "the old model keeps serving";
  EXPECT_EQ(still->text, after->text);
  fs::remove_all(dir);
}

TEST(DaemonModels, SeveralModelsByNameWithinAMemoryBudget) {
  DaemonProcess d({"--model-name", "speaker", "--models", "guard=" + TinyModelPath(), "--temperature", "0"});
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket());
  auto models = c.Models();
  ASSERT_TRUE(models.has_value());
  EXPECT_EQ(*models, (std::vector<std::string>{"speaker", "guard"}));
  GenerateOptions o;
  o.max_tokens = 5;
  o.model = "guard";
  auto g = c.GenerateStream("Hello", o, nullptr);
  ASSERT_TRUE(g.has_value()) << g.error().ToString();
  o.model = "nope";
  auto bad = c.GenerateStream("Hello", o, nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("unknown model 'nope'; available: speaker, guard"), std::string::npos);
  EXPECT_NE(d.log().find("models=\"speaker, guard\""), std::string::npos);

  // Models that do not fit the budget stop startup; nothing is evicted.
  std::string dir = MakeTempDir();
  std::string cmd = std::string(LLMD_BINARY) + " --model " + TinyModelPath() + " --models b=" + TinyModelPath() +
                    " --memory-budget-mb 30 --socket " + dir + "/s.sock 2>" + dir + "/log";
  int rc = ::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_NE(ReadAll(dir + "/log").find("over the memory budget of 30 MiB"), std::string::npos) << ReadAll(dir + "/log");
  fs::remove_all(dir);
}

// A directory, or a symlink to a device, at the model path is refused as what it is before
// any size arithmetic (its "size" once read as 17592186044415 MiB over the budget).
TEST(DaemonModels, ADirectoryOrADeviceAtTheModelPathIsRefusedAsSuch) {
  std::string dir = MakeTempDir();
  ::symlink("/dev/zero", (dir + "/zero.gguf").c_str());
  const std::pair<std::string, std::string> cases[] = {{dir, "a directory"}, {dir + "/zero.gguf", "a character device"}};
  for (const auto& [path, what] : cases) {
    std::string cmd = std::string(LLMD_BINARY) + " --model " + path + " --socket " + dir + "/s.sock 2>" + dir + "/log";
    int rc = ::system(cmd.c_str());
    EXPECT_EQ(WEXITSTATUS(rc), 1);
    const std::string log = ReadAll(dir + "/log");
    EXPECT_NE(log.find(what), std::string::npos) << log;
    EXPECT_EQ(log.find("memory budget"), std::string::npos) << log;
  }
  fs::remove_all(dir);
}

// The guard is a synthetic model whose verdict is forced by its grammar (guard_grammar): with
// `root ::= "Safety: Unsafe"` it can only say Unsafe, whatever its random weights are.
TEST(DaemonGuard, RefusesWhenTheGuardSaysUnsafe) {
  auto args = ForcedGuardArgs("Safety: Unsafe\\nCategories: Violent");
  args.insert(args.end(), {"--temperature", "0"});
  DaemonProcess d(args);
  ASSERT_TRUE(d.ready()) << d.log();
  // The guarded answer arrives only after the verdict (two generations): a generous liveness
  // bound for slow builds (sanitizers) on a busy machine, not a speed claim.
  LlmClient c(d.socket(), std::chrono::seconds(120));
  GenerateOptions o;
  o.max_tokens = 6;
  std::string shown;
  auto refused = c.GenerateStream("Tell me a secret.", o, [&](std::string_view t) {
    shown += t;
    return true;
  });
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().server_code, static_cast<uint32_t>(proto::ErrorCode::kRefused));
  EXPECT_NE(refused.error().message.find("refused by the guard: the answer was judged unsafe (categories: Violent)"),
            std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(shown.empty()) << "nothing is shown before the verdict";
  auto seed = c.Generate("Tell me a secret.", 6);
  ASSERT_FALSE(seed.has_value());
  EXPECT_EQ(seed.error().server_code, static_cast<uint32_t>(proto::ErrorCode::kGenerationFailed))
      << "a seed client gets a seed code";
  EXPECT_TRUE(d.WaitForLog("verdict=\"Safety: Unsafe\\x0ACategories: Violent\"")) << d.log();
  o.guard = false;  // per request: no cascade
  auto unguarded = c.GenerateStream("Tell me a secret.", o, nullptr);
  ASSERT_TRUE(unguarded.has_value()) << unguarded.error().ToString();
  EXPECT_EQ(unguarded->guard_ms, 0.0f);
}

TEST(DaemonGuard, PassesWhenTheGuardSaysSafeAndReportsItsTime) {
  auto args = ForcedGuardArgs("Safety: Safe");
  args.insert(args.end(), {"--temperature", "0"});
  DaemonProcess d(args);
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket(), std::chrono::seconds(120));  // as above
  GenerateOptions o;
  o.max_tokens = 6;
  std::string shown;
  auto g = c.GenerateStream("Tell me about the sea.", o, [&](std::string_view t) {
    shown += t;
    return true;
  });
  ASSERT_TRUE(g.has_value()) << g.error().ToString();
  EXPECT_EQ(shown, g->text);
  EXPECT_GT(g->guard_ms, 0.0f);
  o.guard = false;
  auto plain = c.GenerateStream("Tell me about the sea.", o, nullptr);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->text, g->text) << "the cascade does not change the answer";
}

TEST(DaemonGuard, BadGuardSettingsStopStartup) {
  std::string dir = MakeTempDir();
  auto run = [&](const std::string& extra) {
    std::string cmd = std::string(LLMD_BINARY) + " --model " + TinyModelPath() + " --socket " + dir + "/s.sock " +
                      extra + " 2>" + dir + "/log";
    int rc = ::system(cmd.c_str());
    return std::make_pair(WEXITSTATUS(rc), ReadAll(dir + "/log"));
  };
  auto [rc1, log1] = run("--guard-model nope");
  EXPECT_EQ(rc1, 1);
  EXPECT_NE(log1.find("guard_model 'nope' is not a loaded model"), std::string::npos) << log1;
  auto [rc2, log2] = run("--models g=" + TinyModelPath() + " --guard-model g --guard-grammar 'root ::= ('");
  EXPECT_EQ(rc2, 1);
  EXPECT_NE(log2.find("guard_grammar"), std::string::npos) << log2;
  fs::remove_all(dir);
}

TEST(DaemonSessions, SurviveARestartThroughSaveAndRestore) {
  std::string dir = MakeTempDir();
  GenerateOptions o;
  o.max_tokens = 6;
  o.temperature = 0.0f;
  uint32_t history = 0;
  std::string reference;
  {
    DaemonProcess d({"--session-dir", dir});
    ASSERT_TRUE(d.ready());
    LlmClient c(d.socket());
    auto t1 = c.Chat("trip", "Plan a trip to the sea.", o, nullptr);
    ASSERT_TRUE(t1.has_value()) << t1.error().ToString();
    history = t1->prompt_tokens + t1->tokens_generated;
    auto t2 = c.Chat("trip", "And the way back?", o, nullptr);  // what turn 2 gives, uninterrupted
    ASSERT_TRUE(t2.has_value());
    reference = t2->text;
    ASSERT_TRUE(c.EndSession("trip") == std::nullopt);
    // Again up to turn 1, then save.
    ASSERT_TRUE(c.Chat("trip", "Plan a trip to the sea.", o, nullptr).has_value());
    EXPECT_FALSE(c.SaveSession("trip").has_value());
    auto bad = c.SaveSession("../escape");
    ASSERT_TRUE(bad.has_value());
    EXPECT_NE(bad->message.find("session id must be"), std::string::npos);
  }
  ASSERT_TRUE(fs::exists(dir + "/trip.llmds"));
  DaemonProcess d({"--session-dir", dir});
  ASSERT_TRUE(d.ready());
  LlmClient c(d.socket());
  EXPECT_FALSE(c.RestoreSession("trip").has_value());
  auto t2 = c.Chat("trip", "And the way back?", o, nullptr);
  ASSERT_TRUE(t2.has_value()) << t2.error().ToString();
  EXPECT_GT(t2->prompt_tokens, history) << "the history came back";
  EXPECT_EQ(t2->text, reference) << "the conversation continues exactly";

  // Item 48d: a crafted file and one saved with another model are refused.
  std::ofstream(dir + "/crafted.llmds") << "LLMDSES1 this is not a session";
  auto crafted = c.RestoreSession("crafted");
  ASSERT_TRUE(crafted.has_value());
  EXPECT_NE(crafted->message.find("session file"), std::string::npos);
  std::string foreign = ReadAll(dir + "/trip.llmds");
  foreign[20] ^= 0x55;  // the model fingerprint
  std::ofstream(dir + "/foreign.llmds") << foreign;
  auto other = c.RestoreSession("foreign");
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->message.find("checksum"), std::string::npos) << other->message;
  EXPECT_FALSE(c.DeleteSession("trip").has_value());
  EXPECT_FALSE(fs::exists(dir + "/trip.llmds"));
  EXPECT_TRUE(c.HealthCheck().has_value()) << "still serving";
  fs::remove_all(dir);
}

// 48c: the disk fills up (a 64 KiB tmpfs as the session directory): saving says "session not
// saved", the previous file is intact, and the daemon keeps serving.
TEST(DaemonSessions, Item48c_ADiskFullSaveFailsCleanlyAndKeepsTheOldFile) {
  const std::string parent = MakeTempDir();
  const std::string dir = parent + "/state";
  fs::create_directory(dir);
  if (std::system(("mount -t tmpfs -o size=64k tmpfs " + dir + " 2>/dev/null").c_str()) != 0) {
    fs::remove_all(parent);
    GTEST_SKIP() << "mounting a small tmpfs needs root (CAP_SYS_ADMIN); SessionFile.AtomicWriteKeepsTheOldFileOnFailure "
                    "covers the write path at the unit level";
  }
  GenerateOptions o;
  o.max_tokens = 6;
  o.temperature = 0.0f;
  bool served_after = false;
  std::string before, after, message;
  {
    DaemonProcess d({"--session-dir", dir});
    ASSERT_TRUE(d.ready());
    LlmClient c(d.socket());
    ASSERT_TRUE(c.Chat("trip", "Plan a trip to the sea.", o, nullptr).has_value());
    ASSERT_FALSE(c.SaveSession("trip").has_value());
    before = ReadAll(dir + "/trip.llmds");
    // Fill the disk, then save the longer conversation.
    (void)!std::system(("dd if=/dev/zero of=" + dir + "/filler bs=4k count=64 2>/dev/null").c_str());
    ASSERT_TRUE(c.Chat("trip", "And the way back?", o, nullptr).has_value());
    auto failed = c.SaveSession("trip");
    ASSERT_TRUE(failed.has_value()) << "a full disk cannot take the file";
    message = failed->message;
    after = ReadAll(dir + "/trip.llmds");
    served_after = c.Generate("Still there?", 4).has_value();
  }
  (void)!std::system(("umount " + dir).c_str());
  fs::remove_all(parent);
  EXPECT_NE(message.find("session not saved"), std::string::npos) << message;
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  EXPECT_FALSE(before.empty());
  EXPECT_EQ(after, before) << "the old session file is intact";
  EXPECT_TRUE(served_after) << "the daemon keeps serving";
}

TEST(DaemonLifecycle, NotifiesSystemdReadyWatchdogAndStopping) {
  std::string dir = MakeTempDir();
  NotifySocket notify(dir + "/notify");
  pid_t pid = StartUnderSystemd(dir, dir + "/notify", -1);
  // Ready when it is ready (slow under sanitizers), then the watchdog pings; each wait is a
  // liveness bound only.
  std::string got = notify.DrainUntil("READY=1");
  if (got.find("WATCHDOG=1") == std::string::npos) got += notify.DrainUntil("WATCHDOG=1");
  EXPECT_NE(got.find("READY=1"), std::string::npos) << got;
  EXPECT_NE(got.find("STATUS=serving"), std::string::npos);
  EXPECT_NE(got.find("WATCHDOG=1"), std::string::npos) << "pinged while the engine thread is alive";
  ::kill(pid, SIGTERM);
  got = notify.DrainUntil("STOPPING=1");
  EXPECT_NE(got.find("STOPPING=1"), std::string::npos) << got;
  int status;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  fs::remove_all(dir);
}

TEST(DaemonLifecycle, Item20_ServesASocketPassedBySystemd) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/activated.sock";
  int fd = ListenUnix(path);
  ASSERT_GE(fd, 0);
  // A client can connect (and queue) before the daemon even starts.
  RawConn early(path);
  ASSERT_TRUE(early.connected());
  ASSERT_TRUE(early.Send(HealthRequest()));
  NotifySocket notify(dir + "/notify");
  pid_t pid = StartUnderSystemd(dir, dir + "/notify", fd);
  ::close(fd);
  auto r = early.Receive();  // liveness only
  const bool own_socket = fs::exists(dir + "/own.sock");
  ::kill(pid, SIGTERM);  // before any assertion can return early
  int status;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(r.has_value()) << ReadAll(dir + "/log");
  EXPECT_EQ(r->type, proto::Response::Type::kHealth);
  EXPECT_FALSE(own_socket) << "the passed socket is used, none is created";
  EXPECT_TRUE(fs::exists(path)) << "systemd's socket is systemd's to remove";
  fs::remove_all(dir);
}

// Waits (a liveness bound) for `pid` to exit by itself; its exit code, or -1.
int WaitForExit(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// idle_exit_after: llmd exits by itself once nobody is connected; a client that connects while
// it is down waits in systemd's socket, the next start serves it (one restart), and the answer
// is the one the first instance gave.
TEST(DaemonLifecycle, IdleExitUnderSocketActivationLosesNoClient) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/activated.sock";
  int fd = ListenUnix(path);
  ASSERT_GE(fd, 0);
  NotifySocket notify(dir + "/notify");
  // As systemd does, read the notifications: a full notify socket blocks the daemon's pings.
  std::atomic<bool> done{false};
  std::thread drain([&] {
    while (!done) notify.Drain(100);
  });
  const std::vector<std::string> args = {"--model", TinyModelPath(), "--socket", dir + "/own.sock", "--http-socket",
                                         "off", "--temperature", "0", "--idle-exit-after", "1s"};
  const pid_t first = StartUnderSystemd(dir, dir + "/notify", fd, args);
  std::optional<std::string> before;
  {
    LlmClient client(path, std::chrono::seconds(300));  // liveness bounds only
    if (auto r = client.Generate("Tell me about the sea.", 8); r.has_value()) before = r->text;
  }
  const int first_exit = WaitForExit(first, std::chrono::minutes(5));
  const std::string first_log = ReadAll(dir + "/log");

  // While llmd is down a client connects and asks; the kernel queues the connection.
  std::optional<std::string> after;
  std::thread waiting_client([&] {
    LlmClient client(path, std::chrono::seconds(300));
    if (auto r = client.Generate("Tell me about the sea.", 8); r.has_value()) after = r->text;
  });
  // What systemd does: the socket becomes readable with no service running, so it starts one.
  pollfd p{fd, POLLIN, 0};
  const bool woke = ::poll(&p, 1, 60000) == 1;
  const pid_t second = StartUnderSystemd(dir, dir + "/notify", fd, args);
  waiting_client.join();
  const int second_exit = WaitForExit(second, std::chrono::minutes(5));  // idle again, it exits again
  done = true;
  drain.join();
  ::close(fd);
  fs::remove_all(dir);
  EXPECT_EQ(first_exit, 0) << first_log;
  EXPECT_NE(first_log.find("idle_exit"), std::string::npos) << first_log;
  EXPECT_TRUE(woke) << "the waiting client's connection is what starts llmd again";
  ASSERT_TRUE(before.has_value()) << first_log;
  ASSERT_TRUE(after.has_value()) << "the client that came while llmd was down was served";
  EXPECT_EQ(*after, *before);
  EXPECT_EQ(second_exit, 0);
}

TEST(DaemonLifecycle, IdleExitIsRefusedWhereNothingWouldStartLlmdAgain) {
  std::string dir = MakeTempDir();
  // Not socket-activated: nothing would start it again.
  DaemonProcess plain({"--idle-exit-after", "5m"});
  EXPECT_EQ(plain.WaitExit(std::chrono::seconds(120)), 1);
  EXPECT_NE(plain.log().find("idle_exit_after needs socket activation"), std::string::npos) << plain.log();

  // Socket-activated, but the HTTP API would listen on a socket of its own.
  std::string path = dir + "/activated.sock";
  int fd = ListenUnix(path);
  ASSERT_GE(fd, 0);
  NotifySocket notify(dir + "/notify");
  const pid_t pid = StartUnderSystemd(dir, dir + "/notify", fd,
                                      {"--model", TinyModelPath(), "--socket", dir + "/own.sock", "--idle-exit-after", "5m"});
  ::close(fd);
  EXPECT_EQ(WaitForExit(pid, std::chrono::minutes(2)), 1);
  EXPECT_NE(ReadAll(dir + "/log").find("the HTTP API listens on sockets of its own"), std::string::npos)
      << ReadAll(dir + "/log");
  fs::remove_all(dir);
}

// 48f: systemd holds the socket while the service crash-loops (killed 25 times in a few seconds).
// Clients that connect meanwhile are never refused: each either waits in the socket's
// backlog and is served by the instance that stays up, or, if a dying instance had accepted
// it, sees a clean end of stream. None hangs. (The unit's StartLimit*/TriggerLimit* settings
// are systemd's to apply; the packaging test verifies the units.)
TEST(DaemonLifecycle, Item48f_ACrashLoopUnderSocketActivationNeverRefusesAClient) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/activated.sock";
  int fd = ListenUnix(path, 128);
  ASSERT_GE(fd, 0);
  // The test keeps all 53 of its connections open to the end: under the default cap of 4 the
  // instance that stays up would answer their Health requests while they wait (as it should) and
  // a generation among them would get Busy after admission_wait_ms (under TSan it did). The cap is
  // not what this test is about, so every connection gets a slot.
  const std::vector<std::string> args = {"--model", TinyModelPath(), "--threads", "1", "--socket", dir + "/own.sock",
                                         "--max-connections", "64"};
  std::vector<std::unique_ptr<RawConn>> clients;
  std::set<const RawConn*> generating;  // the clients that asked for a generation
  int refused = 0, generations_started = 0;
  auto connect_one = [&] {
    clients.push_back(std::make_unique<RawConn>(path));
    if (!clients.back()->connected() || !clients.back()->Send(HealthRequest())) ++refused;
  };
  NotifySocket notify(dir + "/notify");
  const auto loop_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 25; ++i) {
    pid_t pid = StartUnderSystemd(dir, dir + "/notify", fd, args);
    connect_one();
    if (i % 8 == 4) {
      // Now and then the crash comes in the middle of a generation: a streamed one, killed once
      // its first token has come (so the instance is generating, however slow the machine).
      clients.push_back(std::make_unique<RawConn>(path));
      clients.back()->Send(GenerateRequest("Write a long story.", 2000, true));
      generating.insert(clients.back().get());
      const auto first = clients.back()->Receive(kLivenessMillis);
      if (first.has_value() && first->type == proto::Response::Type::kToken) ++generations_started;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + (i * 37) % 60));
    }
    connect_one();
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  const double loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  RawConn late(path);  // between the last crash and the instance that stays up
  ASSERT_TRUE(late.connected());
  ASSERT_TRUE(late.Send(HealthRequest()));
  pid_t pid = StartUnderSystemd(dir, dir + "/notify", fd, args);
  ::close(fd);
  auto late_reply = late.Receive(30000);
  int served = 0, ended = 0, hung = 0, generations_ended = 0, generations_served = 0, generations_answered_otherwise = 0;
  for (auto& c : clients) {
    pollfd p{c->fd(), POLLIN, 0};
    if (::poll(&p, 1, kLivenessMillis) != 1) {
      ++hung;
      continue;
    }
    auto r = c->Receive(kLivenessMillis);
    if (generating.count(c.get()) != 0) {
      // Its instance died mid-generation (the stream ends without its Done), or the instance
      // that stays up served it whole.
      while (r.has_value() && r->type == proto::Response::Type::kToken) r = c->Receive(kLivenessMillis);
      if (!r.has_value()) {
        ++generations_ended;
      } else if (r->type == proto::Response::Type::kDone) {
        ++generations_served;
      } else {
        ++generations_answered_otherwise;
        ADD_FAILURE() << "a generation got reply type " << static_cast<uint32_t>(r->type) << ", code "
                      << static_cast<uint32_t>(r->code) << ": " << r->text;
      }
      continue;
    }
    (r.has_value() && r->type == proto::Response::Type::kHealth ? served : ended)++;
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  std::printf("25 crashes in %.1f s; %zu clients: %d served, %d clean ends, %d refused, %d hung; generations: %d "
              "started, %d ended with their instance, %d served whole\n",
              loop_s, clients.size(), served, ended, refused, hung, generations_started, generations_ended,
              generations_served);
  EXPECT_EQ(refused, 0) << "connections queue on systemd's socket, never ECONNREFUSED";
  EXPECT_EQ(hung, 0);
  EXPECT_GT(served, 0) << "backlogged clients are served by the instance that stays up";
  EXPECT_EQ(generations_started, 3) << "each of the three generations had its first token before its instance died";
  EXPECT_EQ(generations_ended, generations_started) << "a client whose instance died mid-generation sees the end of the stream";
  EXPECT_EQ(generations_answered_otherwise, 0) << "a generation ends cleanly or is served whole, never anything else";
  ASSERT_TRUE(late_reply.has_value()) << ReadAll(dir + "/log");
  EXPECT_EQ(late_reply->type, proto::Response::Type::kHealth);
  EXPECT_TRUE(fs::exists(path)) << "no crash removed systemd's socket";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace llmd::testing
