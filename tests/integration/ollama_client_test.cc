// The official `ollama` npm client (ollama-js, tests/integration/clients/ollama.mjs), unchanged
// and pinned, against a real daemon's Ollama API (/api/*) on its TCP listener. The npm_clients
// fixture installs it and Node 22.
#include <filesystem>

#include "fetch/test_http_server.h"
#include "tests/integration/clients/run_client.h"

namespace llmd::testing {
namespace {

// The cases the daemon must pass (names as in ollama.mjs).
const std::vector<std::string> kCases = {
    "chat",    "chat_stream", "generate", "generate_stream", "list",  "show",   "ps",
    "version", "embed",       "tools",    "format",          "think", "errors", "abort",
    "manage",
};

TEST(OllamaClient, RealClientAgainstLlmd) {
  // "embed": the tiny model loaded for embeddings, beside the chat model. "manage" pulls the
  // tiny model's bytes from a loopback server into a models directory.
  const std::string models_dir = MakeTempDir();
  fetch::testing::TestHttpServer server;
  server.Serve("/files/js-pulled.gguf", fetch::testing::Resource{ReadAll(TinyModelPath()), fetch::testing::Mode::kNormal, 0, ""});
  {
    HttpDaemon d({"--rate-limit", "100000", "--models", "embed=" + TinyEmbedModelPath(), "--embedding-models", "embed",
                  "--models-dir", models_dir});
    ASSERT_TRUE(d.process().ready());
    ASSERT_GT(d.port(), 0);
    ExpectCasesPassed(RunClientScript(d, "ollama.mjs", kCases,
                                      "LLMD_EMBED_MODEL=embed LLMD_PULL_URL=" + server.Url("/files/js-pulled.gguf")),
                      kCases);
  }
  std::filesystem::remove_all(models_dir);
}

}  // namespace
}  // namespace llmd::testing
