#include "engine/llama/llama_drafter.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "common.h"
#include "engine/llama/llama_context_setup.h"
#include "format/model_file.h"
#include "speculative.h"

namespace llmd::engine {
namespace {

Result<common_speculative_type> NgramType(const std::string& kind) {
  if (kind == "simple") return COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE;
  if (kind == "map-k") return COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K;
  if (kind == "map-k4v") return COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K4V;
  if (kind == "mod") return COMMON_SPECULATIVE_TYPE_NGRAM_MOD;
  return InvalidArgumentError("ngram_kind '" + kind + "' is not one of simple, map-k, map-k4v, mod");
}

// Stricter than llama.cpp's own check (which lets the sizes differ by 128 tokens and skips
// the first five): a draft token id must mean the same text to the target.
Status CheckSameVocabulary(const llama_model* target, const llama_model* draft, const std::string& draft_path) {
  const llama_vocab* vt = llama_model_get_vocab(target);
  const llama_vocab* vd = llama_model_get_vocab(draft);
  const int32_t nt = llama_vocab_n_tokens(vt), nd = llama_vocab_n_tokens(vd);
  auto differs = [&](const std::string& what) {
    return InvalidArgumentError("draft model " + draft_path + " cannot draft for this model: its vocabulary differs (" +
                                what + "); a draft model needs the target's tokenizer");
  };
  if (llama_vocab_type(vt) != llama_vocab_type(vd)) return differs("another tokenizer type");
  if (nt != nd) return differs(std::to_string(nd) + " tokens against " + std::to_string(nt));
  if (llama_vocab_bos(vt) != llama_vocab_bos(vd) || llama_vocab_eos(vt) != llama_vocab_eos(vd)) {
    return differs("other BOS/EOS tokens");
  }
  for (int32_t t = 0; t < nt; ++t) {
    if (std::strcmp(llama_vocab_get_text(vt, t), llama_vocab_get_text(vd, t)) != 0) {
      return differs("token " + std::to_string(t) + " is another text");
    }
  }
  return Status::Ok();
}

// llama-server's synthetic acceptance (--spec-synth-len): the probability of accepting the
// draft token at each position given the earlier ones were accepted.
Result<std::vector<double>> SyntheticAcceptance(double length, int32_t draft_max) {
  common_params_speculative p;
  p.synth_len = length;
  std::vector<double> rates;
  try {
    rates = common_speculative_synth_rates_resolve(&p, draft_max);
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("synthetic acceptance: ") + e.what());
  }
  std::vector<double> conditional;
  double previous = 1.0;
  for (double rate : rates) {
    conditional.push_back(previous > 0 ? rate / previous : 0.0);
    previous = rate;
  }
  return conditional;
}

}  // namespace

Result<std::unique_ptr<LlamaDrafter>> LlamaDrafter::Create(const EngineConfig& config, llama_model* target) {
  const SpeculativeConfig& sc = config.speculative;
  LLMD_RETURN_IF_ERROR(sc.Validate());
  if (sc.mode == SpeculativeMode::kOff) return InvalidArgumentError("speculative decoding is off");
  if (sc.mode == SpeculativeMode::kMtp) LLMD_RETURN_IF_ERROR(LlamaMtp::CheckModel(target, config.model_path));
  std::unique_ptr<LlamaDrafter> d(new LlamaDrafter());
  d->target_ = target;
  d->config_ = config;
  d->info_.mode = sc.mode;
  d->info_.draft_max = sc.draft_max;
  d->info_.draft_min = sc.draft_min;
  if (sc.synthetic_acceptance_length > 0) {
    LLMD_ASSIGN_OR_RETURN(d->info_.synthetic_acceptance,
                          SyntheticAcceptance(sc.synthetic_acceptance_length, sc.draft_max));
  }
  const auto n = static_cast<size_t>(config.sequences);
  d->draft_held_.assign(n, {});
  d->histories_.assign(n, {});
  d->results_.assign(n, {});
  if (sc.mode == SpeculativeMode::kDraft) {
    // The same pre-check as the target: a bad file is an error, never a crash.
    LLMD_RETURN_IF_ERROR(format::InspectModelFile(sc.draft_model_path).error());
    llama_model_params mp = llama_model_default_params();
    mp.load_mode = config.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.n_gpu_layers = config.gpu_layers == 0 ? 0 : -1;  // beside the target: on its devices when it offloads
    try {
      d->draft_model_.reset(llama_model_load_from_file(sc.draft_model_path.c_str(), mp));
    } catch (const std::exception& e) {
      return CorruptionError(sc.draft_model_path + ": llama.cpp could not load the draft model: " + e.what());
    }
    if (!d->draft_model_) return CorruptionError(sc.draft_model_path + ": llama.cpp could not load the draft model");
    if (llama_model_is_recurrent(d->draft_model_.get()) || llama_model_is_hybrid(d->draft_model_.get())) {
      return InvalidArgumentError("draft model " + sc.draft_model_path +
                                  " has recurrent memory; a draft model must be attention-only (dense), so that "
                                  "it can drop its guesses again");
    }
    LLMD_RETURN_IF_ERROR(CheckSameVocabulary(target, d->draft_model_.get(), sc.draft_model_path));
    char desc[256];
    llama_model_desc(d->draft_model_.get(), desc, sizeof desc);
    d->info_.draft_model = desc;
  } else if (sc.mode == SpeculativeMode::kNgram) {
    LLMD_RETURN_IF_ERROR(d->MakeSpeculative());  // n-grams need no context: made once
  }
  return d;
}

Status LlamaDrafter::AttachTarget(llama_context* target_ctx, ggml_threadpool* threadpool) {
  if (config_.speculative.mode != SpeculativeMode::kMtp) return Status::Ok();
  mtp_.reset();
  LLMD_ASSIGN_OR_RETURN(mtp_, LlamaMtp::Create(config_, target_, target_ctx, threadpool));
  return Status::Ok();
}

Status LlamaDrafter::AfterTargetDecode(const std::vector<DecodeItem>& items) {
  return mtp_ ? mtp_->AfterDecode(items) : Status::Ok();
}

void LlamaDrafter::TruncateTarget(int32_t sequence, int32_t position) {
  if (mtp_) mtp_->Truncate(sequence, position);
}

void LlamaDrafter::CopyTarget(int32_t src, int32_t dst) {
  if (mtp_) mtp_->Copy(src, dst);
}

size_t LlamaDrafter::target_state_bytes() const { return mtp_ ? mtp_->state_bytes() : 0; }

std::string LlamaDrafter::SaveTargetState(int32_t sequence) const {
  return mtp_ ? mtp_->SaveState(sequence) : std::string();
}

Status LlamaDrafter::RestoreTargetState(int32_t sequence, std::string_view state) {
  return mtp_ ? mtp_->RestoreState(sequence, state) : Status::Ok();
}

uint64_t LlamaDrafter::context_bytes() const { return context_bytes_ + (mtp_ ? mtp_->context_bytes() : 0); }

LlamaDrafter::~LlamaDrafter() {
  common_speculative_free(spec_);
  draft_ctx_.reset();
}

void LlamaDrafter::ReleaseWorkingMemory() {
  if (draft_model_) {
    common_speculative_free(spec_);  // it points at the draft context
    spec_ = nullptr;
  }
  draft_ctx_.reset();
  mtp_.reset();
  context_bytes_ = 0;
  for (auto& held : draft_held_) held.clear();
}

uint64_t LlamaDrafter::weight_bytes() const {
  return draft_model_ ? llama_model_size(draft_model_.get()) : 0;
}

Status LlamaDrafter::MakeDraftContext() {
  // As many tokens per sequence as the target holds, one guess per sequence a step.
  const llama_context_params cp = SequenceContextParams(config_);
  try {
    draft_ctx_.reset(llama_init_from_model(draft_model_.get(), cp));
  } catch (const std::exception& e) {
    return ResourceExhaustedError(std::string("could not create the draft model's context: ") + e.what());
  }
  if (!draft_ctx_) return ResourceExhaustedError("could not create the draft model's context (out of memory?)");
  context_bytes_ = llama_state_get_size(draft_ctx_.get());
  return Status::Ok();
}

Status LlamaDrafter::MakeSpeculative() {
  common_params_speculative p;
  const SpeculativeConfig& sc = config_.speculative;
  if (sc.mode == SpeculativeMode::kNgram) {
    LLMD_ASSIGN_OR_RETURN(common_speculative_type type, NgramType(sc.ngram_kind));
    p.types = {type};
    common_params_speculative_ngram_map map;
    map.size_n = static_cast<uint16_t>(sc.ngram_size_n);
    map.size_m = static_cast<uint16_t>(sc.ngram_size_m);
    p.ngram_simple = p.ngram_map_k = p.ngram_map_k4v = map;
    p.ngram_mod.n_match = sc.ngram_size_n;
    p.ngram_mod.n_max = sc.draft_max;
    p.ngram_mod.n_min = std::max(1, sc.draft_min);
  } else {
    p.types = {COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE};
    p.draft.n_max = sc.draft_max;
    p.draft.n_min = 0;  // the scheduler applies draft_min (the request's too)
    p.draft.p_min = sc.draft_p_min;
    p.draft.ctx_dft = draft_ctx_.get();
    // Read only while the implementation is made (its own vocabulary check), never kept in use.
    p.draft.ctx_tgt = draft_ctx_.get();
  }
  try {
    spec_ = common_speculative_init(p, static_cast<uint32_t>(config_.sequences));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("speculative decoding could not start: ") + e.what());
  }
  if (spec_ == nullptr) return InternalError("speculative decoding could not start");
  return Status::Ok();
}

void LlamaDrafter::Begin(int32_t sequence, std::span<const TokenId> prompt) {
  if (spec_ == nullptr) return;  // a draft model's drafter: made at the first Draft, and has nothing to index
  common_speculative_begin(spec_, sequence, std::vector<llama_token>(prompt.begin(), prompt.end()));
}

Status LlamaDrafter::CatchUp(const std::vector<DraftRequest>& requests) {
  llama_memory_t mem = llama_get_memory(draft_ctx_.get());
  std::vector<std::pair<int32_t, size_t>> from;  // sequence, first position to decode
  size_t total = 0;
  for (const DraftRequest& r : requests) {
    auto& held = draft_held_[r.sequence];
    const auto mismatch = std::mismatch(held.begin(), held.end(), r.history.begin(), r.history.end());
    size_t common = static_cast<size_t>(mismatch.first - held.begin());
    if (common < held.size() && !llama_memory_seq_rm(mem, r.sequence, static_cast<llama_pos>(common), -1)) {
      llama_memory_seq_rm(mem, r.sequence, -1, -1);
      common = 0;
    }
    held.resize(common);
    from.emplace_back(r.sequence, common);
    total += r.history.size() - common;
  }
  if (total == 0) return Status::Ok();
  const auto capacity = static_cast<int32_t>(llama_n_batch(draft_ctx_.get()));
  llama_batch batch = llama_batch_init(capacity, 0, 1);
  Status status = Status::Ok();
  auto flush = [&] {
    if (batch.n_tokens == 0 || !status.ok()) return;
    if (int32_t rc = llama_decode(draft_ctx_.get(), batch); rc != 0) {
      status = InternalError("the draft model's decode failed with code " + std::to_string(rc));
    }
    batch.n_tokens = 0;
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    for (size_t at = from[i].second; at < r.history.size(); ++at) {
      if (batch.n_tokens == capacity) flush();
      const int32_t k = batch.n_tokens++;
      batch.token[k] = r.history[at];
      batch.pos[k] = static_cast<llama_pos>(at);
      batch.n_seq_id[k] = 1;
      batch.seq_id[k][0] = r.sequence;
      batch.logits[k] = false;
    }
  }
  flush();
  llama_batch_free(batch);
  for (const DraftRequest& r : requests) {
    if (status.ok()) {
      draft_held_[r.sequence].assign(r.history.begin(), r.history.end());
    } else {
      // What the failed decode kept is unknown: start these sequences over next time.
      llama_memory_seq_rm(mem, r.sequence, -1, -1);
      draft_held_[r.sequence].clear();
    }
  }
  return status;
}

Status LlamaDrafter::Draft(std::vector<DraftRequest>* requests, ggml_threadpool* threadpool) {
  if (requests->empty()) return Status::Ok();
  if (config_.speculative.mode == SpeculativeMode::kMtp) {
    return mtp_ ? mtp_->Draft(requests) : InternalError("the MTP layer has no context");
  }
  const bool draft_model = config_.speculative.mode == SpeculativeMode::kDraft;
  if (draft_model && !draft_ctx_) {
    LLMD_RETURN_IF_ERROR(MakeDraftContext());
    if (threadpool != nullptr) llama_attach_threadpool(draft_ctx_.get(), threadpool, threadpool);
  }
  if (spec_ == nullptr) LLMD_RETURN_IF_ERROR(MakeSpeculative());
  if (draft_model) LLMD_RETURN_IF_ERROR(CatchUp(*requests));
  for (DraftRequest& r : *requests) {
    const auto seq = static_cast<size_t>(r.sequence);
    histories_[seq].assign(r.history.begin(), r.history.end());
    results_[seq].clear();
    common_speculative_get_draft_params(spec_, r.sequence) = {
        /*.drafting=*/true,
        /*.n_max=*/r.max_tokens,
        /*.pos0=*/static_cast<llama_pos>(r.history.size()),
        /*.id_last=*/r.last,
        /*.prompt=*/&histories_[seq],
        /*.result=*/&results_[seq],
    };
  }
  common_speculative_draft(spec_);
  llama_memory_t mem = draft_model ? llama_get_memory(draft_ctx_.get()) : nullptr;
  for (DraftRequest& r : *requests) {
    const auto seq = static_cast<size_t>(r.sequence);
    r.draft = results_[seq];
    if (r.draft.size() > static_cast<size_t>(r.max_tokens)) r.draft.resize(static_cast<size_t>(r.max_tokens));
    if (!draft_model) continue;
    // The draft model decoded `last` and its guesses but the final one; what of that the target
    // accepts is kept, the rest dropped at the next catch-up.
    auto& held = draft_held_[seq];
    held.push_back(r.last);
    held.insert(held.end(), results_[seq].begin(), results_[seq].end());
    const llama_pos last_held = llama_memory_seq_pos_max(mem, r.sequence);
    const size_t decoded = last_held < 0 ? 0 : static_cast<size_t>(last_held) + 1;
    if (decoded < r.history.size() || decoded > held.size()) {
      llama_memory_seq_rm(mem, r.sequence, static_cast<llama_pos>(r.history.size()), -1);
      held.resize(r.history.size());
    } else {
      held.resize(decoded);
    }
  }
  return Status::Ok();
}

void LlamaDrafter::Accept(int32_t sequence, int32_t accepted) {
  if (mtp_) mtp_->Accept(sequence, accepted);
  if (spec_ == nullptr) return;
  common_speculative_accept(spec_, sequence, static_cast<uint16_t>(accepted));
}

}  // namespace llmd::engine
