// Runs the official `openai` npm client (openai_client_test.cjs) against a real daemon's TCP
// listener. The package is installed by the npm_openai fixture.
#include <gtest/gtest.h>

#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

TEST(OpenAiClient, WorksUnchangedAgainstLlmd) {
  HttpDaemon d({"--rate-limit", "100000"});
  ASSERT_TRUE(d.process().ready());
  ASSERT_GT(d.port(), 0);
  const std::string out = d.process().dir() + "/node.out";
  const std::string cmd = "NODE_PATH=" LLMD_NPM_DIR "/node_modules LLMD_BASE_URL=http://127.0.0.1:" +
                          std::to_string(d.port()) + "/v1 LLMD_API_KEY=" + HttpDaemon::kApiKey +
                          " timeout 120 node " LLMD_OPENAI_SCRIPT " > " + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << ReadAll(out);
  EXPECT_NE(ReadAll(out).find("all ok"), std::string::npos) << ReadAll(out);
}

}  // namespace
}  // namespace llmd::testing
