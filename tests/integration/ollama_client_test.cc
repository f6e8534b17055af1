// The official `ollama` npm client (ollama-js, tests/integration/clients/ollama.mjs), unchanged
// and pinned, against a real daemon's Ollama API (/api/*) on its TCP listener. The npm_clients
// fixture installs it and Node 22.
#include "tests/integration/clients/run_client.h"

namespace llmd::testing {
namespace {

// The cases the daemon must pass (names as in ollama.mjs).
const std::vector<std::string> kCases = {
    "chat",    "chat_stream", "generate", "generate_stream", "list",  "show",   "ps",
    "version", "embed",       "tools",    "format",          "think", "errors", "abort",
};

TEST(OllamaClient, RealClientAgainstLlmd) {
  // "embed": the tiny model loaded for embeddings, beside the chat model.
  HttpDaemon d({"--rate-limit", "100000", "--models", "embed=" + TinyEmbedModelPath(),
                "--embedding-models", "embed"});
  ASSERT_TRUE(d.process().ready());
  ASSERT_GT(d.port(), 0);
  ExpectCasesPassed(RunClientScript(d, "ollama.mjs", kCases, "LLMD_EMBED_MODEL=embed"), kCases);
}

}  // namespace
}  // namespace llmd::testing
