// The embedded engine's C API (include/llmd/llmd_engine.h) over llmd::LocalEngine. Nothing
// here generates by itself: every call goes through LocalEngine, on the scheduler's path.
// No C++ exception crosses the C boundary.
#include "llmd/llmd_engine.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "llmd/engine.h"

struct llmd_engine {
  std::unique_ptr<llmd::LocalEngine> engine;
};

struct llmd_chat {
  std::unique_ptr<llmd::LocalChat> chat;
  std::atomic<int32_t> overflow{LLMD_OVERFLOW_ERROR};  // llmd_chat_set_overflow
};

namespace {

char* CopyString(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

void SetMessage(char** errmsg, const std::string& message) {
  if (errmsg != nullptr) *errmsg = CopyString(message);
}

llmd_status Invalid(const char* what, char** errmsg) {
  SetMessage(errmsg, std::string(what) + " must not be NULL");
  return LLMD_ERR_INVALID_ARGUMENT;
}

llmd_status Fail(const llmd::Status& s, char** errmsg) {
  SetMessage(errmsg, s.ToString());
  switch (s.code()) {
    case llmd::StatusCode::kOk: return LLMD_OK;
    case llmd::StatusCode::kInvalidArgument: return LLMD_ERR_INVALID_ARGUMENT;
    case llmd::StatusCode::kNotFound: return LLMD_ERR_NOT_FOUND;
    case llmd::StatusCode::kResourceExhausted: return LLMD_ERR_RESOURCE_EXHAUSTED;
    case llmd::StatusCode::kUnavailable: return LLMD_ERR_UNAVAILABLE;
    default: return LLMD_ERR_ENGINE;
  }
}

// Runs `body`, turning an escaping exception (out of memory, say) into LLMD_ERR_ENGINE.
template <typename F>
llmd_status Guarded(char** errmsg, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    SetMessage(errmsg, "resource_exhausted: out of memory");
    return LLMD_ERR_RESOURCE_EXHAUSTED;
  } catch (const std::exception& e) {
    SetMessage(errmsg, std::string("internal: ") + e.what());
    return LLMD_ERR_ENGINE;
  } catch (...) {
    SetMessage(errmsg, "internal: unknown exception");
    return LLMD_ERR_ENGINE;
  }
}

llmd::LocalGenerateOptions ToOptions(const llmd_generate_params* params) {
  const llmd_generate_params p = params != nullptr ? *params : llmd_generate_default_params();
  llmd::LocalGenerateOptions o;
  o.max_tokens = p.max_tokens;
  o.temperature = p.temperature;
  o.top_p = p.top_p;
  o.top_k = p.top_k;
  o.repeat_penalty = p.repeat_penalty;
  o.seed = p.seed;
  return o;
}

llmd::TextCallback ToCallback(llmd_text_callback on_text, void* user_data) {
  if (on_text == nullptr) return {};
  return [on_text, user_data](std::string_view text) {
    return on_text(text.data(), static_cast<int32_t>(text.size()), user_data) == 0;
  };
}

llmd_status Deliver(llmd::Result<std::string> reply, char** text_out, char** errmsg) {
  if (!reply.has_value()) return Fail(reply.error(), errmsg);
  if (text_out != nullptr) {
    *text_out = CopyString(*reply);
    if (*text_out == nullptr) {
      SetMessage(errmsg, "resource_exhausted: out of memory");
      return LLMD_ERR_RESOURCE_EXHAUSTED;
    }
  }
  return LLMD_OK;
}

}  // namespace

extern "C" {

llmd_engine_params llmd_engine_default_params(void) {
  const llmd::LocalEngineOptions o;
  return {o.context_tokens, o.threads, o.sequences, o.gpu_layers};
}

llmd_generate_params llmd_generate_default_params(void) {
  const llmd::LocalGenerateOptions o;
  return {o.max_tokens, o.temperature, o.top_p, o.top_k, o.repeat_penalty, o.seed};
}

llmd_status llmd_engine_load(const char* path, const llmd_engine_params* params, llmd_engine** engine,
                             char** errmsg) {
  if (engine == nullptr) return Invalid("engine", errmsg);
  *engine = nullptr;
  if (path == nullptr) return Invalid("path", errmsg);
  return Guarded(errmsg, [&]() -> llmd_status {
    const llmd_engine_params p = params != nullptr ? *params : llmd_engine_default_params();
    llmd::LocalEngineOptions o;
    o.context_tokens = p.context_tokens;
    o.threads = p.threads;
    o.sequences = p.sequences;
    o.gpu_layers = p.gpu_layers;
    auto loaded = llmd::LocalEngine::Load(path, o);
    if (!loaded.has_value()) return Fail(loaded.error(), errmsg);
    *engine = new llmd_engine{std::move(*loaded)};
    return LLMD_OK;
  });
}

llmd_status llmd_engine_generate(llmd_engine* engine, const char* system, const char* user,
                                 const llmd_generate_params* params, char** text_out, char** errmsg) {
  if (engine == nullptr) return Invalid("engine", errmsg);
  if (user == nullptr) return Invalid("user", errmsg);
  if (text_out == nullptr) return Invalid("text_out", errmsg);
  *text_out = nullptr;
  return Guarded(errmsg, [&] {
    return Deliver(engine->engine->Generate(system != nullptr ? system : "", user, ToOptions(params)), text_out,
                   errmsg);
  });
}

llmd_status llmd_engine_generate_stream(llmd_engine* engine, const char* system, const char* user,
                                        const llmd_generate_params* params, llmd_text_callback on_text,
                                        void* user_data, char** errmsg) {
  if (engine == nullptr) return Invalid("engine", errmsg);
  if (user == nullptr) return Invalid("user", errmsg);
  if (on_text == nullptr) return Invalid("on_text", errmsg);
  return Guarded(errmsg, [&] {
    return Deliver(engine->engine->GenerateStream(system != nullptr ? system : "", user, ToOptions(params),
                                                  ToCallback(on_text, user_data)),
                   nullptr, errmsg);
  });
}

llmd_status llmd_engine_last_stats(const llmd_engine* engine, llmd_engine_stats* stats) {
  if (engine == nullptr || stats == nullptr) return LLMD_ERR_INVALID_ARGUMENT;
  return Guarded(nullptr, [&] {
    const llmd::LocalStats s = engine->engine->last_stats();
    int32_t finish = LLMD_FINISH_STOP;
    if (s.finish_reason == "length") finish = LLMD_FINISH_LENGTH;
    if (s.finish_reason == "cancelled") finish = LLMD_FINISH_CANCELLED;
    *stats = {s.load_ms,       s.prefill_ms,    s.ttft_ms,          s.decode_ms,
              s.prompt_tokens, s.cached_tokens, s.generated_tokens, finish};
    return LLMD_OK;
  });
}

llmd_status llmd_engine_reset(llmd_engine* engine) {
  if (engine == nullptr) return LLMD_ERR_INVALID_ARGUMENT;
  return Guarded(nullptr, [&] {
    engine->engine->Reset();
    return LLMD_OK;
  });
}

void llmd_engine_free(llmd_engine* engine) {
  try {
    delete engine;  // releases the model: stops the scheduler's thread, then frees it
  } catch (...) {
  }
}

llmd_status llmd_chat_new(llmd_engine* engine, const char* system, llmd_chat** chat, char** errmsg) {
  if (chat == nullptr) return Invalid("chat", errmsg);
  *chat = nullptr;
  if (engine == nullptr) return Invalid("engine", errmsg);
  return Guarded(errmsg, [&]() -> llmd_status {
    auto made = engine->engine->NewChat(system != nullptr ? system : "");
    if (!made.has_value()) return Fail(made.error(), errmsg);
    *chat = new llmd_chat{std::move(*made)};
    return LLMD_OK;
  });
}

llmd_status llmd_chat_ask(llmd_chat* chat, const char* user, const llmd_generate_params* params,
                          llmd_text_callback on_text, void* user_data, char** text_out, char** errmsg) {
  if (chat == nullptr) return Invalid("chat", errmsg);
  if (user == nullptr) return Invalid("user", errmsg);
  if (text_out == nullptr) return Invalid("text_out", errmsg);
  *text_out = nullptr;
  return Guarded(errmsg, [&] {
    llmd::LocalGenerateOptions options = ToOptions(params);
    if (chat->overflow.load() == LLMD_OVERFLOW_DROP_OLDEST) options.overflow = llmd::LocalOverflow::kDropOldest;
    return Deliver(chat->chat->Ask(user, options, ToCallback(on_text, user_data)), text_out, errmsg);
  });
}

llmd_status llmd_chat_set_overflow(llmd_chat* chat, int32_t overflow) {
  if (chat == nullptr) return LLMD_ERR_INVALID_ARGUMENT;
  if (overflow != LLMD_OVERFLOW_ERROR && overflow != LLMD_OVERFLOW_DROP_OLDEST) return LLMD_ERR_INVALID_ARGUMENT;
  chat->overflow.store(overflow);
  return LLMD_OK;
}

llmd_status llmd_chat_last_dropped(const llmd_chat* chat, int32_t* dropped_tokens, int32_t* dropped_turns) {
  if (chat == nullptr || dropped_tokens == nullptr || dropped_turns == nullptr) return LLMD_ERR_INVALID_ARGUMENT;
  return Guarded(nullptr, [&] {
    const llmd::LocalStats s = chat->chat->last_stats();
    *dropped_tokens = s.dropped_tokens;
    *dropped_turns = s.dropped_turns;
    return LLMD_OK;
  });
}

llmd_status llmd_chat_clear(llmd_chat* chat) {
  if (chat == nullptr) return LLMD_ERR_INVALID_ARGUMENT;
  return Guarded(nullptr, [&] {
    chat->chat->Clear();
    return LLMD_OK;
  });
}

void llmd_chat_free(llmd_chat* chat) {
  try {
    delete chat;
  } catch (...) {
  }
}

void llmd_free(void* ptr) { std::free(ptr); }

}  // extern "C"
