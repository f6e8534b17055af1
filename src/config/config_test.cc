#include "config/config.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

namespace llmd::config {
namespace {

Result<ParsedConfig> Parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  return ParseConfig({std::move(args), std::move(env)});
}

std::string WriteToml(const std::string& text) {
  std::string path = "/tmp/llmd_config_test_" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path) << text;
  return path;
}

TEST(Config, DefaultsAreTheSeedsTable) {
  auto r = Parse({"--model", "m.gguf"});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const DaemonConfig& c = r->config;
  EXPECT_EQ(c.max_new_tokens, 256u);
  EXPECT_EQ(c.engine.context_tokens, 2048);
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(c.sampling.top_p, 0.9f);
  EXPECT_EQ(c.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(c.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(c.socket_path, "/run/llmd/llm.sock");
  EXPECT_EQ(c.socket_mode, 0600u);
  EXPECT_EQ(c.max_connections, 4u);
  EXPECT_EQ(c.rate_limit, 100u);
}

TEST(Config, LayersApplyInOrderDefaultsTomlCliEnv) {
  std::string toml = WriteToml("model_path = \"from-toml.gguf\"\ntemperature = 0.2\ntop_k = 10\n"
                               "max_new_tokens = 100\nallowed_uids = [1000, 1001]\n");
  auto r = Parse({"--config", toml, "--temperature", "0.3", "--top-k=20"},
                 {{"LLMD_TOP_K", "30"}});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->config.engine.model_path, "from-toml.gguf");
  EXPECT_FLOAT_EQ(r->config.sampling.temperature, 0.3f) << "CLI beats TOML";
  EXPECT_EQ(r->config.sampling.top_k, 30) << "environment beats CLI";
  EXPECT_EQ(r->config.max_new_tokens, 100u) << "TOML beats defaults";
  EXPECT_EQ(r->config.allowed_uids, (std::vector<uint32_t>{1000, 1001}));
  EXPECT_EQ(r->config_file, toml);
  ::unlink(toml.c_str());
}

TEST(Config, AcceptsTheSeedsFlagsAndEnvironment) {
  auto r = Parse({"--model-path", "a.gguf", "--socket-path", "/tmp/x.sock"},
                 {{"PORTAL_LLM_LOG_LEVEL", "debug"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config.engine.model_path, "a.gguf");
  EXPECT_EQ(r->config.socket_path, "/tmp/x.sock");
  EXPECT_EQ(r->config.log_level, "debug");
  auto env = Parse({}, {{"PORTAL_LLM_MODEL_PATH", "p.gguf"}, {"PORTAL_LLM_SOCKET_PATH", "/tmp/p.sock"}});
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->config.engine.model_path, "p.gguf");
  auto both = Parse({}, {{"PORTAL_LLM_MODEL_PATH", "p.gguf"}, {"LLMD_MODEL_PATH", "l.gguf"}});
  EXPECT_EQ(both->config.engine.model_path, "l.gguf") << "LLMD_* wins over PORTAL_LLM_*";
}

TEST(Config, BadValuesNameTheKeyAndTheSource) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string expect;
  };
  const Case cases[] = {
      {{"-m", "m", "--max-new-tokens", "0"}, {}, "max_new_tokens = 0 (from the command line, --max-new-tokens): must be in [1, 4096]"},
      {{"-m", "m", "--max-new-tokens", "4097"}, {}, "must be in [1, 4096]"},
      {{"-m", "m"}, {{"LLMD_TEMPERATURE", "3"}}, "temperature = 3 (from the environment, LLMD_TEMPERATURE): must be in [0, 2]"},
      {{"-m", "m", "--temperature", "nan"}, {}, "temperature"},
      {{"-m", "m", "--top-p", "1.5"}, {}, "top_p = 1.5"},
      {{"-m", "m", "--top-k", "0"}, {}, "top_k = 0"},
      {{"-m", "m", "--repeat-penalty", "0.9"}, {}, "repeat_penalty = 0.9"},
      {{"-m", "m", "--context", "0"}, {}, "max_context_len = 0"},
      {{"-m", "m", "--socket-mode", "0666"}, {}, "socket_mode = 0666"},
      {{"-m", "m", "--max-connections", "x"}, {}, "not an integer"},
      {{"-m", "m", "--bogus"}, {}, "unknown option '--bogus'"},
      {{"-m", "m", "--top-k"}, {}, "needs a value"},
      {{}, {}, "model_path is required"},
      {{"-m", "m", "--gpu-layers", "most"}, {}, "gpu_layers = most"},
      {{"-m", "m", "--split-mode", "diagonal"}, {}, "must be layer, row or none"},
      {{"-m", "m", "--tensor-split", "3,x"}, {}, "tensor_split = 3,x"},
      {{"-m", "m", "--tensor-split", "-1"}, {}, "must be in 0 .. 1e6"},
      {{"-m", "m", "--device-memory", "HTP0"}, {}, "'HTP0' is not DEVICE=SIZE"},
      {{"-m", "m", "--device-memory", "HTP0=lots"}, {}, "not a size such as 3.5G"},
      {{"-m", "m", "--device-memory", "HTP0=0"}, {}, "must be more than 0"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.args, c.env);
    ASSERT_FALSE(r.has_value()) << c.expect;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << r.error().message();
  }
}

TEST(Config, DevicePlacementKeys) {
  std::string toml = WriteToml("model_path = \"m.gguf\"\ndevices = [\"HTP0\", \"HTP1\"]\n"
                               "tensor_split = [3, 1]\ndevice_memory = [\"HTP0=3.5G\", \"HTP1=512M\"]\n");
  auto r = Parse({"--config", toml, "--gpu-layers", "fit", "--split-mode", "none", "--main-device", "HTP1"});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const auto& e = r->config.engine;
  EXPECT_EQ(e.devices, (std::vector<std::string>{"HTP0", "HTP1"}));
  EXPECT_EQ(e.gpu_layers, -2);
  EXPECT_EQ(e.split_mode, engine::SplitMode::kNone);
  EXPECT_EQ(e.main_device, "HTP1");
  EXPECT_EQ(e.tensor_split, (std::vector<float>{3, 1}));
  ASSERT_EQ(e.device_caps.size(), 2u);
  EXPECT_EQ(e.device_caps[0].device, "HTP0");
  EXPECT_EQ(e.device_caps[0].bytes, 3584ull << 20);
  EXPECT_EQ(e.device_caps[1].bytes, 512ull << 20);
  EXPECT_EQ(Parse({"-m", "m", "--gpu-layers", "all"})->config.engine.gpu_layers, -1);
  EXPECT_EQ(Parse({"-m", "m", "--gpu-layers", "12"})->config.engine.gpu_layers, 12);
}

TEST(Config, TomlErrorsAreClear) {
  std::string bad = WriteToml("temperature = \n");
  auto r = Parse({"--config", bad});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find(bad + ":1"), std::string::npos) << r.error().message();
  std::string unknown = WriteToml("model_path = \"m\"\ntemprature = 0.1\n");
  r = Parse({"--config", unknown});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("unknown key 'temprature'"), std::string::npos);
  r = Parse({"--config", "/nonexistent.toml"});
  ASSERT_FALSE(r.has_value());
  ::unlink(bad.c_str());
  ::unlink(unknown.c_str());
}

TEST(Config, BooleanFlagsAndHelp) {
  auto r = Parse({"-m", "m", "--log-text", "--mmap", "false"});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(r->config.log_text);
  EXPECT_FALSE(r->config.engine.use_mmap);
  auto help = Parse({"--help"});
  ASSERT_TRUE(help.has_value());
  EXPECT_TRUE(help->exit_now);
  EXPECT_NE(help->output.find("--model-path"), std::string::npos);
  EXPECT_NE(help->output.find("PORTAL_LLM_MODEL_PATH"), std::string::npos);
}

}  // namespace
}  // namespace llmd::config
