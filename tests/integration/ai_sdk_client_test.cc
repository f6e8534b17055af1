// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`, tests/integration/clients/ai_sdk.mjs),
// unchanged and pinned, against a real daemon's TCP listener. The npm_clients fixture installs
// it and Node 22.
#include "tests/integration/clients/run_client.h"

namespace llmd::testing {
namespace {

// The cases the daemon must pass (names as in ai_sdk.mjs).
const std::vector<std::string> kCases = {
    "generate_text", "stream_text", "generate_text_tool", "stream_text_tool", "tool_round_trip",
    "generate_object", "output_object", "reasoning",
    "embed_many",
};

TEST(AiSdkClient, RealClientAgainstLlmd) {
  // "embed": the tiny model loaded for embeddings, beside the chat model.
  HttpDaemon d({"--rate-limit", "100000", "--models", "embed=" + TinyEmbedModelPath(), "--embedding-models", "embed"});
  ASSERT_TRUE(d.process().ready());
  ASSERT_GT(d.port(), 0);
  ExpectCasesPassed(RunClientScript(d, "ai_sdk.mjs", kCases, "LLMD_EMBED_MODEL=embed"), kCases);
}

}  // namespace
}  // namespace llmd::testing
