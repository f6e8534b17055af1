// The official `@anthropic-ai/sdk` npm client (tests/integration/clients/anthropic.mjs),
// unchanged and pinned, against a real daemon's Anthropic Messages API (/v1/messages) on its
// TCP listener. The npm_clients fixture installs it and Node 22.
#include "tests/integration/clients/run_client.h"

namespace llmd::testing {
namespace {

// The cases the daemon must pass (names as in anthropic.mjs).
const std::vector<std::string> kCases = {
    "messages", "messages_stream", "stop_sequences", "tool_named", "tools_any", "tools_any_stream", "tool_result_turn",
    "thinking", "thinking_stream", "count_tokens", "errors",
};

TEST(AnthropicClient, RealClientAgainstLlmd) {
  HttpDaemon d({"--rate-limit", "100000"});
  ASSERT_TRUE(d.process().ready());
  ASSERT_GT(d.port(), 0);
  ExpectCasesPassed(RunClientScript(d, "anthropic.mjs", kCases), kCases);
}

}  // namespace
}  // namespace llmd::testing
