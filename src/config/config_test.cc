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
  // The seed's 2048 became automatic: one pool of the model's trained context (context_size.h).
  EXPECT_EQ(c.engine.context_tokens, 0);
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(c.sampling.top_p, 0.9f);
  EXPECT_EQ(c.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(c.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(c.socket_path, "/run/llmd/llm.sock");
  EXPECT_EQ(c.socket_mode, 0600u);
  EXPECT_EQ(c.max_connections, 4u);
  EXPECT_EQ(c.rate_limit, 100u);
  // A whole generation, prefill included: an hour, so a cold agent-sized prompt on a slow
  // device is not cut off (a 16k-token prefill took 7 minutes on 2 threads).
  EXPECT_EQ(c.request_timeout_ms, 3600000u);
  // One sequence kept for a higher class, one for a peer taking its turn in its class, one for
  // the next request's prompt, computed ahead.
  EXPECT_EQ(c.reserved_sequences, 3u);
}

TEST(Config, ModelsDirectoriesAndTheirKeepAlive) {
  auto off = Parse({"--model", "m.gguf"});
  ASSERT_TRUE(off.has_value()) << off.error().ToString();
  EXPECT_TRUE(off->config.models_dir.empty()) << "off by default";
  EXPECT_TRUE(off->config.system_models_dirs.empty());
  EXPECT_EQ(off->config.models_keep_alive_ms, 5 * 60 * 1000) << "Ollama's default";
  std::string toml = WriteToml("model_path = \"m.gguf\"\nmodels_dir = \"/var/lib/llmd/models\"\n"
                               "system_models_dirs = [\"/usr/share/llmd/models\", \"/opt/models\"]\n"
                               "models_keep_alive = \"90s\"\n");
  auto r = Parse({"--config", toml});
  ::unlink(toml.c_str());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->config.models_dir, "/var/lib/llmd/models");
  EXPECT_EQ(r->config.system_models_dirs, (std::vector<std::string>{"/usr/share/llmd/models", "/opt/models"}));
  EXPECT_EQ(r->config.models_keep_alive_ms, 90000);
  auto never = Parse({"--model", "m.gguf"}, {{"LLMD_MODELS_KEEP_ALIVE", "-1"}});
  ASSERT_TRUE(never.has_value()) << never.error().ToString();
  EXPECT_EQ(never->config.models_keep_alive_ms, -1);
  auto zero = Parse({"--model", "m.gguf", "--models-keep-alive", "0"});
  ASSERT_TRUE(zero.has_value()) << zero.error().ToString();
  EXPECT_EQ(zero->config.models_keep_alive_ms, 0);
  EXPECT_FALSE(Parse({"--model", "m.gguf", "--models-keep-alive", "soon"}).has_value());
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
      {{"-m", "m", "--context", "-1"}, {}, "max_context_len = -1"},
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

// The Responses API's stored responses: defaults, each source, and the limits' checks.
TEST(Config, StoredResponseLimits) {
  auto defaults = Parse({"-m", "m"});
  ASSERT_TRUE(defaults.has_value()) << defaults.error().ToString();
  EXPECT_EQ(defaults->config.responses_max_stored, 1000u);
  EXPECT_EQ(defaults->config.responses_max_mb, 256u);
  EXPECT_EQ(defaults->config.responses_ttl_ms, 7LL * 24 * 3600 * 1000);
  auto set = Parse({"-m", "m", "--responses-max-stored", "0", "--responses-ttl", "90s"}, {{"LLMD_RESPONSES_MAX_MB", "8"}});
  ASSERT_TRUE(set.has_value()) << set.error().ToString();
  EXPECT_EQ(set->config.responses_max_stored, 0u) << "0: storing is off";
  EXPECT_EQ(set->config.responses_max_mb, 8u);
  EXPECT_EQ(set->config.responses_ttl_ms, 90'000);
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--responses-ttl", "0"}, "responses_ttl = 0"},
      {{"--responses-ttl", "500ms"}, "must be between 1s and a year"},
      {{"--responses-ttl", "soon"}, "responses_ttl = soon"},
      {{"--responses-max-stored", "1000001"}, "responses_max_stored = 1000001"},
      {{"--responses-max-mb", "0"}, "responses_max_mb = 0"},
  };
  for (const auto& [args, expect] : bad) {
    std::vector<std::string> all = {"-m", "m"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = Parse(all);
    ASSERT_FALSE(r.has_value()) << expect;
    EXPECT_NE(r.error().message().find(expect), std::string::npos) << r.error().message();
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

TEST(Config, RequestClassRulesAndTheDeviceKeys) {
  std::string toml = WriteToml("model_path = \"m.gguf\"\nrequest_classes = [\"uid:1001=interactive\", "
                               "\"gid:50=background/normal\"]\nbackground_on_battery = \"pause\"\n");
  auto r = Parse({"--config", toml, "--reserved-sequences", "2"});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const auto& rules = r->config.request_classes;
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].uid, 1001u);
  EXPECT_EQ(rules[0].default_class, RequestClass::kInteractive);
  EXPECT_EQ(rules[0].ceiling, RequestClass::kInteractive);
  EXPECT_EQ(rules[1].gid, 50u);
  EXPECT_EQ(rules[1].default_class, RequestClass::kBackground);
  EXPECT_EQ(rules[1].ceiling, RequestClass::kNormal);
  EXPECT_EQ(r->config.reserved_sequences, 2u);
  EXPECT_EQ(r->config.background_on_battery, BackgroundAction::kPause);
  EXPECT_EQ(r->config.background_when_hot, BackgroundAction::kThrottle);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"uid:1001", "is not uid:N=CLASS"},
      {"pid:1=normal", "rules name a uid or a gid"},
      {"uid:x=normal", "not an integer"},
      {"uid:1=urgent", "a class is interactive, normal or background"},
      {"uid:1=interactive/background", "the default class is above the ceiling"},
  };
  for (const auto& [rule, why] : bad) {
    auto refused = Parse({"-m", "m", "--request-class", rule});
    ASSERT_FALSE(refused.has_value()) << rule;
    EXPECT_NE(refused.error().message().find(why), std::string::npos) << refused.error().message();
    EXPECT_NE(refused.error().message().find("request_classes"), std::string::npos) << refused.error().message();
  }
  auto action = Parse({"-m", "m", "--background-when-hot", "stop"});
  ASSERT_FALSE(action.has_value());
  EXPECT_NE(action.error().message().find("must be run, throttle or pause"), std::string::npos);
}

TEST(Config, PinnedPromptsAreTextsOrFilesAndKeepTheirCommas) {
  const std::string file = "/tmp/llmd_config_test_pinned_" + std::to_string(::getpid()) + ".txt";
  std::ofstream(file) << "You are the voice assistant, brief and kind.\n\n";
  std::string toml = WriteToml("model_path = \"m.gguf\"\npinned_prompts = [\"You answer in English, briefly.\", \"@" + file +
                               "\"]\n");
  auto r = Parse({"--config", toml, "--pin-prompt", "A third one, from the command line."});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->config.pinned_prompts,
            (std::vector<std::string>{"You answer in English, briefly.", "You are the voice assistant, brief and kind.",
                                      "A third one, from the command line."}));
  auto missing = Parse({"-m", "m", "--pin-prompt", "@/nonexistent/system.txt"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("pinned_prompts"), std::string::npos) << missing.error().message();
  EXPECT_NE(missing.error().message().find("cannot read /nonexistent/system.txt"), std::string::npos);
  EXPECT_FALSE(Parse({"-m", "m", "--pin-prompt", ""}).has_value());
}

TEST(Config, ClassTokenBudgets) {
  std::string toml = WriteToml("model_path = \"m.gguf\"\nclass_token_budgets = [\"background=20000\", \"normal=60000\"]\n");
  auto r = Parse({"--config", toml});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->config.class_token_budgets, (std::array<uint32_t, kRequestClasses>{0, 60000, 20000}));
  EXPECT_EQ(Parse({"-m", "m"})->config.class_token_budgets, (std::array<uint32_t, kRequestClasses>{}))
      << "no budget unless configured";
  // The command line replaces the file's list whole.
  auto flag = Parse({"--config", toml, "--class-token-budget", "interactive=5"});
  ASSERT_TRUE(flag.has_value()) << flag.error().ToString();
  EXPECT_EQ(flag->config.class_token_budgets, (std::array<uint32_t, kRequestClasses>{5, 0, 0}));

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"background", "is not CLASS=TOKENS"},
      {"urgent=10", "is not CLASS=TOKENS"},
      {"background=0", "must be in [1, 1000000000]"},
      {"background=x", "not an integer"},
      {"normal=5,normal=6", "normal is given a budget twice"},
  };
  for (const auto& [value, why] : bad) {
    auto refused = Parse({"-m", "m", "--class-token-budget", value});
    ASSERT_FALSE(refused.has_value()) << value;
    EXPECT_NE(refused.error().message().find(why), std::string::npos) << refused.error().message();
    EXPECT_NE(refused.error().message().find("class_token_budgets"), std::string::npos) << refused.error().message();
  }
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

TEST(Config, SpeculativeKeys) {
  auto defaults = Parse({"-m", "m"});
  ASSERT_TRUE(defaults.has_value()) << defaults.error().ToString();
  const engine::SpeculativeConfig& off = defaults->config.engine.speculative;
  EXPECT_EQ(off.mode, engine::SpeculativeMode::kOff);
  EXPECT_EQ(off.draft_max, 4);
  EXPECT_EQ(off.draft_min, 0);
  EXPECT_FLOAT_EQ(off.draft_p_min, 0);
  EXPECT_EQ(off.ngram_kind, "simple");
  EXPECT_EQ(off.ngram_size_n, 12);
  EXPECT_EQ(off.ngram_size_m, 48);
  EXPECT_EQ(off.synthetic_acceptance_length, 0);

  std::string toml = WriteToml("model_path = \"m.gguf\"\nspeculative = \"ngram\"\nngram_kind = \"map-k\"\n"
                               "ngram_size_n = 8\nngram_size_m = 16\ndraft_max = 8\n");
  auto r = Parse({"--config", toml, "--draft-min", "2", "--draft-p-min=0.5"}, {{"LLMD_DRAFT_MAX", "6"}});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const engine::SpeculativeConfig& s = r->config.engine.speculative;
  EXPECT_EQ(s.mode, engine::SpeculativeMode::kNgram);
  EXPECT_EQ(s.ngram_kind, "map-k");
  EXPECT_EQ(s.ngram_size_n, 8);
  EXPECT_EQ(s.ngram_size_m, 16);
  EXPECT_EQ(s.draft_max, 6) << "the environment wins";
  EXPECT_EQ(s.draft_min, 2);
  EXPECT_FLOAT_EQ(s.draft_p_min, 0.5f);
  ::unlink(toml.c_str());

  auto draft = Parse({"-m", "m", "--speculative", "draft", "--draft-model", "small.gguf"});
  ASSERT_TRUE(draft.has_value()) << draft.error().ToString();
  EXPECT_EQ(draft->config.engine.speculative.mode, engine::SpeculativeMode::kDraft);
  EXPECT_EQ(draft->config.engine.speculative.draft_model_path, "small.gguf");
  auto mtp = Parse({"-m", "m"}, {{"LLMD_SPECULATIVE", "mtp"}});
  ASSERT_TRUE(mtp.has_value()) << mtp.error().ToString();
  EXPECT_EQ(mtp->config.engine.speculative.mode, engine::SpeculativeMode::kMtp);
}

TEST(Config, SpeculativeBadValuesNameTheKey) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const Case cases[] = {
      {{"--speculative", "fast"}, "speculative = fast (from the command line, --speculative): speculative 'fast' is not one of off, ngram, draft, mtp"},
      {{"--draft-max", "0"}, "draft_max = 0 (from the command line, --draft-max): must be in [1, 32]"},
      {{"--draft-max", "33"}, "draft_max = 33"},
      {{"--draft-min", "-1"}, "draft_min = -1 (from the command line, --draft-min): must be in [0, 32]"},
      {{"--draft-min", "33"}, "must be in [0, 32]"},
      {{"--draft-p-min", "1.5"}, "draft_p_min = 1.5 (from the command line, --draft-p-min): must be in [0, 1]"},
      {{"--draft-p-min", "nan"}, "draft_p_min = nan"},
      {{"--ngram-kind", "trie"}, "ngram_kind = trie (from the command line, --ngram-kind): must be simple, map-k, map-k4v or mod"},
      {{"--ngram-size-n", "0"}, "ngram_size_n = 0"},
      {{"--ngram-size-m", "1025"}, "ngram_size_m = 1025"},
      // SpeculativeConfig::Validate's own checks, once every layer is in.
      {{"--speculative", "ngram", "--draft-max", "2", "--draft-min", "3"}, "draft_min must be in [0, draft_max]"},
      {{"--speculative", "draft"}, "speculative = draft needs draft_model"},
      // What would be taken and not used.
      {{"--draft-model", "small.gguf"}, "draft_model is set, but speculative is off"},
      {{"--speculative", "mtp", "--draft-model", "small.gguf"}, "draft_model is set, but speculative is mtp"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"-m", "m"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = Parse(args);
    ASSERT_FALSE(r.has_value()) << c.expect;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << r.error().message();
  }
}

TEST(Config, SyntheticAcceptanceNeedsBenchmark) {
  const std::string refusal =
      "--spec-synth-len is for benchmarks only: the text it produces is not the model's; add --benchmark to confirm";
  auto refused = Parse({"-m", "m", "--speculative", "ngram", "--spec-synth-len", "2.5"});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message(), refusal);

  auto ok = Parse({"-m", "m", "--speculative", "ngram", "--spec-synth-len=2.5", "--benchmark"});
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_DOUBLE_EQ(ok->config.engine.speculative.synthetic_acceptance_length, 2.5);
  auto before = Parse({"-m", "m", "--benchmark", "--speculative", "mtp", "--spec-synth-len", "3"});
  ASSERT_TRUE(before.has_value()) << before.error().ToString();
  EXPECT_DOUBLE_EQ(before->config.engine.speculative.synthetic_acceptance_length, 3);

  // --benchmark alone changes nothing.
  auto alone = Parse({"-m", "m", "--benchmark"});
  ASSERT_TRUE(alone.has_value()) << alone.error().ToString();
  EXPECT_EQ(alone->config.engine.speculative.synthetic_acceptance_length, 0);
  EXPECT_EQ(alone->config.engine.speculative.mode, engine::SpeculativeMode::kOff);

  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const Case cases[] = {
      {{"--spec-synth-len", "2", "--benchmark"}, "--spec-synth-len needs speculative decoding on"},
      {{"--speculative", "ngram", "--spec-synth-len", "x", "--benchmark"}, "--spec-synth-len x: not a number"},
      {{"--speculative", "ngram", "--spec-synth-len", "0.5", "--benchmark"}, "--spec-synth-len 0.5: must be in [1, draft_max + 1]"},
      // draft_max 4: at most 5 tokens per step can be accepted (the drafts and the target's own).
      {{"--speculative", "ngram", "--spec-synth-len", "6", "--benchmark"}, "the synthetic acceptance length must be in [1, draft_max + 1]"},
      {{"--speculative", "ngram", "--spec-synth-len"}, "option '--spec-synth-len' needs a value"},
      {{"--benchmark=yes"}, "--benchmark takes no value"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"-m", "m"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = Parse(args);
    ASSERT_FALSE(r.has_value()) << c.expect;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << r.error().message();
  }
  // Neither a config-file key nor an environment variable.
  std::string toml = WriteToml("model_path = \"m\"\nspec_synth_len = 2\n");
  auto from_file = Parse({"--config", toml});
  ASSERT_FALSE(from_file.has_value());
  EXPECT_NE(from_file.error().message().find("unknown key 'spec_synth_len'"), std::string::npos);
  ::unlink(toml.c_str());
}

TEST(Config, DraftModelIsAPathOrAModelName) {
  const std::string file = "/tmp/llmd_config_test_draft_" + std::to_string(::getpid()) + ".gguf";
  std::ofstream(file) << "x";
  auto path = [](const DaemonConfig& c) {
    auto r = DraftModelPath(c);
    return r.has_value() ? *r : "error: " + r.error().message();
  };
  auto parse = [](std::vector<std::string> args) {
    auto r = Parse(std::move(args));
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.has_value() ? r->config : DaemonConfig();
  };
  const DaemonConfig by_name = parse({"-m", "big.gguf", "--models", "small=/models/small.gguf",
                                      "--speculative", "draft", "--draft-model", "small"});
  EXPECT_EQ(path(by_name), "/models/small.gguf");
  const DaemonConfig by_path = parse({"-m", "big.gguf", "--speculative", "draft", "--draft-model", file});
  EXPECT_EQ(path(by_path), file);
  const DaemonConfig missing = parse({"-m", "big.gguf", "--models", "small=/models/small.gguf",
                                      "--speculative", "draft", "--draft-model", "/nonexistent/draft.gguf"});
  auto r = DraftModelPath(missing);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "draft_model '/nonexistent/draft.gguf' is neither a file nor one of the models (big, small)");
  EXPECT_EQ(path(parse({"-m", "big.gguf", "--speculative", "ngram"})), "");
  ::unlink(file.c_str());
}

// TCP needs no API key (loopback peers are identified by UID), but it needs room for
// identified peers beside the connections that have not shown who they are.
TEST(Config, TcpListenersNeedNoKeyButRoomBesideTheUnidentifiedPool) {
  auto keyless = Parse({"-m", "m", "--http-listen", "127.0.0.1:0", "--ollama-listen", "127.0.0.1:0"});
  ASSERT_TRUE(keyless.has_value()) << keyless.error().ToString();
  EXPECT_EQ(keyless->config.http_unidentified_connections, 8u);
  EXPECT_EQ(keyless->config.http_header_timeout_ms, 2000u);
  auto tight = Parse({"-m", "m", "--http-listen", "127.0.0.1:0", "--http-max-connections", "8"});
  ASSERT_FALSE(tight.has_value());
  EXPECT_NE(tight.error().message().find("http_unidentified_connections (8) must be less than http_max_connections (8)"),
            std::string::npos)
      << tight.error().message();
  EXPECT_TRUE(Parse({"-m", "m", "--http-max-connections", "8"}).has_value()) << "no TCP: the pool is unused";
  auto set = Parse({"-m", "m", "--http-listen", "127.0.0.1:0", "--http-max-connections", "8",
                    "--http-unidentified-connections", "2", "--http-header-timeout-ms", "500"});
  ASSERT_TRUE(set.has_value()) << set.error().ToString();
  EXPECT_EQ(set->config.http_unidentified_connections, 2u);
  EXPECT_EQ(set->config.http_header_timeout_ms, 500u);
}

TEST(Config, ModelAdminsHubUrlAndPullLimit) {
  auto r = Parse({"--model", "m.gguf", "--admin-uid", "1000,1001", "--hub-url", "http://127.0.0.1:8080/"},
                 {{"LLMD_ADMIN_GIDS", "50"}, {"LLMD_PULL_MAX_MB", "1024"}});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const DaemonConfig& c = r->config;
  EXPECT_EQ(c.admin_uids, (std::vector<uint32_t>{1000, 1001}));
  EXPECT_EQ(c.admin_gids, (std::vector<uint32_t>{50}));
  EXPECT_EQ(c.hub_url, "http://127.0.0.1:8080") << "the trailing '/' dropped";
  EXPECT_EQ(c.pull_max_mb, 1024u);
  EXPECT_TRUE(IsModelAdmin(c, 0, 0)) << "root always";
  EXPECT_TRUE(IsModelAdmin(c, 1001, 7));
  EXPECT_TRUE(IsModelAdmin(c, 2000, 50)) << "by primary gid";
  EXPECT_FALSE(IsModelAdmin(c, 2000, 51));
  EXPECT_FALSE(IsModelAdmin(c, std::nullopt, 50)) << "no known uid: never";
  EXPECT_FALSE(IsModelAdmin(DaemonConfig{}, 1000, 1000)) << "by default root only";
  auto bad = Parse({"--model", "m.gguf", "--hub-url", "ftp://x"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("hub_url"), std::string::npos) << bad.error().message();
  EXPECT_FALSE(Parse({"--model", "m.gguf", "--pull-max-mb", "0"}).has_value());
}

TEST(Config, HelpListsTheSpeculativeKeysAndTheBenchmarkFlags) {
  auto help = Parse({"--help"});
  ASSERT_TRUE(help.has_value());
  for (const char* text : {"--speculative VALUE", "key speculative, env LLMD_SPECULATIVE", "--draft-model VALUE",
                           "--draft-max VALUE", "--draft-min VALUE", "--draft-p-min VALUE", "--ngram-kind VALUE",
                           "--ngram-size-n VALUE", "--ngram-size-m VALUE", "--spec-synth-len L", "--benchmark"}) {
    EXPECT_NE(help->output.find(text), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace llmd::config
