// Ollama's native API (/api/*) at the edge: request bodies parsed into llmd's own structs
// (a GenerationRequest for /api/chat and /api/generate) and responses rendered in Ollama's
// JSON shapes (NDJSON chunks, the final object with its durations, tags, ps, show). Nothing
// here runs a job or touches a socket; OllamaRoutes does that.
//
// Strict as the OpenAI parser is: a known field of the wrong type or out of range is
// InvalidArgument naming the field ('options.temperature' must be in 0..2); what llmd
// cannot honour (images, suffix, template, context, mirostat, load-time options such as
// num_gpu, an option it does not know) is InvalidArgument naming it too, never silently
// ignored. Unknown top-level fields are ignored (Ollama's own server ignores them); a null
// value counts as absent. Option values that only say "off" (mirostat 0, tfs_z 1,
// typical_p 1, min_p 0, repeat_last_n 64 (llmd's own window), penalize_newline true, and
// false for the load-time switches numa, low_vram, logits_all, vocab_only, use_mlock,
// embedding_only) are accepted, as is any num_keep (llmd never shifts the context) and any
// mirostat_tau / mirostat_eta (they only tune mirostat, which must be off). `truncate` is the
// overflow policy (overflow_fields.h; absent: refused when too long, unlike Ollama), and
// `shift` is accepted only as false, which is what llmd does.
//
// Thread-safety: every function is pure.
#ifndef LLMD_HTTP_OLLAMA_OLLAMA_API_H_
#define LLMD_HTTP_OLLAMA_OLLAMA_API_H_

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/types.h"
#include "format/gguf_metadata.h"
#include "http/api_error.h"
#include "http/generation_request.h"
#include "http/reply_deltas.h"
#include "llmd/result.h"
#include "sched/job.h"

namespace llmd::http {

// What /api/version answers. Clients gate features on it; 0.12.0 has everything llmd serves
// on this API (format schemas 0.5, streamed tool calls 0.8, think 0.9, think levels 0.11) and
// nothing llmd lacks that a client would then assume.
inline constexpr const char* kOllamaVersion = "0.12.0";

// What the parsers check against the running daemon.
struct OllamaLimits {
  // An explicit max_context_len, which options.num_ctx may not exceed; 0 (the automatic
  // pool): unchecked here, as the scheduler holds a request to the pool.
  int32_t context_tokens = 0;
};

// /api/chat or /api/generate, parsed.
struct OllamaGenerateRequest {
  // chat: messages (Ollama's tool_calls with object arguments become JSON text, tool
  // messages answer a call by tool_call_id or tool_name); generate: the prompt as one user
  // message after `system`, or with raw:true as the prompt itself (gen.chat false). stream
  // defaults to true as in Ollama.
  GenerationRequest gen;
  bool raw = false;
  // No messages (chat) or an empty prompt (generate): Ollama's "load the model" request,
  // answered at once with done_reason "load" (llmd's models are always loaded).
  bool load_only = false;
  std::optional<int64_t> num_ctx;  // options.num_ctx, already checked against the limit
  // keep_alive: how long the model keeps its working memory (KV cache, scratch) once idle
  // after this request; -1: until a later request says; unset: idle_release_after.
  std::optional<int64_t> keep_alive_ms;
};

Result<OllamaGenerateRequest> ParseOllamaChat(std::string_view body, const OllamaLimits& limits);
Result<OllamaGenerateRequest> ParseOllamaGenerate(std::string_view body,
                                                  const OllamaLimits& limits);

// /api/embed {model, input: string | [string], truncate, dimensions, keep_alive, options} or
// the older /api/embeddings {model, prompt, keep_alive, options}.
struct OllamaEmbedRequest {
  std::optional<std::string> model;
  std::vector<std::string> inputs;  // empty: a load request, answered with no vectors
  std::optional<int64_t> dimensions;
  std::optional<int64_t> keep_alive_ms;  // as in OllamaGenerateRequest
  std::optional<int64_t> num_ctx;        // options.num_ctx: the most tokens an input may hold
  // /api/embed's truncate: true, an input longer than the context keeps its first tokens;
  // false or absent (Ollama's default is true), it is refused with the counts: llmd cuts
  // nothing a client did not ask it to. The older /api/embeddings never truncates.
  bool truncate = false;
};
Result<OllamaEmbedRequest> ParseOllamaEmbed(std::string_view body, const OllamaLimits& limits);
Result<OllamaEmbedRequest> ParseOllamaEmbeddings(std::string_view body, const OllamaLimits& limits);

// /api/show {model (or the older name), verbose}.
struct OllamaShowRequest {
  std::string model;
  bool verbose = false;
};
Result<OllamaShowRequest> ParseOllamaShow(std::string_view body);

// --- Model facts (what Ollama's show and tags report), read by format::ReadGgufMetadata.

// Ollama's model_info: every key's value (scalars, strings up to 4 KiB, numeric arrays up to
// 1024 elements; what the metadata leaves out, such as the vocabulary, is null; f32 values in
// their shortest form), with general.parameter_count counted from the tensors when the file
// does not say it. tokenizer.chat_template is not in it (it is the show answer's template).
nlohmann::json OllamaModelInfo(const format::GgufMetadata& metadata);
// Ollama's human count: "751.63M", "7.6B", "8B", "512K".
std::string ParameterSize(uint64_t parameters);

// One loaded model as the tags, ps and show answers describe it.
struct OllamaModel {
  std::string name;
  std::string modified_at;  // RFC 3339, the file's modification time
  uint64_t file_bytes = 0;
  uint64_t memory_bytes = 0;   // what the loaded model holds, all devices (ps "size")
  uint64_t vram_bytes = 0;     // of that, on devices other than the CPU (ps "size_vram")
  std::string digest;          // the model's fingerprint in hex (not a sha256)
  bool embeddings = false;     // loaded for embeddings (embedding_models)
  int32_t context_length = 0;  // the loaded context, or the one it would load with
  format::GgufMetadata facts;  // from the model file; empty when it could not be read
  std::string expires_at;      // RFC 3339: when it unloads if it stays idle; "": never
};

// {parent_model:"", format:"gguf", family, families, parameter_size, quantization_level}
nlohmann::json OllamaDetails(const OllamaModel& m);
// ["completion", "tools"?, "thinking"?] for a chat model (tools and thinking as its template
// shows them), ["embedding"] for one loaded for embeddings.
std::vector<std::string> OllamaCapabilities(const OllamaModel& m);
// An entry of /api/tags: {name, model, modified_at, size, digest, details}.
nlohmann::json OllamaTagsEntry(const OllamaModel& m);
// An entry of /api/ps: {name, model, size, digest, details, expires_at, size_vram,
// context_length}; expires_at is far in the future for a model that stays loaded (pinned,
// kept by keep_alive -1, or in use).
nlohmann::json OllamaPsEntry(const OllamaModel& m);
// The /api/show body: {license, modelfile, parameters, template, details, model_info,
// capabilities, modified_at, system?}; parameters are what a request that sets none gets, as
// Modelfile lines: the model's manifest's (config.model_defaults) over the daemon's, num_ctx
// held to the model's context. model_info's "<arch>.context_length" is the model's context
// (loaded, or what it would load with): what a request can use.
std::string RenderOllamaShow(const OllamaModel& m, const config::DaemonConfig& config);

// --- Generation responses.

// RFC 3339 in UTC with nanoseconds: "2025-01-02T03:04:05.123456789Z".
std::string Rfc3339Nanos(std::chrono::system_clock::time_point t);

// Ollama's tool calls: [{id, function:{index, name, arguments: OBJECT}}]; arguments that are
// not a JSON object (never from a schema-held call) are sent as {}.
nlohmann::json OllamaToolCalls(const std::vector<chat::ToolCall>& calls);
// [{token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}]
nlohmann::json OllamaLogprobs(const std::vector<engine::TokenLogprob>& tokens);

// What a response says about itself.
struct OllamaReplyContext {
  bool chat = true;
  std::string model;
  std::string created_at;  // Rfc3339Nanos
};

// A streamed piece (done:false). chat: {model, created_at, message:{role:"assistant",
// content, thinking?, tool_calls?}, done}; generate: {model, created_at, response,
// thinking?, done}. `logprobs`: added when non-empty.
nlohmann::json OllamaChunk(const OllamaReplyContext& ctx, const engine::ParsedReply& piece,
                           const std::vector<engine::TokenLogprob>& logprobs = {});

// How a reply ended: "length" (max tokens or the context ran out), "content_filter" (the
// guard refused it: Ollama has no value of its own for that), else "stop" (tool calls too,
// as in Ollama).
std::string_view OllamaDoneReason(const engine::GenerationStats& stats, bool refused);

// The last object (done:true): the reply (whole, or empty after a stream), done_reason and
// the numbers: total_duration (`total_ns`), load_duration 0 (models are loaded at startup,
// never per request), prompt_eval_count / prompt_eval_duration (the prompt tokens evaluated
// for this request, KV-cache hits not counted, as Ollama counts them), eval_count /
// eval_duration (generated tokens). Durations in nanoseconds. generate has no `context`.
nlohmann::json OllamaFinal(const OllamaReplyContext& ctx, const engine::ParsedReply& reply,
                           const engine::GenerationStats& stats, int64_t total_ns,
                           std::string_view done_reason,
                           const std::vector<engine::TokenLogprob>& logprobs = {});

// Ollama's error body: {"error":"..."}.
std::string OllamaErrorBody(const ApiError& error);

// The answer to a load request: done:true, done_reason "load", nothing generated.
nlohmann::json OllamaLoadReply(const OllamaReplyContext& ctx, bool unload);

// /api/embed: {model, embeddings, total_duration, load_duration, prompt_eval_count}.
std::string RenderOllamaEmbed(const std::string& model,
                              const std::vector<std::vector<float>>& vectors, int64_t total_ns,
                              int32_t prompt_tokens);
// /api/embeddings: {embedding} (empty for a load request).
std::string RenderOllamaEmbeddings(const std::vector<float>& vector);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OLLAMA_OLLAMA_API_H_
