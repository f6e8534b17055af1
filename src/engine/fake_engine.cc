#include "engine/fake_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "chat/text_safety.h"
#include "common/utf8.h"

namespace llmd::engine {
namespace {

constexpr int32_t kVocabSize = 256 + FakeEngine::kByteOffset;
constexpr auto kHoldLimit = std::chrono::seconds(10);  // a held decode never blocks longer

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "FakeEngine: fatal: %s\n", what);
  std::abort();
}

void Append(std::vector<TokenId>* out, std::string_view text) {
  for (unsigned char c : text) out->push_back(FakeEngine::ByteToken(c));
}

}  // namespace

class FakeEngine::FakeSampler final : public Sampler {
 public:
  explicit FakeSampler(FakeEngine* engine) : engine_(engine) {}
  TokenId Sample(const Output& at) override { return engine_->SampleAt(at, &generated_); }
  // The fake model is certain of every token it picks: log-probability 0, no alternative.
  TokenLogprob Logprob(const Output&, TokenId token, int32_t top) override {
    TokenLogprob lp{engine_->TokenText(token), 0.0f, {}};
    if (top > 0) lp.top.emplace_back(lp.text, 0.0f);
    return lp;
  }

 private:
  FakeEngine* engine_;
  int32_t generated_ = 0;
};

std::vector<TokenId> FakeEngine::Bytes(std::string_view text) {
  std::vector<TokenId> out;
  Append(&out, text);
  return out;
}

FakeEngine::FakeEngine(FakeEngineOptions options) : options_(std::move(options)) {
  info_.architecture = "fake";
  info_.description = options_.memory == FakeMemory::kRecurrent ? "fake recurrent" : "fake attention";
  info_.context_tokens = options_.context_tokens;
  info_.pool_tokens = options_.pool_tokens;
  info_.vocab_size = kVocabSize;
  info_.has_chat_template = true;
  info_.sequences = options_.sequences;
  info_.fingerprint = options_.memory == FakeMemory::kRecurrent ? 0xFA4E00000002ull : 0xFA4E00000001ull;
  if (options_.memory == FakeMemory::kRecurrent) {
    info_.memory = MemoryCapabilities{.partial_truncation = false, .state_checkpoints = true, .sequence_copy = true};
  } else {
    info_.memory = MemoryCapabilities{.partial_truncation = true, .state_checkpoints = false, .sequence_copy = true};
  }
  info_.memory.sequence_copy = options_.sequence_copy;
  info_.memory.rollback_tokens = options_.memory == FakeMemory::kRecurrent ? options_.rollback_tokens : 0;
  info_.memory.decode_shape_tokens = options_.memory == FakeMemory::kRecurrent ? options_.ubatch_tokens : 0;
  info_.memory.prompt_call_tokens = options_.prompt_call_tokens;
  info_.memory.prompt_calls_apart = options_.prompt_calls_apart;
  info_.memory.stream_per_sequence = options_.stream_per_sequence;
  if (options_.draft_max > 0) {
    info_.speculative.mode = SpeculativeMode::kDraft;
    info_.speculative.draft_max = options_.draft_max;
    info_.speculative.draft_model = "fake";
    info_.speculative.synthetic_acceptance = options_.synthetic_acceptance;
  }
  drafted_.resize(static_cast<size_t>(options_.sequences));
  rollback_floor_.resize(static_cast<size_t>(options_.sequences));
  info_.placement = {DevicePlacement{.device = "CPU"}};
  memory_.resize(static_cast<size_t>(options_.sequences));
  pieces_.resize(memory_.size());
  sampled_.resize(memory_.size());
  fail_next_ = options_.fail_next_decodes;
}

FakeEngine::~FakeEngine() = default;

Status FakeEngine::Load(const EngineConfig&) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& m : memory_) m.clear();
  for (auto& p : pieces_) p.clear();
  for (auto& s : sampled_) s = Sampled();
  last_batch_.clear();
  loaded_ = true;
  return Status::Ok();
}

bool FakeEngine::loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_;
}

void FakeEngine::ReleaseWorkingMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!working_memory_) return;
  for (auto& m : memory_) m.clear();
  for (auto& p : pieces_) p.clear();
  std::fill(rollback_floor_.begin(), rollback_floor_.end(), 0);
  last_batch_.clear();
  working_memory_ = false;
  ++releases_;
}

MemoryUse FakeEngine::memory_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  MemoryUse use;
  use.weights = {.reserved = 1 << 20, .resident = 1 << 20};
  use.working_memory = working_memory_;
  if (!working_memory_) return use;
  use.kv.reserved = static_cast<uint64_t>(options_.context_tokens) * memory_.size();
  for (const auto& m : memory_) use.kv.resident += m.size();
  use.compute = {.reserved = 1 << 16, .resident = 1 << 16};
  return use;
}

int64_t FakeEngine::working_memory_releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return releases_;
}

void FakeEngine::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& m : memory_) m.clear();
  for (auto& p : pieces_) p.clear();
  last_batch_.clear();
  loaded_ = false;
}

// --- Tokenizer and prompts.

Result<std::vector<TokenId>> FakeEngine::Tokenize(std::string_view text, bool, bool) const {
  return Bytes(text);
}

Result<std::string> FakeEngine::Detokenize(const std::vector<TokenId>& tokens, bool render_special) const {
  std::string out;
  for (TokenId t : tokens) {
    if (t < 0 || t >= kVocabSize) return InvalidArgumentError("token " + std::to_string(t) + " is out of the vocabulary");
    if (t >= kByteOffset) {
      out.push_back(static_cast<char>(t - kByteOffset));
    } else if (render_special) {
      out += t == kMessageStart ? "<|start|>" : t == kEndOfGeneration ? "<|end|>" : "<|ctrl" + std::to_string(t) + "|>";
    }
  }
  return out;
}

std::string FakeEngine::TokenText(TokenId token) const {
  if (token < kByteOffset || token >= kVocabSize) return "";
  return std::string(1, static_cast<char>(token - kByteOffset));
}

Result<std::vector<TokenId>> FakeEngine::Message(std::string_view role, std::string_view content, bool user_text,
                                                 bool sanitize) const {
  std::string text(content);
  if (user_text && sanitize) {
    auto clean = chat::SanitizeUserInput(content);
    if (!clean.has_value()) return clean.error();
    text = std::move(*clean);
  } else if (size_t bad = FindInvalidUtf8(content); bad != std::string_view::npos) {
    return InvalidArgumentError("invalid UTF-8 at byte " + std::to_string(bad));
  }
  std::vector<TokenId> out{kMessageStart};
  Append(&out, role);
  Append(&out, "\n");
  Append(&out, text);
  return out;
}

Result<std::vector<TokenId>> FakeEngine::ChatPrompt(std::string_view system, std::string_view user,
                                                    bool sanitize) const {
  LLMD_ASSIGN_OR_RETURN(std::vector<TokenId> out, Message("system", system, false, sanitize));
  LLMD_ASSIGN_OR_RETURN(std::vector<TokenId> turn, NextTurnPrompt(system, user, sanitize));
  out.insert(out.end(), turn.begin(), turn.end());
  return out;
}

Result<std::vector<TokenId>> FakeEngine::NextTurnPrompt(std::string_view, std::string_view user, bool sanitize) const {
  LLMD_ASSIGN_OR_RETURN(std::vector<TokenId> out, Message("user", user, true, sanitize));
  out.push_back(kMessageStart);
  Append(&out, "assistant\n");
  return out;
}

Result<ChatPlan> FakeEngine::ConversationPrompt(const std::vector<chat::Message>& messages, const ChatFormat& format,
                                                bool sanitize) const {
  if (!format.plain()) return UnimplementedError("the fake engine has no tools, schemas or thinking");
  ChatPlan plan;
  std::vector<TokenId>& out = plan.prompt;
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return InvalidArgumentError("unknown message role '" + m.role + "'");
    }
    LLMD_ASSIGN_OR_RETURN(std::vector<TokenId> piece, Message(m.role, m.content, m.role == "user", sanitize));
    out.insert(out.end(), piece.begin(), piece.end());
  }
  out.push_back(kMessageStart);
  Append(&out, "assistant\n");
  return plan;
}

Result<std::vector<TokenId>> FakeEngine::CompletionPrompt(std::string_view prompt) const {
  if (size_t bad = FindInvalidUtf8(prompt); bad != std::string_view::npos) {
    return InvalidArgumentError("invalid UTF-8 at byte " + std::to_string(bad));
  }
  return Bytes(prompt);
}

// --- Decoding and sampling.

Status FakeEngine::CheckSequence(int32_t sequence) const {
  if (sequence < 0 || sequence >= static_cast<int32_t>(memory_.size())) {
    return InvalidArgumentError("sequence " + std::to_string(sequence) + " out of range");
  }
  return Status::Ok();
}

Status FakeEngine::Decode(const std::vector<DecodeItem>& items, const std::function<bool()>* stop) {
  if (options_.decode_cost_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.decode_cost_ms));
  if (options_.clock != nullptr) {
    options_.clock->Advance(options_.step_ms + options_.item_ms * static_cast<int64_t>(items.size()));
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (hold_) {
    const uint64_t epoch = release_epoch_;
    held_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, kHoldLimit, [&] { return release_epoch_ != epoch; });
  }
  auto fail = [&](Status st) {
    failed_batches_.push_back(items);
    last_batch_.clear();
    return st;
  };
  if (stop != nullptr && (*stop)()) {
    stopped_batches_.push_back(items);
    last_batch_.clear();
    return CancelledError("the decode call was stopped");
  }
  if (!loaded_) return fail(UnavailableError("no model loaded"));
  if (items.empty()) return fail(InvalidArgumentError("empty batch"));
  if (fail_next_ > 0) {
    --fail_next_;
    return fail(InternalError("injected decode failure"));
  }
  // Validate everything first: a failed call changes nothing.
  std::vector<size_t> length(memory_.size());
  for (size_t s = 0; s < memory_.size(); ++s) length[s] = memory_[s].size();
  for (const auto& item : items) {
    if (Status st = CheckSequence(item.sequence); !st.ok()) return fail(st);
    if (item.token < 0 || item.token >= kVocabSize) {
      return fail(InvalidArgumentError("token " + std::to_string(item.token) + " is out of the vocabulary"));
    }
    if (item.token == options_.poison_token) return fail(InternalError("poison token decoded"));
    size_t& n = length[static_cast<size_t>(item.sequence)];
    if (item.position < 0 || static_cast<size_t>(item.position) != n) {
      return fail(InternalError("inconsistent sequence positions: sequence " + std::to_string(item.sequence) +
                                " holds " + std::to_string(n) + " tokens, item at position " +
                                std::to_string(item.position)));
    }
    if (item.position >= options_.context_tokens) return fail(ResourceExhaustedError("context full"));
    ++n;
  }
  if (options_.pool_tokens > 0 && TokensHeld() + items.size() > static_cast<size_t>(options_.pool_tokens)) {
    return fail(ResourceExhaustedError("no room in the memory pool: " + std::to_string(TokensHeld()) + " of " +
                                       std::to_string(options_.pool_tokens) + " tokens held, " +
                                       std::to_string(items.size()) + " more asked"));
  }
  for (size_t s = 0; s < memory_.size(); ++s) {
    if (length[s] != memory_[s].size()) {
      rollback_floor_[s] = std::max(memory_[s].size(), length[s] - std::min<size_t>(length[s], options_.rollback_tokens));
    }
  }
  const std::vector<int32_t> pieces = Pieces(items);
  for (size_t i = 0; i < items.size(); ++i) {
    const DecodeItem& item = items[i];
    auto s = static_cast<size_t>(item.sequence);
    memory_[s].push_back(item.token);
    pieces_[s].push_back(pieces[i]);
    ++decoded_tokens_;
    const Drafted& d = drafted_[s];
    const auto in_draft = static_cast<size_t>(item.position - d.position);
    if (sampled_[s].position == item.position && sampled_[s].token == item.token) {
      sampled_[s] = Sampled();  // a generated token fed back
    } else if (d.position >= 0 && item.position >= d.position && in_draft < d.tokens.size() &&
               d.tokens[in_draft] == item.token) {
      ++draft_tokens_decoded_;
    } else {
      ++prompt_tokens_decoded_;
    }
  }
  last_batch_ = items;
  batches_.push_back(items);
  working_memory_ = true;
  return Status::Ok();
}

TokenId FakeEngine::NextToken(const std::vector<TokenId>& history) {
  return NextToken(history, std::vector<int32_t>(history.size(), 1));
}

TokenId FakeEngine::NextToken(const std::vector<TokenId>& history, const std::vector<int32_t>& pieces) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (size_t i = 0; i < history.size(); ++i) {
    h ^= static_cast<uint32_t>(history[i]);
    h *= 1099511628211ull;
    if (i < pieces.size() && pieces[i] > 1) {  // the chunked kernel's rounding, not the one-token one's
      h ^= static_cast<uint64_t>(pieces[i]) << 32;
      h *= 1099511628211ull;
    }
  }
  h ^= h >> 29;
  return ByteToken(static_cast<unsigned char>('a' + h % 26));
}

// llama.cpp's split_equal: each piece takes the same number of tokens from every sequence
// that has some left, at most ubatch_tokens in all; so a sequence prefilling beside one-token
// decodes has its chunk cut into 1 and the rest.
std::vector<int32_t> FakeEngine::Pieces(const std::vector<DecodeItem>& items) const {
  std::vector<int32_t> pieces(items.size(), 1);
  std::vector<int32_t> order;  // sequences, in order of first appearance
  std::vector<std::vector<size_t>> of(memory_.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto& list = of[static_cast<size_t>(items[i].sequence)];
    if (list.empty()) order.push_back(items[i].sequence);
    list.push_back(i);
  }
  std::vector<size_t> next(memory_.size(), 0);
  while (true) {
    std::vector<int32_t> active;
    size_t n = SIZE_MAX;
    for (int32_t s : order) {
      const size_t left = of[static_cast<size_t>(s)].size() - next[static_cast<size_t>(s)];
      if (left == 0) continue;
      active.push_back(s);
      n = std::min(n, left);
    }
    if (active.empty()) break;
    n = std::min(n, std::max<size_t>(1, static_cast<size_t>(options_.ubatch_tokens) / active.size()));
    for (int32_t s : active) {
      for (size_t k = 0; k < n; ++k) pieces[of[static_cast<size_t>(s)][next[static_cast<size_t>(s)]++]] = static_cast<int32_t>(n);
    }
  }
  return pieces;
}

struct FakeEngine::FakeKeptOutput final : KeptOutput {
  std::vector<TokenId> history;
  std::vector<int32_t> pieces;
};

std::shared_ptr<const KeptOutput> FakeEngine::KeepOutput(int32_t output_index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (output_index < 0 || static_cast<size_t>(output_index) >= last_batch_.size()) {
    Die("KeepOutput: output index is not in the last decoded batch");
  }
  const DecodeItem& item = last_batch_[static_cast<size_t>(output_index)];
  if (!item.logits) Die("KeepOutput: the batch item has no logits");
  const auto& seq = memory_[static_cast<size_t>(item.sequence)];
  const auto& pieces = pieces_[static_cast<size_t>(item.sequence)];
  auto kept = std::make_shared<FakeKeptOutput>();
  kept->history.assign(seq.begin(), seq.begin() + item.position + 1);
  kept->pieces.assign(pieces.begin(), pieces.begin() + item.position + 1);
  return kept;
}

TokenId FakeEngine::SampleAt(const Output& at, int32_t* generated) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TokenId> history;
  std::vector<int32_t> pieces;
  int32_t sequence = at.sequence;
  if (at.kept != nullptr) {
    const auto* kept = dynamic_cast<const FakeKeptOutput*>(at.kept);
    if (kept == nullptr) Die("Sample: kept logits of another engine");
    history = kept->history;
    pieces = kept->pieces;
  } else {
    if (at.index < 0 || static_cast<size_t>(at.index) >= last_batch_.size()) {
      Die("Sample: output index is not in the last decoded batch");
    }
    const DecodeItem& item = last_batch_[static_cast<size_t>(at.index)];
    if (!item.logits) Die("Sample: the batch item has no logits");
    sequence = item.sequence;
    const auto& seq = memory_[static_cast<size_t>(sequence)];
    const auto& seq_pieces = pieces_[static_cast<size_t>(sequence)];
    history.assign(seq.begin(), seq.begin() + item.position + 1);
    pieces.assign(seq_pieces.begin(), seq_pieces.begin() + item.position + 1);
  }
  if (options_.end_after_generated > 0 && *generated >= options_.end_after_generated) return kEndOfGeneration;
  ++*generated;
  const TokenId token = ShapeSensitive() ? NextToken(history, pieces) : NextToken(history);
  if (CheckSequence(sequence).ok()) sampled_[static_cast<size_t>(sequence)] = {static_cast<int32_t>(history.size()), token};
  return token;
}

Result<std::unique_ptr<Sampler>> FakeEngine::NewSampler(const SamplingParams& params,
                                                        std::span<const TokenId> /*context*/) {
  LLMD_RETURN_IF_ERROR(params.Validate());
  return std::unique_ptr<Sampler>(std::make_unique<FakeSampler>(this));
}

// --- Sequence memory.

Status FakeEngine::TruncateSequence(int32_t sequence, int32_t position) {
  std::lock_guard<std::mutex> lock(mu_);
  LLMD_RETURN_IF_ERROR(CheckSequence(sequence));
  auto& m = memory_[static_cast<size_t>(sequence)];
  const size_t p = position < 0 ? 0 : static_cast<size_t>(position);
  if (p >= m.size()) return Status::Ok();
  const bool rollback = p >= rollback_floor_[static_cast<size_t>(sequence)];
  if (options_.memory == FakeMemory::kRecurrent && p != 0 && !rollback) {
    ++refused_;
    return UnimplementedError("recurrent memory cannot be cut at " + std::to_string(p) + " of " +
                              std::to_string(m.size()));
  }
  m.resize(p);
  pieces_[static_cast<size_t>(sequence)].resize(p);
  sampled_[static_cast<size_t>(sequence)] = Sampled();
  rollback_floor_[static_cast<size_t>(sequence)] = p;  // a rollback is single-use
  return Status::Ok();
}

Status FakeEngine::Draft(std::vector<DraftRequest>* requests) {
  std::lock_guard<std::mutex> lock(mu_);
  for (DraftRequest& r : *requests) {
    LLMD_RETURN_IF_ERROR(CheckSequence(r.sequence));
    std::vector<TokenId> history(r.history.begin(), r.history.end());
    history.push_back(r.last);
    r.draft.clear();
    const int32_t n = std::min(r.max_tokens, options_.draft_max);
    for (int32_t i = 0; i < n; ++i) {
      TokenId t = NextToken(history);
      if (options_.draft_correct >= 0 && i >= options_.draft_correct) {
        t = ByteToken(static_cast<unsigned char>('a' + (t - ByteToken('a') + 1) % 26));  // another letter
      }
      r.draft.push_back(t);
      history.push_back(t);
    }
    drafted_[static_cast<size_t>(r.sequence)] = {static_cast<int32_t>(r.history.size()) + 1, r.draft};
  }
  return Status::Ok();
}

void FakeEngine::AcceptDraft(int32_t /*sequence*/, int32_t accepted) {
  std::lock_guard<std::mutex> lock(mu_);
  accepted_reported_ += accepted;
}

int64_t FakeEngine::draft_tokens_decoded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return draft_tokens_decoded_;
}

int64_t FakeEngine::accepted_drafts_reported() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepted_reported_;
}

Status FakeEngine::CopySequence(int32_t src, int32_t dst) {
  std::lock_guard<std::mutex> lock(mu_);
  LLMD_RETURN_IF_ERROR(CheckSequence(src));
  LLMD_RETURN_IF_ERROR(CheckSequence(dst));
  if (!info_.memory.sequence_copy) {
    ++refused_;
    return UnimplementedError("sequence copies are off");
  }
  if (options_.copies_find_no_room && src != dst) {
    const auto d = static_cast<size_t>(dst);
    memory_[d].clear();
    pieces_[d].clear();
    sampled_[d] = Sampled();
    rollback_floor_[d] = 0;
    return ResourceExhaustedError("no room to copy sequence " + std::to_string(src));
  }
  if (src != dst) {
    memory_[static_cast<size_t>(dst)] = memory_[static_cast<size_t>(src)];
    pieces_[static_cast<size_t>(dst)] = pieces_[static_cast<size_t>(src)];
    sampled_[static_cast<size_t>(dst)] = Sampled();
    rollback_floor_[static_cast<size_t>(dst)] = memory_[static_cast<size_t>(dst)].size();
  }
  return Status::Ok();
}

// Each token and the piece it was decoded in, 4 bytes each, little-endian.
std::string FakeEngine::EncodeSequence(int32_t sequence) const {
  std::string out;
  auto put = [&](uint32_t u) {
    for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((u >> shift) & 0xFF));
  };
  const auto& m = memory_[static_cast<size_t>(sequence)];
  for (size_t i = 0; i < m.size(); ++i) {
    put(static_cast<uint32_t>(m[i]));
    put(static_cast<uint32_t>(pieces_[static_cast<size_t>(sequence)][i]));
  }
  return out;
}

Status FakeEngine::DecodeSequence(int32_t sequence, const std::string& state) {
  if (state.size() % 8 != 0) return CorruptionError("sequence state size is not a multiple of 8");
  auto get = [&](size_t at) {
    uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= static_cast<uint32_t>(static_cast<unsigned char>(state[at + b])) << (8 * b);
    return u;
  };
  std::vector<TokenId> tokens;
  std::vector<int32_t> pieces;
  for (size_t i = 0; i < state.size(); i += 8) {
    const auto t = static_cast<TokenId>(get(i));
    if (t < 0 || t >= kVocabSize) return CorruptionError("sequence state holds a token out of the vocabulary");
    tokens.push_back(t);
    pieces.push_back(static_cast<int32_t>(get(i + 4)));
  }
  if (static_cast<int64_t>(tokens.size()) > options_.context_tokens) return CorruptionError("sequence state too long");
  memory_[static_cast<size_t>(sequence)] = std::move(tokens);
  pieces_[static_cast<size_t>(sequence)] = std::move(pieces);
  sampled_[static_cast<size_t>(sequence)] = Sampled();
  rollback_floor_[static_cast<size_t>(sequence)] = memory_[static_cast<size_t>(sequence)].size();
  return Status::Ok();
}

size_t FakeEngine::TokensHeld() const {
  size_t held = 0;
  for (const auto& m : memory_) held += m.size();
  return held;
}

Result<std::string> FakeEngine::SaveSequenceState(int32_t sequence) {
  std::lock_guard<std::mutex> lock(mu_);
  LLMD_RETURN_IF_ERROR(CheckSequence(sequence));
  if (!info_.memory.state_checkpoints) {
    ++refused_;
    return UnimplementedError("attention memory has no state checkpoints");
  }
  return EncodeSequence(sequence);
}

Status FakeEngine::RestoreSequenceState(int32_t sequence, const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  LLMD_RETURN_IF_ERROR(CheckSequence(sequence));
  if (!info_.memory.state_checkpoints) {
    ++refused_;
    return UnimplementedError("attention memory has no state checkpoints");
  }
  return DecodeSequence(sequence, state);
}

Result<std::string> FakeEngine::ParkSequence(int32_t sequence) {
  std::lock_guard<std::mutex> lock(mu_);
  LLMD_RETURN_IF_ERROR(CheckSequence(sequence));
  std::string parked = EncodeSequence(sequence);
  memory_[static_cast<size_t>(sequence)].clear();
  pieces_[static_cast<size_t>(sequence)].clear();
  sampled_[static_cast<size_t>(sequence)] = Sampled();
  rollback_floor_[static_cast<size_t>(sequence)] = 0;
  return parked;
}

Status FakeEngine::UnparkSequence(int32_t sequence, const std::string& parked) {
  std::lock_guard<std::mutex> lock(mu_);
  LLMD_RETURN_IF_ERROR(CheckSequence(sequence));
  if (!memory_[static_cast<size_t>(sequence)].empty()) return InvalidArgumentError("unpark into a sequence that is not empty");
  const size_t tokens = parked.size() / 8;
  if (options_.pool_tokens > 0 && TokensHeld() + tokens > static_cast<size_t>(options_.pool_tokens)) {
    return ResourceExhaustedError("no room in the memory pool for a parked sequence of " + std::to_string(tokens) +
                                  " tokens");
  }
  return DecodeSequence(sequence, parked);
}

// --- Test accessors.

std::vector<std::vector<DecodeItem>> FakeEngine::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

std::vector<std::vector<DecodeItem>> FakeEngine::failed_batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_batches_;
}

std::vector<std::vector<DecodeItem>> FakeEngine::stopped_batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_batches_;
}

int64_t FakeEngine::decoded_tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decoded_tokens_;
}

int64_t FakeEngine::prompt_tokens_decoded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prompt_tokens_decoded_;
}

std::vector<TokenId> FakeEngine::history(int32_t sequence) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CheckSequence(sequence).ok()) return {};
  return memory_[static_cast<size_t>(sequence)];
}

int64_t FakeEngine::refused_operations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

void FakeEngine::FailNextDecodes(int32_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
}

void FakeEngine::HoldDecodes() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = true;
  held_ = false;
}

void FakeEngine::ReleaseDecodes() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = false;
  ++release_epoch_;
  cv_.notify_all();
}

void FakeEngine::ReleaseOneDecode() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = false;
  ++release_epoch_;
  cv_.notify_all();
}

bool FakeEngine::WaitUntilHeld(int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return held_; });
}

}  // namespace llmd::engine
