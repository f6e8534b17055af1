/* llmd C API: a client for the llmd daemon, for C and for FFI (ctypes, JNI, Rust).
 *
 * Opaque handles, integer status codes, and an optional `char** errmsg` last argument that
 * receives a message to free with llmd_free (LevelDB's convention). Strings in and out are
 * UTF-8 and NUL-terminated. A client holds no connection (one is opened per call), so one
 * handle may be used from several threads at once.
 */
#ifndef LLMD_LLMD_H_
#define LLMD_LLMD_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LLMD_BUILDING_LIBRARY)
#define LLMD_API __attribute__((visibility("default")))
#else
#define LLMD_API
#endif

typedef int32_t llmd_status;
enum {
  LLMD_OK = 0,
  LLMD_ERR_CONNECTION_FAILED = 1, /* no daemon at the socket path */
  LLMD_ERR_TIMEOUT = 2,           /* no response within the timeout */
  LLMD_ERR_SERVER = 3,            /* the daemon answered with an error; see server_code */
  LLMD_ERR_IO = 4,                /* the connection broke or the reply was unreadable */
  LLMD_ERR_INVALID_ARGUMENT = 5,  /* a NULL where a value is required; from the embedded
                                     engine (llmd_engine.h) also a request it refuses: invalid
                                     UTF-8, a prompt longer than the context, a sampling value
                                     out of range */
  /* The embedded engine (llmd_engine.h) only: */
  LLMD_ERR_ENGINE = 6,             /* the model could not be loaded or could not generate */
  LLMD_ERR_UNAVAILABLE = 7,        /* the engine was released */
  LLMD_ERR_NOT_FOUND = 8,          /* the model file does not exist */
  LLMD_ERR_RESOURCE_EXHAUSTED = 9, /* out of memory, or too many requests waiting */
};

typedef struct llmd_client llmd_client;

typedef struct llmd_client_params {
  const char* socket_path; /* default "/run/llmd/llm.sock" */
  int32_t timeout_ms;      /* default 10000 */
} llmd_client_params;

LLMD_API llmd_client_params llmd_client_default_params(void);

/* Returns NULL only when out of memory. */
LLMD_API llmd_client* llmd_client_open(const llmd_client_params* params);
LLMD_API void llmd_client_close(llmd_client* client);

/* Generates a reply. On LLMD_OK, *text_out (free with llmd_free) and *tokens_out are set.
 * On LLMD_ERR_SERVER, *server_code (if non-NULL) gets the daemon's LlmErrorCode. */
LLMD_API llmd_status llmd_generate(llmd_client* client, const char* prompt, int32_t max_tokens,
                                   char** text_out, uint32_t* tokens_out, uint32_t* server_code,
                                   char** errmsg);

/* Streams a reply: on_text gets each piece (not NUL-terminated: use len); returning non-zero
 * from it cancels the generation. max_tokens <= 0 uses the daemon's default. */
typedef int32_t (*llmd_text_callback)(const char* text, int32_t len, void* user_data);
LLMD_API llmd_status llmd_generate_stream(llmd_client* client, const char* prompt,
                                          int32_t max_tokens, llmd_text_callback on_text,
                                          void* user_data, uint32_t* tokens_out,
                                          uint32_t* server_code, char** errmsg);

LLMD_API llmd_status llmd_health(llmd_client* client, int32_t* model_loaded, uint8_t* npu_core,
                                 float* kv_cache_usage, char** errmsg);

/* Root only. */
LLMD_API llmd_status llmd_shutdown(llmd_client* client, uint32_t* server_code, char** errmsg);

LLMD_API void llmd_free(void* ptr);

#ifdef __cplusplus
}
#endif

#endif /* LLMD_LLMD_H_ */
