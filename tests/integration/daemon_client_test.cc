// The client library's typed errors, the C API (from C) and llmctl, against the real daemon.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"

namespace llmd::testing {
namespace {

std::string RunCommand(const std::string& cmd, int* exit_code) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  *exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST(DaemonClient, TypedErrors) {
  LlmClient missing("/nonexistent/dir/llm.sock");
  auto r = missing.HealthCheck();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, ClientError::Kind::kConnectionFailed);

  // A peer that accepts but never answers: Timeout.
  std::string dir = MakeTempDir();
  std::string path = dir + "/silent.sock";
  int fd = ListenUnix(path);
  ASSERT_GE(fd, 0);
  LlmClient silent(path, std::chrono::milliseconds(200));
  auto t = silent.Generate("hi");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().kind, ClientError::Kind::kTimeout);
  ::close(fd);

  DaemonProcess d;
  ASSERT_TRUE(d.ready());
  auto s = LlmClient(d.socket()).Generate("\t \n", 3);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().kind, ClientError::Kind::kServerError);
  EXPECT_EQ(s.error().ToString(), "ServerError(InvalidPrompt): prompt is empty");
  std::string cmd = "rm -rf " + dir;
  (void)!::system(cmd.c_str());
}

TEST(DaemonClient, CApiFromC) {
  DaemonProcess d;
  ASSERT_TRUE(d.ready());
  int rc;
  std::string out = RunCommand(std::string(LLMD_C_API_TEST) + " " + d.socket() + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("c_api_test: ok"), std::string::npos);
}

TEST(DaemonClient, LlmctlGenerateHealthShutdown) {
  DaemonProcess d({"--max-new-tokens", "32"});  // the chat turns use the default length
  ASSERT_TRUE(d.ready());
  const std::string ctl = std::string(LLMCTL_BINARY) + " --socket " + d.socket();
  int rc;
  std::string json = RunCommand(ctl + " --json generate 'Hello there' -n 6 --temperature 0", &rc);
  ASSERT_EQ(rc, 0) << json;
  auto j = nlohmann::json::parse(json);
  EXPECT_LE(j["tokens_generated"].get<int>(), 6);
  EXPECT_GT(j["prompt_tokens"].get<int>(), 5);
  EXPECT_TRUE(j["text"].is_string());

  std::string text = RunCommand(ctl + " generate 'Hello there' -n 6 --temperature 0 2>/dev/null", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(text, j["text"].get<std::string>() + "\n") << "streamed text matches";

  std::string health = RunCommand(ctl + " health", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(health.find("model_loaded: yes"), std::string::npos);

  std::string bad = RunCommand(std::string(LLMCTL_BINARY) + " --socket /nonexistent.sock health 2>&1", &rc);
  EXPECT_EQ(rc, 3);
  EXPECT_NE(bad.find("is llmd running?"), std::string::npos);

  std::string chat = RunCommand("printf 'Hello\\nAgain\\n/reset\\nHello\\n' | " + ctl + " chat 2>&1", &rc);
  EXPECT_EQ(rc, 0) << chat;
  EXPECT_NE(chat.find("(new conversation)"), std::string::npos) << chat;
  size_t turns = 0;
  for (size_t at = chat.find(" cached), ttft "); at != std::string::npos; at = chat.find(" cached), ttft ", at + 1)) ++turns;
  EXPECT_EQ(turns, 3u) << "one stats line per turn: " << chat;
  std::string stats = RunCommand(ctl + " --json stats", &rc);
  EXPECT_EQ(rc, 0);
  auto sj = nlohmann::json::parse(stats);
  EXPECT_GE(sj["requests"].get<int>(), 5);
  EXPECT_EQ(sj["sessions"].get<int>(), 1);
  std::string models = RunCommand(ctl + " models", &rc);
  EXPECT_EQ(models, "tiny-q8_0\n");

  std::string stop = RunCommand(ctl + " shutdown", &rc);
  EXPECT_EQ(rc, 0) << stop;
  EXPECT_EQ(d.WaitExit(), 0);
}

}  // namespace
}  // namespace llmd::testing
