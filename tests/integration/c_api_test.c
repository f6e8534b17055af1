/* The C API, compiled as C, against a live daemon whose socket is argv[1]. Exit 0 on success;
 * each failure prints what went wrong. */
#include <stdio.h>
#include <string.h>

#include "llmd/llmd.h"

static int pieces = 0;
static int count_piece(const char* text, int32_t len, void* user) {
  (void)text;
  *(int32_t*)user += len;
  ++pieces;
  return 0;
}

#define CHECK(cond)                                          \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "c_api_test: failed: %s\n", #cond);    \
      return 1;                                              \
    }                                                        \
  } while (0)

int main(int argc, char** argv) {
  CHECK(argc == 2);
  llmd_client_params params = llmd_client_default_params();
  CHECK(strcmp(params.socket_path, "/run/llmd/llm.sock") == 0);
  params.socket_path = argv[1];
  llmd_client* client = llmd_client_open(&params);
  CHECK(client != NULL);

  char* text = NULL;
  char* err = NULL;
  uint32_t tokens = 0, code = 99;
  CHECK(llmd_generate(client, "Hello from C", 5, &text, &tokens, &code, &err) == LLMD_OK);
  CHECK(text != NULL && tokens > 0 && tokens <= 5);
  llmd_free(text);

  int32_t bytes = 0;
  CHECK(llmd_generate_stream(client, "Stream to C", 5, count_piece, &bytes, &tokens, NULL, NULL) == LLMD_OK);
  CHECK(pieces > 0 && bytes > 0);

  int32_t loaded = 0;
  uint8_t core = 9;
  float kv = -1;
  CHECK(llmd_health(client, &loaded, &core, &kv, NULL) == LLMD_OK);
  CHECK(loaded == 1 && core == 0 && kv >= 0);

  CHECK(llmd_generate(client, "   ", 5, &text, &tokens, &code, &err) == LLMD_ERR_SERVER);
  CHECK(code == 2); /* InvalidPrompt */
  CHECK(err != NULL && strstr(err, "InvalidPrompt") != NULL);
  llmd_free(err);

  CHECK(llmd_generate(client, NULL, 5, &text, NULL, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  llmd_client_close(client);

  llmd_client_params missing = llmd_client_default_params();
  missing.socket_path = "/nonexistent/llmd.sock";
  client = llmd_client_open(&missing);
  err = NULL;
  CHECK(llmd_health(client, NULL, NULL, NULL, &err) == LLMD_ERR_CONNECTION_FAILED);
  CHECK(err != NULL && strstr(err, "ConnectionFailed") != NULL);
  llmd_free(err);
  llmd_client_close(client);
  printf("c_api_test: ok\n");
  return 0;
}
