// The official `openai` npm client (tests/integration/clients/openai.mjs), unchanged and pinned,
// against a real daemon's TCP listener. The npm_clients fixture installs it and Node 22.
#include "tests/integration/clients/run_client.h"

namespace llmd::testing {
namespace {

// The cases the daemon must pass (names as in openai.mjs).
const std::vector<std::string> kCases = {
    "models", "chat", "chat_stream", "completions", "errors",
    "tools_auto", "tools_auto_stream", "tools_required", "tools_required_stream", "tool_named",
    "tool_result_turn", "json_schema", "json_schema_zod", "json_object", "logprobs", "n2",
    "reasoning", "reasoning_stream",
    "embeddings", "responses", "responses_stream", "responses_store",
};

TEST(OpenAiClient, RealClientAgainstLlmd) {
  // "embed": the tiny model loaded for embeddings, beside the chat model.
  HttpDaemon d({"--rate-limit", "100000", "--models", "embed=" + TinyEmbedModelPath(), "--embedding-models", "embed"});
  ASSERT_TRUE(d.process().ready());
  ASSERT_GT(d.port(), 0);
  ExpectCasesPassed(RunClientScript(d, "openai.mjs", kCases, "LLMD_EMBED_MODEL=embed"), kCases);
}

}  // namespace
}  // namespace llmd::testing
