/* llmd embedded-engine C API: the model in your own process, for C and for FFI (ctypes, JNI,
 * Rust). The C face of llmd::LocalEngine (llmd/engine.h): it runs on the daemon's own
 * generation path (the same scheduler, chat templates, input sanitizing, prefix reuse and
 * stop handling), so a prompt gives here what it gives through the daemon's socket.
 *
 * Conventions are llmd.h's: opaque handles, integer status codes (llmd_status, LLMD_ERR_*),
 * and an optional `char** errmsg` last argument that receives a message to free with
 * llmd_free. Strings in and out are UTF-8 and NUL-terminated; strings handed out are freed
 * with llmd_free. Link libllmd_engine.so.
 *
 * Thread-safety: every function may be called from several threads at once on one engine;
 * their generations are batched together (up to `sequences` at a time, more wait their turn).
 * One llmd_chat answers one llmd_chat_ask at a time: use one chat per thread.
 * Lifetime: free every llmd_chat before its llmd_engine.
 *
 *   llmd_engine* engine = NULL;
 *   char* err = NULL;
 *   llmd_engine_params ep = llmd_engine_default_params();
 *   if (llmd_engine_load("model.gguf", &ep, &engine, &err) != LLMD_OK) { ... err ... }
 *   llmd_generate_params gp = llmd_generate_default_params();
 *   char* reply = NULL;
 *   if (llmd_engine_generate(engine, "You are terse.", "Hello!", &gp, &reply, &err) == LLMD_OK)
 *     puts(reply);
 *   llmd_free(reply);
 *   llmd_engine_free(engine);
 */
#ifndef LLMD_LLMD_ENGINE_H_
#define LLMD_LLMD_ENGINE_H_

#include <stdint.h>

/* llmd_status and LLMD_OK / LLMD_ERR_*, llmd_text_callback, llmd_free, LLMD_API. */
#include "llmd/llmd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct llmd_engine llmd_engine;
typedef struct llmd_chat llmd_chat;

typedef struct llmd_engine_params {
  int32_t context_tokens; /* tokens per generation; 0 (default): one KV pool of the model's trained
                             context, fitted to the memory available, shared by the sequences */
  int32_t threads;        /* CPU threads; 0 (default): one per online CPU */
  int32_t sequences;      /* generations batched together, 1..64; default 4 */
  int32_t gpu_layers;     /* layers to offload; -1: all; default 0 */
} llmd_engine_params;

LLMD_API llmd_engine_params llmd_engine_default_params(void);

#define LLMD_SEED_RANDOM 0xFFFFFFFFu

typedef struct llmd_generate_params {
  int32_t max_tokens;     /* default 256; 0 returns an empty reply at once; < 0 is refused */
  float temperature;      /* 0..2, default 0.7; 0 is greedy */
  float top_p;            /* 0..1, default 0.9 */
  int32_t top_k;          /* > 0, default 40 */
  float repeat_penalty;   /* >= 1, default 1.1 */
  uint32_t seed;          /* default LLMD_SEED_RANDOM (a fresh seed per call); the same seed
                             repeats the output */
} llmd_generate_params;

/* The defaults above (the daemon's). */
LLMD_API llmd_generate_params llmd_generate_default_params(void);

/* Why a generation ended. */
enum {
  LLMD_FINISH_STOP = 0,      /* the model ended its turn */
  LLMD_FINISH_LENGTH = 1,    /* max_tokens, or the context, ran out */
  LLMD_FINISH_CANCELLED = 2, /* the text callback returned non-zero */
};

/* What the most recent generation on an engine cost (milliseconds, wall clock). */
typedef struct llmd_engine_stats {
  double load_ms;           /* the model load (the same after every generation) */
  double prefill_ms;
  double ttft_ms;           /* the request to its first generated token */
  double decode_ms;         /* the first to the last generated token */
  int32_t prompt_tokens;    /* the whole prompt, cached tokens included */
  int32_t cached_tokens;    /* prompt tokens reused from memory */
  int32_t generated_tokens;
  int32_t finish_reason;    /* LLMD_FINISH_* */
} llmd_engine_stats;

/* Loads a GGUF model and warms it up. params may be NULL (the defaults). On LLMD_OK *engine
 * is set (free with llmd_engine_free); on error *engine is NULL and *errmsg names the file
 * and says why (LLMD_ERR_NOT_FOUND: no such file). */
LLMD_API llmd_status llmd_engine_load(const char* path, const llmd_engine_params* params,
                                      llmd_engine** engine, char** errmsg);

/* One chat turn {system, user} through the model's chat template (thinking off). system may
 * be NULL (none); params may be NULL (the defaults). On LLMD_OK *text_out is the reply (free
 * with llmd_free). */
LLMD_API llmd_status llmd_engine_generate(llmd_engine* engine, const char* system, const char* user,
                                          const llmd_generate_params* params, char** text_out,
                                          char** errmsg);

/* The same, handing each piece of the reply (whole UTF-8 characters, not NUL-terminated: use
 * len) to on_text as it is generated, on the calling thread. Returning non-zero from on_text
 * stops the generation (finish reason LLMD_FINISH_CANCELLED); the call still returns LLMD_OK. */
LLMD_API llmd_status llmd_engine_generate_stream(llmd_engine* engine, const char* system,
                                                 const char* user, const llmd_generate_params* params,
                                                 llmd_text_callback on_text, void* user_data,
                                                 char** errmsg);

/* The stats of the most recent successful generation on this engine, any thread's or any
 * chat's (after a load alone, only load_ms is set). */
LLMD_API llmd_status llmd_engine_last_stats(const llmd_engine* engine, llmd_engine_stats* stats);

/* Forgets every cached prefix and every chat's history; waits for running generations. */
LLMD_API llmd_status llmd_engine_reset(llmd_engine* engine);

/* Frees the model (waits for running generations). NULL is a no-op. */
LLMD_API void llmd_engine_free(llmd_engine* engine);

/* Starts a conversation that keeps its exact history, so each turn prefills only its own
 * text. system may be NULL (none). On LLMD_OK *chat is set (free with llmd_chat_free, before
 * the engine). */
LLMD_API llmd_status llmd_chat_new(llmd_engine* engine, const char* system, llmd_chat** chat,
                                   char** errmsg);

/* Sends one user message; the reply joins the history and is returned in *text_out (free with
 * llmd_free). on_text, if not NULL, gets each piece as llmd_engine_generate_stream's does; when
 * it stops the reply, *text_out starts with the pieces it got and may hold a few more (what
 * was generated before the stop took effect). */
LLMD_API llmd_status llmd_chat_ask(llmd_chat* chat, const char* user, const llmd_generate_params* params,
                                   llmd_text_callback on_text, void* user_data, char** text_out,
                                   char** errmsg);

/* What llmd_chat_ask does when the chat's history and the new message do not fit the context
 * (with one token left to generate). */
enum {
  LLMD_OVERFLOW_ERROR = 0,       /* the default: LLMD_ERR_INVALID_ARGUMENT, the counts in *errmsg */
  LLMD_OVERFLOW_DROP_OLDEST = 1, /* drop the chat's oldest whole turns, keeping the system prompt
                                    and the new message; the chat keeps the shorter history */
};

/* Sets the chat's overflow policy (LLMD_OVERFLOW_*) for its later asks; any other value is
 * LLMD_ERR_INVALID_ARGUMENT. (A function, not a field of llmd_generate_params, so programs
 * built against an earlier header keep their struct sizes.) */
LLMD_API llmd_status llmd_chat_set_overflow(llmd_chat* chat, int32_t overflow);

/* What the chat's most recent successful ask dropped to fit (LLMD_OVERFLOW_DROP_OLDEST): its
 * prompt tokens and whole turns; 0 and 0 when nothing was. */
LLMD_API llmd_status llmd_chat_last_dropped(const llmd_chat* chat, int32_t* dropped_tokens, int32_t* dropped_turns);

/* Forgets the history; the system prompt stays. */
LLMD_API llmd_status llmd_chat_clear(llmd_chat* chat);

/* NULL is a no-op. */
LLMD_API void llmd_chat_free(llmd_chat* chat);

#ifdef __cplusplus
}
#endif

#endif /* LLMD_LLMD_ENGINE_H_ */
