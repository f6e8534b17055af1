// Speculative decoding on the real llama.cpp engine, through the scheduler: greedy output is
// token for token what it is with speculation off, for n-gram lookup and a draft model (dense
// and hybrid targets) and the hybrid model's own MTP layer, solo and four streams at once; a
// draft model that cannot draft for the target, or mtp without an MTP layer, is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string_view>
#include <map>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "gguf.h"
#include "sched/engine_worker.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

using engine::SpeculativeConfig;
using engine::SpeculativeMode;
using sched::EngineWorker;
using sched::Job;
using sched::JobChannel;
using sched::JobEvent;

constexpr int kLivenessMs = 120000;

// The tiny dense model written with another seed: the same vocabulary, other guesses.
std::string TinyOtherSeedPath() { return std::string(LLMD_TEST_MODEL_DIR) + "/tiny-seed2-q8_0.gguf"; }
// A dense tiny model with the Qwen3.5 vocabulary: a draft model for the hybrid.
std::string TinyQwen35VocabPath() { return std::string(LLMD_TEST_MODEL_DIR) + "/tiny-qwen35vocab-q8_0.gguf"; }

SpeculativeConfig Ngram() {
  SpeculativeConfig s;
  s.mode = SpeculativeMode::kNgram;
  s.draft_max = 4;
  s.ngram_size_n = 3;  // the text below repeats 3-token runs quickly
  s.ngram_size_m = 8;
  return s;
}

SpeculativeConfig DraftModel(const std::string& path, int32_t draft_max = 4) {
  SpeculativeConfig s;
  s.mode = SpeculativeMode::kDraft;
  s.draft_model_path = path;
  s.draft_max = draft_max;
  return s;
}

SpeculativeConfig Mtp() {
  SpeculativeConfig s;
  s.mode = SpeculativeMode::kMtp;
  s.draft_max = 4;
  return s;
}

Result<std::unique_ptr<engine::Engine>> Load(const std::string& model, const SpeculativeConfig& speculative) {
  auto e = engine::NewLlamaEngine();
  engine::EngineConfig c;
  c.model_path = model;
  c.context_tokens = 512;
  c.sequences = 4;
  c.threads = kEngineThreads;
  c.speculative = speculative;
  LLMD_RETURN_IF_ERROR(e->Load(c));
  return e;
}

std::unique_ptr<EngineWorker> Worker(const std::string& model, const SpeculativeConfig& speculative) {
  auto e = Load(model, speculative);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  if (!e.has_value()) return nullptr;
  sched::WorkerOptions o;
  o.admission_window_ms = 50;  // four jobs submitted together start together
  return std::make_unique<EngineWorker>(std::move(*e), o);
}

Job Chat(const std::string& user, int32_t max_tokens, const std::string& grammar = "") {
  Job job;
  job.prompt = sched::OneShotChat{"Repeat after me, again and again.", user};
  job.options.max_tokens = max_tokens;
  job.options.sampling = engine::SamplingParams::Greedy();
  job.options.sampling.ignore_eos = true;  // every run the same length
  job.options.sampling.grammar = grammar;
  return job;
}

engine::Completion Await(JobChannel& channel) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLivenessMs);
  while (std::chrono::steady_clock::now() < deadline) {
    while (auto event = channel.TryPop()) {
      if (event->type == JobEvent::Type::kDone) return std::move(event->completion);
      if (event->type == JobEvent::Type::kError) {
        ADD_FAILURE() << event->error.ToString();
        return {};
      }
    }
    channel.Wait(100);
  }
  ADD_FAILURE() << "no final event";
  return {};
}

// Runs the jobs together on `worker`; their completions in order.
std::vector<engine::Completion> RunTogether(EngineWorker& worker, std::vector<Job> jobs) {
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (auto& job : jobs) {
    channels.push_back(job.channel);
    EXPECT_TRUE(worker.Submit(std::move(job)).ok());
  }
  std::vector<engine::Completion> out;
  for (auto& c : channels) out.push_back(Await(*c));
  return out;
}

const std::vector<std::string> kUsers = {
    "one two three one two three one two three one two three",
    "red green blue red green blue red green blue red green blue",
    "alpha beta alpha beta alpha beta alpha beta alpha beta",
    "up down up down up down up down up down up down up down",
};

struct Runs {
  std::vector<engine::Completion> solo, together;
};

// Random weights never repeat themselves, so n-gram lookup would find nothing to draft: a
// grammar makes each reply repeat its prompt's phrase.
std::string Repeating(const std::string& user) {
  const std::string phrase = user.substr(0, user.find(' ', user.find(' ') + 1) + 1);  // the first two words
  return "root ::= (\"" + phrase + "\")+";
}

// Each prompt alone and then (`together`) all four at once, with `speculative`.
Runs RunAll(const std::string& model, const SpeculativeConfig& speculative, bool repeating, bool together = true) {
  constexpr int32_t kMaxTokens = 24;
  Runs run;
  auto worker = Worker(model, speculative);
  if (!worker) return run;
  auto job = [&](const std::string& u) { return Chat(u, kMaxTokens, repeating ? Repeating(u) : ""); };
  for (const auto& u : kUsers) run.solo.push_back(RunTogether(*worker, {job(u)})[0]);
  if (!together) return run;
  std::vector<Job> jobs;
  for (const auto& u : kUsers) jobs.push_back(job(u));
  run.together = RunTogether(*worker, std::move(jobs));
  return run;
}

// The reference: each prompt alone with speculation off, computed once per model and kind.
const Runs& Off(const std::string& model, bool repeating) {
  static std::map<std::pair<std::string, bool>, Runs> cache;
  auto [it, fresh] = cache.try_emplace({model, repeating});
  if (fresh) it->second = RunAll(model, {}, repeating, /*together=*/false);
  return it->second;
}

void ExpectSameTokens(const Runs& off, const Runs& on) {
  ASSERT_EQ(off.solo.size(), on.solo.size());
  ASSERT_EQ(on.together.size(), on.solo.size());
  for (size_t i = 0; i < off.solo.size(); ++i) {
    EXPECT_EQ(on.solo[i].tokens, off.solo[i].tokens) << "solo " << i;
    EXPECT_EQ(on.together[i].tokens, off.solo[i].tokens) << "together " << i;
  }
  // The four really overlapped: each started before any could have finished.
  uint64_t last_start = 0, first_end = UINT64_MAX;
  for (const auto& c : on.together) {
    last_start = std::max(last_start, c.stats.prefill_step);
    first_end = std::min<uint64_t>(first_end, c.stats.first_token_step + 4);
  }
  EXPECT_LT(last_start, first_end);
}

int64_t Drafted(const Runs& run) {
  int64_t n = 0;
  for (const auto* v : {&run.solo, &run.together}) {
    for (const auto& c : *v) n += c.stats.draft_tokens;
  }
  return n;
}

int64_t Accepted(const Runs& run) {
  int64_t n = 0;
  for (const auto* v : {&run.solo, &run.together}) {
    for (const auto& c : *v) n += c.stats.accepted_draft_tokens;
  }
  return n;
}

TEST(SpeculativeDense, NgramLookupGivesTheSameTokensSoloAndBatched) {
  const Runs& off = Off(TinyModelPath(), /*repeating=*/true);
  const Runs on = RunAll(TinyModelPath(), Ngram(), /*repeating=*/true);
  ExpectSameTokens(off, on);
  EXPECT_GT(Drafted(on), 0);
  EXPECT_GT(Accepted(on), 0);
}

TEST(SpeculativeDense, ADraftModelWithTheSameWeightsIsAcceptedAlmostAlways) {
  const Runs& off = Off(TinyModelPath(), /*repeating=*/false);
  const Runs on = RunAll(TinyModelPath(), DraftModel(TinyModelPath()), /*repeating=*/false);
  ExpectSameTokens(off, on);
  EXPECT_GT(Drafted(on), 0);
  EXPECT_GE(Accepted(on) * 10, Drafted(on) * 9);
}

TEST(SpeculativeDense, ADraftModelThatGuessesBadlyStillGivesTheTargetsTokens) {
  const Runs& off = Off(TinyModelPath(), /*repeating=*/false);
  const Runs on = RunAll(TinyModelPath(), DraftModel(TinyOtherSeedPath()), /*repeating=*/false);
  ExpectSameTokens(off, on);
  EXPECT_GT(Drafted(on), 0);
  EXPECT_LT(Accepted(on), Drafted(on));
}

TEST(SpeculativeHybrid, NgramLookupGivesTheSameTokensSoloAndBatched) {
  const Runs& off = Off(Qwen35TinyPath(), /*repeating=*/true);
  const Runs on = RunAll(Qwen35TinyPath(), Ngram(), /*repeating=*/true);
  ExpectSameTokens(off, on);
  EXPECT_GT(Drafted(on), 0);
}

TEST(SpeculativeHybrid, ADenseDraftModelGivesTheSameTokensSoloAndBatched) {
  const Runs& off = Off(Qwen35TinyPath(), /*repeating=*/false);
  const Runs on = RunAll(Qwen35TinyPath(), DraftModel(TinyQwen35VocabPath()), /*repeating=*/false);
  ExpectSameTokens(off, on);
  EXPECT_GT(Drafted(on), 0);
  EXPECT_LT(Accepted(on), Drafted(on));  // rejected tokens were taken back from the recurrent state
}

// A copy of `in` whose tokens 1000 and 1001 trade texts: a model whose ids mean other text.
// The two texts keep their lengths, so only the metadata changes and the tensor data after it
// is copied as it is.
bool WriteWithSwappedTokens(const std::string& in, const std::string& out) {
  gguf_context* g = gguf_init_from_file(in.c_str(), {.no_alloc = true, .ctx = nullptr});
  if (g == nullptr) return false;
  const int64_t key = gguf_find_key(g, "tokenizer.ggml.tokens");
  const auto n = static_cast<size_t>(gguf_get_arr_n(g, key));
  std::vector<std::string> texts;
  for (size_t i = 0; i < n; ++i) texts.emplace_back(gguf_get_arr_str(g, key, i));
  std::swap(texts[1000], texts[1001]);
  std::vector<const char*> ptrs;
  for (const auto& t : texts) ptrs.push_back(t.c_str());
  const size_t data_offset = gguf_get_data_offset(g);
  gguf_set_arr_str(g, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
  std::string meta(gguf_get_meta_size(g), '\0');
  gguf_get_meta_data(g, meta.data());
  gguf_free(g);
  std::ifstream src(in, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
  if (meta.size() != data_offset || file.size() < data_offset) return false;
  std::ofstream dst(out, std::ios::binary);
  dst << meta << std::string_view(file).substr(data_offset);
  return dst.good();
}

TEST(SpeculativeLoad, ADraftModelWithAnotherVocabularyIsRefused) {
  const std::string other = ::testing::TempDir() + "/tiny-other-vocab.gguf";
  ASSERT_TRUE(WriteWithSwappedTokens(TinyModelPath(), other));
  auto e = Load(TinyModelPath(), DraftModel(other));
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.error().message().find("vocabulary differs (token 1000 is another text)"), std::string::npos)
      << e.error().ToString();
  std::remove(other.c_str());
}

TEST(SpeculativeLoad, ARecurrentDraftModelIsRefused) {
  auto e = Load(Qwen35TinyPath(), DraftModel(Qwen35TinyPath()));
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("attention-only"), std::string::npos) << e.error().ToString();
}

TEST(SpeculativeLoad, AMissingDraftModelIsAClearError) {
  auto e = Load(TinyModelPath(), DraftModel("/nonexistent/draft.gguf"));
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("/nonexistent/draft.gguf"), std::string::npos) << e.error().ToString();
}

TEST(SpeculativeLoad, ABatchTooSmallForADraftIsRefusedOnRecurrentMemory) {
  auto e = engine::NewLlamaEngine();
  engine::EngineConfig c;
  c.model_path = Qwen35TinyPath();
  c.batch_tokens = 4;
  c.speculative = Ngram();  // draft_max 4: llama.cpp needs micro-batches of more than 5 tokens
  const Status st = e->Load(c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("batch_tokens = 4 is too small for draft_max = 4"), std::string::npos) << st.ToString();
  c.batch_tokens = 6;
  EXPECT_TRUE(e->Load(c).ok());
}

TEST(SpeculativeLoad, MtpOnAModelWithoutAnMtpLayerIsRefused) {
  SpeculativeConfig mtp;
  mtp.mode = SpeculativeMode::kMtp;
  for (const std::string& model : {Qwen35TinyPath(), TinyModelPath()}) {
    auto e = Load(model, mtp);
    ASSERT_FALSE(e.has_value()) << model;
    EXPECT_EQ(e.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.error().message().find("needs a model with a multi-token-prediction layer"), std::string::npos)
        << e.error().ToString();
  }
}

TEST(SpeculativeDense, AGrammarHoldsWithSpeculationOn) {
  const std::string grammar = "root ::= (\"one \" | \"two \" | \"three \")+";
  auto off = Worker(TinyModelPath(), {});
  auto on = Worker(TinyModelPath(), DraftModel(TinyModelPath()));
  ASSERT_TRUE(off && on);
  const auto a = RunTogether(*off, {Chat(kUsers[0], 32, grammar)})[0];
  const auto b = RunTogether(*on, {Chat(kUsers[0], 32, grammar)})[0];
  EXPECT_EQ(b.tokens, a.tokens);
  EXPECT_EQ(b.text, a.text);
  EXPECT_GT(b.stats.draft_tokens, 0);
  EXPECT_EQ(b.text.find_first_not_of("onetwhr "), std::string::npos) << b.text;
}

// Two requests with one system prompt, the second reusing its prefix, each with and without a
// stop string: the same text as with speculation off.
void ExpectPrefixReuseAndStopStringsWork(const std::string& model, const SpeculativeConfig& speculative) {
  auto off = Worker(model, {});
  auto on = Worker(model, speculative);
  ASSERT_TRUE(off && on);
  for (const auto& u : {kUsers[0], kUsers[1]}) {  // the second reuses the system prompt
    const auto a = RunTogether(*off, {Chat(u, 24)})[0];
    auto with_stop = [&] {
      Job j = Chat(u, 24);
      j.stop = {a.text.substr(a.text.size() / 2, 3)};
      return j;
    };
    const auto b = RunTogether(*on, {Chat(u, 24)})[0];
    EXPECT_EQ(b.tokens, a.tokens);
    const auto sa = RunTogether(*off, {with_stop()})[0];
    const auto sb = RunTogether(*on, {with_stop()})[0];
    EXPECT_EQ(sb.text, sa.text);
    EXPECT_LT(sb.text.size(), b.text.size());
    EXPECT_GT(sb.stats.cached_tokens, 0);
    EXPECT_GT(b.stats.draft_tokens, 0);
  }
}

TEST(SpeculativeDense, PrefixReuseAndStopStringsKeepWorking) {
  ExpectPrefixReuseAndStopStringsWork(TinyModelPath(), DraftModel(TinyModelPath()));
}

// The model's own MTP layer: the same tokens as without it, alone and four at once, and
// through prefix reuse (checkpoints carry the MTP layer's hidden state).
TEST(SpeculativeHybrid, MtpGivesTheSameTokensSoloAndBatched) {
  const Runs& off = Off(Qwen35TinyMtpPath(), /*repeating=*/false);
  const Runs on = RunAll(Qwen35TinyMtpPath(), Mtp(), /*repeating=*/false);
  ExpectSameTokens(off, on);
  EXPECT_GT(Drafted(on), 0);
}

TEST(SpeculativeHybrid, MtpKeepsPrefixReuseAndStopStrings) {
  ExpectPrefixReuseAndStopStringsWork(Qwen35TinyMtpPath(), Mtp());
}

}  // namespace
}  // namespace llmd::testing
