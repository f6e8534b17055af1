// LangChain's ChatOpenAI (`@langchain/openai` + `@langchain/core`,
// tests/integration/clients/langchain.mjs), unchanged and pinned, against a real daemon's TCP
// listener. The npm_clients fixture installs it and Node 22.
#include "tests/integration/clients/run_client.h"

namespace llmd::testing {
namespace {

// The cases the daemon must pass (names as in langchain.mjs).
const std::vector<std::string> kCases = {"invoke", "stream", "bind_tools", "bind_tools_stream", "tool_result_turn",
                                         "structured_output", "responses_invoke"};

TEST(LangChainClient, RealClientAgainstLlmd) {
  HttpDaemon d({"--rate-limit", "100000"});
  ASSERT_TRUE(d.process().ready());
  ASSERT_GT(d.port(), 0);
  ExpectCasesPassed(RunClientScript(d, "langchain.mjs", kCases), kCases);
}

}  // namespace
}  // namespace llmd::testing
