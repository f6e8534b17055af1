#include "engine/llama/llama_mtp.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "common.h"
#include "engine/llama/llama_context_setup.h"
#include "engine/llama/llama_sequence_memory.h"
#include "llama-ext.h"
#include "sampling.h"

namespace llmd::engine {

Status LlamaMtp::CheckModel(const llama_model* target, const std::string& model_path) {
  const int32_t heads = llama_model_n_layer_nextn(target);
  if (heads == 0) {
    return InvalidArgumentError("speculative = mtp needs a model with a multi-token-prediction layer "
                                "(<arch>.nextn_predict_layers); " + model_path + " has none: use draft or ngram");
  }
  if (heads > 1) {
    return InvalidArgumentError("speculative = mtp drafts with one multi-token-prediction layer; " + model_path +
                                " has " + std::to_string(heads) + " chained ones, which llmd does not drive yet");
  }
  return Status::Ok();
}

Result<std::unique_ptr<LlamaMtp>> LlamaMtp::Create(const EngineConfig& config, llama_model* target,
                                                   llama_context* target_ctx, ggml_threadpool* threadpool) {
  std::unique_ptr<LlamaMtp> m(new LlamaMtp());
  LLMD_ASSIGN_OR_RETURN(ggml_type kv_type, KvCacheType(config.kv_cache_type));
  LLMD_ASSIGN_OR_RETURN(llama_flash_attn_type fa, FlashAttnType(config.flash_attention));
  // The same tokens per sequence as the target; one guess per sequence a draft step.
  llama_context_params cp = SequenceContextParams(config);
  cp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
  cp.ctx_other = target_ctx;
  cp.n_rs_seq = 0;
  cp.flash_attn_type = fa;
  cp.type_k = cp.type_v = kv_type;
  try {
    m->ctx_.reset(llama_init_from_model(target, cp));
  } catch (const std::exception& e) {
    return ResourceExhaustedError(std::string("could not create the MTP layer's context: ") + e.what());
  }
  if (!m->ctx_) return ResourceExhaustedError("could not create the MTP layer's context (see the log lines above)");
  if (llama_get_ctx_other(m->ctx_.get()) == target_ctx) {
    // Gemma 4's assistant heads read the target's own cache; llmd keeps MTP memory apart.
    return InvalidArgumentError("speculative = mtp: this model's MTP layer shares the target's memory, which llmd "
                                "does not drive yet; use draft or ngram");
  }
  if (threadpool != nullptr) llama_attach_threadpool(m->ctx_.get(), threadpool, threadpool);
  // The target keeps the hidden state of every token of a decode (what the MTP layer pairs
  // with the next token); the MTP context, of its outputs only.
  llama_set_embeddings_nextn(target_ctx, true, /*masked=*/false);
  llama_set_embeddings_nextn(m->ctx_.get(), true, /*masked=*/true);
  m->target_ctx_ = target_ctx;
  m->n_embd_ = llama_model_n_embd_out(target);
  m->draft_max_ = config.speculative.draft_max;
  m->p_min_ = config.speculative.draft_p_min;
  for (const auto& [buft, mb] : llama_get_memory_breakdown(m->ctx_.get())) m->context_bytes_ += mb.context + mb.compute;

  const auto n_seq = static_cast<size_t>(config.sequences);
  m->sequences_.assign(n_seq, {});
  for (auto& s : m->sequences_) s.hidden.assign(static_cast<size_t>(m->n_embd_), 0.0f);
  // llama.cpp's draft-mtp guesses the most likely of the block's top 10 and stops below p_min.
  for (size_t i = 0; i < n_seq; ++i) {
    common_params_sampling sp;
    sp.no_perf = true;
    sp.top_k = 10;
    sp.samplers = {COMMON_SAMPLER_TYPE_TOP_K};
    m->samplers_.push_back(common_sampler_init(target, sp));
    if (m->samplers_.back() == nullptr) return InternalError("could not make the MTP layer's sampler");
  }
  const auto capacity = static_cast<size_t>(llama_n_batch(m->ctx_.get()));
  m->tokens_.resize(capacity);
  m->embd_.resize(capacity * static_cast<size_t>(m->n_embd_));
  m->pos_.resize(capacity);
  m->n_seq_id_.assign(capacity, 1);
  m->seq_id_storage_.resize(capacity);
  m->seq_id_.resize(capacity);
  for (size_t i = 0; i < capacity; ++i) m->seq_id_[i] = &m->seq_id_storage_[i];
  m->logits_.resize(capacity);
  m->batch_ = {0, m->tokens_.data(), m->embd_.data(), m->pos_.data(), m->n_seq_id_.data(), m->seq_id_.data(),
               m->logits_.data()};
  return m;
}

LlamaMtp::~LlamaMtp() {
  for (common_sampler* s : samplers_) common_sampler_free(s);
}

void LlamaMtp::AddToBatch(TokenId token, int32_t position, int32_t sequence, const float* hidden, bool logits) {
  const int32_t k = batch_.n_tokens++;
  tokens_[k] = token;
  pos_[k] = position;
  seq_id_storage_[k] = sequence;
  logits_[k] = logits ? 1 : 0;
  float* row = embd_.data() + static_cast<size_t>(k) * n_embd_;
  if (hidden != nullptr) {
    std::memcpy(row, hidden, sizeof(float) * static_cast<size_t>(n_embd_));
  } else {
    std::fill(row, row + n_embd_, 0.0f);  // unknown: what llama.cpp pairs a sequence's first token with
  }
}

Status LlamaMtp::Decode(int32_t n_tokens) {
  batch_.n_tokens = n_tokens;
  if (const int32_t rc = llama_decode(ctx_.get(), batch_); rc != 0) {
    return InternalError("the MTP layer's decode failed with code " + std::to_string(rc));
  }
  return Status::Ok();
}

void LlamaMtp::Forget(int32_t sequence) {
  llama_memory_seq_rm(llama_get_memory(ctx_.get()), sequence, -1, -1);
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  q.cached = 0;
  q.backlog.clear();
  q.backlog_hidden.clear();
  q.in_sync = false;
}

void LlamaMtp::AddBacklog(int32_t sequence, size_t from, size_t end) {
  const Sequence& q = sequences_[static_cast<size_t>(sequence)];
  for (size_t i = from; i < end; ++i) {
    AddToBatch(q.backlog[i].token, q.backlog[i].position, sequence,
               q.backlog_hidden.data() + i * static_cast<size_t>(n_embd_), false);
  }
}

void LlamaMtp::BacklogDecoded(int32_t sequence) {
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  q.cached = KnownEnd(q);
  q.backlog.clear();
  q.backlog_hidden.clear();
}

Status LlamaMtp::FlushBacklog(int32_t sequence) {
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  const size_t capacity = tokens_.size();
  for (size_t done = 0; done < q.backlog.size();) {
    const size_t n = std::min(capacity, q.backlog.size() - done);
    ClearBatch();
    AddBacklog(sequence, done, done + n);
    if (Status st = Decode(batch_.n_tokens); !st.ok()) {
      ClearBatch();
      Forget(sequence);
      return st;
    }
    done += n;
  }
  ClearBatch();
  BacklogDecoded(sequence);
  return Status::Ok();
}

Status LlamaMtp::FlushBacklogs(const std::vector<int32_t>& sequences) {
  const size_t capacity = tokens_.size();
  std::vector<int32_t> batched;
  Status status = Status::Ok();
  auto decode = [&] {
    if (batch_.n_tokens > 0) {
      const Status st = Decode(batch_.n_tokens);
      for (int32_t seq : batched) st.ok() ? BacklogDecoded(seq) : Forget(seq);
      if (!st.ok()) status = st;
    }
    batched.clear();
    ClearBatch();
  };
  ClearBatch();
  for (int32_t seq : sequences) {
    const Sequence& q = sequences_[static_cast<size_t>(seq)];
    if (q.backlog.empty()) continue;
    if (static_cast<size_t>(batch_.n_tokens) + q.backlog.size() > capacity) decode();
    if (q.backlog.size() > capacity) {  // alone, in pieces
      if (Status st = FlushBacklog(seq); !st.ok()) status = st;
      continue;
    }
    AddBacklog(seq, 0, q.backlog.size());
    batched.push_back(seq);
  }
  decode();
  return status;
}

Status LlamaMtp::AfterDecode(const std::vector<DecodeItem>& items) {
  if (items.empty()) return Status::Ok();
  const float* target_hidden = llama_get_embeddings_nextn(target_ctx_);
  if (target_hidden == nullptr) return InternalError("the target kept no hidden states for the MTP layer");
  const size_t row = static_cast<size_t>(n_embd_);
  // Each sequence's run of items: [first, last] in the batch.
  std::map<int32_t, std::pair<size_t, size_t>> runs;
  for (size_t k = 0; k < items.size(); ++k) {
    auto [it, fresh] = runs.try_emplace(items[k].sequence, k, k);
    if (!fresh) it->second.second = k;
  }
  Status status = Status::Ok();
  for (const auto& [seq, run] : runs) {
    Sequence& q = sequences_[static_cast<size_t>(seq)];
    const int32_t first = items[run.first].position;
    // The target's hidden states of the run's last draft_max + 1 tokens (a verified block),
    // whatever happens to the MTP cache: a rollback finds the state after the last kept token
    // among them.
    const size_t kept = std::min(run.second - run.first + 1, static_cast<size_t>(draft_max_) + 1);
    q.block_start = items[run.second + 1 - kept].position;
    q.block.assign(target_hidden + (run.second + 1 - kept) * row, target_hidden + (run.second + 1) * row);
    if (first == 0) {  // the sequence starts over: whatever was cached is stale
      if (q.cached != 0) llama_memory_seq_rm(llama_get_memory(ctx_.get()), seq, -1, -1);
      q.cached = 0;
      q.backlog.clear();
      q.backlog_hidden.clear();
      q.in_sync = true;
    }
    const bool continues = q.in_sync && KnownEnd(q) == first;
    if (q.in_sync && !continues) Forget(seq);  // never expected: the caches went apart
    if (continues) {
      for (size_t k = run.first; k <= run.second; ++k) {
        const int32_t pos = items[k].position;
        const float* h = k > run.first ? target_hidden + (k - 1) * row
                                       : (pos > 0 && q.hidden_position == pos - 1 ? q.hidden.data() : nullptr);
        q.backlog.push_back({items[k].token, pos});
        if (h != nullptr) {
          q.backlog_hidden.insert(q.backlog_hidden.end(), h, h + row);
        } else {
          q.backlog_hidden.resize(q.backlog_hidden.size() + row, 0.0f);  // what llama.cpp pairs position 0 with
        }
      }
    }
    q.hidden.assign(target_hidden + run.second * row, target_hidden + (run.second + 1) * row);
    q.hidden_position = items[run.second].position;
    // A sequence that has not drafted for long (a prompt, a paused job) catches up now and
    // then, so the backlog stays small.
    if (q.backlog.size() >= kMaxBacklog) {
      if (Status st = FlushBacklog(seq); !st.ok()) status = st;
    }
  }
  return status;
}

Status LlamaMtp::Draft(std::vector<DraftRequest>* requests) {
  struct Drafting {
    DraftRequest* request;
    int32_t output;  // its row in the batch just decoded
  };
  auto can_draft = [&](const DraftRequest& r) {
    const Sequence& q = sequences_[static_cast<size_t>(r.sequence)];
    const auto n = static_cast<int32_t>(r.history.size());
    return q.in_sync && KnownEnd(q) == n && q.hidden_position == n - 1 && n > 0 && r.max_tokens > 0;
  };
  // The backlogs first, in one decode where they fit. Not in the guesses' batch: in a batch
  // that mixes outputs with other tokens the guesses' nextn rows came out wrong (the
  // SpeculativeMtp tests caught it), so the guesses keep a batch of outputs only.
  std::vector<int32_t> catching_up;
  for (DraftRequest& r : *requests) {
    r.draft.clear();
    if (can_draft(r)) catching_up.push_back(r.sequence);
  }
  Status status = FlushBacklogs(catching_up);
  std::vector<Drafting> drafting;
  ClearBatch();
  for (DraftRequest& r : *requests) {
    if (!can_draft(r)) continue;
    common_sampler_reset(samplers_[static_cast<size_t>(r.sequence)]);
    drafting.push_back({&r, batch_.n_tokens});
    AddToBatch(r.last, static_cast<int32_t>(r.history.size()), r.sequence,
               sequences_[static_cast<size_t>(r.sequence)].hidden.data(), true);
  }
  while (!drafting.empty()) {
    if (status = Decode(batch_.n_tokens); !status.ok()) break;
    // The next step's batch: each guess with the block's own hidden state after it (read from
    // the context's outputs, so the batch storage can be refilled meanwhile).
    ClearBatch();
    std::vector<Drafting> next;
    for (const Drafting& d : drafting) {
      DraftRequest& r = *d.request;
      common_sampler* smpl = samplers_[static_cast<size_t>(r.sequence)];
      common_sampler_sample(smpl, ctx_.get(), d.output, true);
      const llama_token_data_array* cur = common_sampler_get_candidates(smpl, true);
      if (cur->size == 0 || cur->data[0].p < p_min_) continue;  // not sure enough: stop here
      const TokenId guess = cur->data[0].id;
      common_sampler_accept(smpl, guess, true);
      r.draft.push_back(guess);
      if (static_cast<int32_t>(r.draft.size()) >= std::min(r.max_tokens, draft_max_)) continue;
      next.push_back({&r, batch_.n_tokens});
      const auto at = static_cast<int32_t>(r.history.size() + r.draft.size());
      AddToBatch(guess, at, r.sequence, llama_get_embeddings_nextn_ith(ctx_.get(), d.output), true);
    }
    drafting = std::move(next);
  }
  // The guesses leave the MTP cache again: the target's verification decides what stays, and
  // AfterDecode adds it with the target's own hidden states.
  llama_memory_t mem = llama_get_memory(ctx_.get());
  for (DraftRequest& r : *requests) {
    const Sequence& q = sequences_[static_cast<size_t>(r.sequence)];
    if (q.in_sync) llama_memory_seq_rm(mem, r.sequence, q.cached, -1);
    if (!status.ok()) r.draft.clear();
  }
  return status;
}

void LlamaMtp::Accept(int32_t sequence, int32_t accepted) {
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  const auto rows = static_cast<int32_t>(q.block.size() / static_cast<size_t>(n_embd_));
  if (q.block_start < 0 || rows == 0) return;
  const int32_t i = std::clamp(accepted, 0, rows - 1);
  q.hidden.assign(q.block.begin() + static_cast<ptrdiff_t>(i) * n_embd_,
                  q.block.begin() + static_cast<ptrdiff_t>(i + 1) * n_embd_);
  q.hidden_position = q.block_start + i;
}

void LlamaMtp::Truncate(int32_t sequence, int32_t position) {
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  llama_memory_seq_rm(llama_get_memory(ctx_.get()), sequence, position, -1);
  if (position == 0) {
    q = Sequence{.hidden = std::move(q.hidden)};
    std::fill(q.hidden.begin(), q.hidden.end(), 0.0f);  // what position 0 pairs with, as in llama.cpp
    return;
  }
  q.cached = std::min(q.cached, position);
  while (!q.backlog.empty() && q.backlog.back().position >= position) q.backlog.pop_back();
  q.backlog_hidden.resize(q.backlog.size() * static_cast<size_t>(n_embd_));
  if (q.hidden_position == position - 1) return;
  const int32_t i = position - 1 - q.block_start;
  const auto rows = static_cast<int32_t>(q.block.size() / static_cast<size_t>(n_embd_));
  if (q.block_start >= 0 && i >= 0 && i < rows) {
    Accept(sequence, i);
  } else {
    q.hidden_position = -1;  // drafting resumes after the sequence's next decode
  }
}

void LlamaMtp::Copy(int32_t src, int32_t dst) {
  llama_memory_t mem = llama_get_memory(ctx_.get());
  llama_memory_seq_rm(mem, dst, -1, -1);
  // Through the per-sequence state: with a stream per sequence llama.cpp's seq_cp copies the
  // whole stream (as large as the pool), which would commit every page of it.
  if (!CopySequenceState(ctx_.get(), src, dst)) {
    // The layer holds nothing for dst, which stops drafting until its sequence is cleared
    // (as after a failed decode).
    sequences_[static_cast<size_t>(dst)] = Sequence{.in_sync = false};
    return;
  }
  sequences_[static_cast<size_t>(dst)] = sequences_[static_cast<size_t>(src)];
}

size_t LlamaMtp::state_bytes() const { return sizeof(int32_t) + sizeof(float) * static_cast<size_t>(n_embd_); }

std::string LlamaMtp::SaveState(int32_t sequence) const {
  const Sequence& q = sequences_[static_cast<size_t>(sequence)];
  std::string out(state_bytes(), '\0');
  std::memcpy(out.data(), &q.hidden_position, sizeof(int32_t));
  std::memcpy(out.data() + sizeof(int32_t), q.hidden.data(), sizeof(float) * q.hidden.size());
  return out;
}

Status LlamaMtp::RestoreState(int32_t sequence, std::string_view state) {
  if (state.size() != state_bytes()) return InternalError("a checkpoint's MTP state has the wrong size");
  Sequence& q = sequences_[static_cast<size_t>(sequence)];
  std::memcpy(&q.hidden_position, state.data(), sizeof(int32_t));
  std::memcpy(q.hidden.data(), state.data() + sizeof(int32_t), sizeof(float) * q.hidden.size());
  q.block_start = -1;
  q.block.clear();
  return Status::Ok();
}

}  // namespace llmd::engine
