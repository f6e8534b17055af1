/* The embedded engine's C API (llmd_engine.h), compiled as C, on the tiny synthetic model whose
 * path is argv[1]. Exit 0 on success; each failure prints what went wrong. Structure only,
 * never time. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmd/llmd_engine.h"

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "c_engine_test:%d: failed: %s\n", __LINE__, #cond);    \
      return 1;                                                              \
    }                                                                        \
  } while (0)

/* CHECK for an llmd call that must return LLMD_OK. */
#define CHECK_OK(call)                                                                       \
  do {                                                                                       \
    llmd_status check_s_ = (call);                                                           \
    if (check_s_ != LLMD_OK) {                                                               \
      fprintf(stderr, "c_engine_test:%d: %s returned %d\n", __LINE__, #call, (int)check_s_); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

static llmd_generate_params greedy(int32_t max_tokens) {
  llmd_generate_params p = llmd_generate_default_params();
  p.max_tokens = max_tokens;
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.top_k = 1;
  p.repeat_penalty = 1.0f;
  return p;
}

/* Streaming: the pieces, concatenated, and how many; stop_after > 0 stops after that many. */
typedef struct {
  char buf[8192];
  size_t len;
  int pieces;
  int stop_after;
} collector;

static int32_t collect(const char* text, int32_t len, void* user) {
  collector* c = (collector*)user;
  if (len > 0 && c->len + (size_t)len < sizeof c->buf) {
    memcpy(c->buf + c->len, text, (size_t)len);
    c->len += (size_t)len;
    c->buf[c->len] = '\0';
  }
  ++c->pieces;
  return c->stop_after > 0 && c->pieces >= c->stop_after;
}

/* One chat of two turns, run alone or from its own thread. */
typedef struct {
  llmd_engine* engine;
  const char* system;
  const char* turns[2];
  char* replies[2];
  llmd_status status;
  char* err;
} chat_run;

static void* run_chat(void* arg) {
  chat_run* r = (chat_run*)arg;
  llmd_chat* chat = NULL;
  r->status = llmd_chat_new(r->engine, r->system, &chat, &r->err);
  if (r->status != LLMD_OK) return NULL;
  llmd_generate_params p = greedy(12);
  for (int i = 0; i < 2 && r->status == LLMD_OK; ++i) {
    r->status = llmd_chat_ask(chat, r->turns[i], &p, NULL, NULL, &r->replies[i], &r->err);
  }
  llmd_chat_free(chat);
  return NULL;
}

static void free_run(chat_run* r) {
  llmd_free(r->replies[0]);
  llmd_free(r->replies[1]);
  llmd_free(r->err);
  r->replies[0] = r->replies[1] = r->err = NULL;
}

static int test_null_arguments(llmd_engine* engine) {
  llmd_generate_params p = greedy(4);
  llmd_engine* e = (llmd_engine*)1;
  llmd_chat* chat = (llmd_chat*)1;
  char* text = NULL;
  char* err = NULL;
  llmd_engine_stats stats;

  CHECK(llmd_engine_load(NULL, NULL, &e, &err) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(e == NULL);
  CHECK(err != NULL && strstr(err, "path must not be NULL") != NULL);
  llmd_free(err);
  CHECK(llmd_engine_load("x.gguf", NULL, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);

  err = NULL;
  CHECK(llmd_engine_generate(NULL, "", "hi", &p, &text, &err) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(err != NULL && strstr(err, "engine") != NULL);
  llmd_free(err);
  CHECK(llmd_engine_generate(engine, "", NULL, &p, &text, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_generate(engine, "", "hi", &p, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_generate_stream(NULL, "", "hi", &p, collect, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_generate_stream(engine, "", NULL, &p, collect, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_generate_stream(engine, "", "hi", &p, NULL, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_last_stats(NULL, &stats) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_last_stats(engine, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_engine_reset(NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_chat_new(NULL, "", &chat, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(chat == NULL);
  CHECK(llmd_chat_new(engine, "", NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_chat_ask(NULL, "hi", &p, NULL, NULL, &text, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_chat_clear(NULL) == LLMD_ERR_INVALID_ARGUMENT);
  llmd_engine_free(NULL);
  llmd_chat_free(NULL);
  llmd_free(NULL);

  CHECK_OK(llmd_chat_new(engine, NULL, &chat, NULL));  /* a NULL system prompt is none */
  CHECK(llmd_chat_ask(chat, NULL, &p, NULL, NULL, &text, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_chat_ask(chat, "hi", &p, NULL, NULL, NULL, NULL) == LLMD_ERR_INVALID_ARGUMENT);
  llmd_chat_free(chat);
  return 0;
}

/* A chat that outgrows the context: refused by default, its oldest turn dropped with
 * LLMD_OVERFLOW_DROP_OLDEST and reported by llmd_chat_last_dropped. */
static int test_chat_overflow(llmd_engine* engine) {
  static char words[4096];
  strcpy(words, "Remember:");
  for (int i = 0; i < 300; ++i) strcat(words, " word");
  llmd_chat* chat = NULL;
  char* text = NULL;
  char* err = NULL;
  int32_t tokens = -1, turns = -1;
  const llmd_generate_params p = greedy(4);
  CHECK_OK(llmd_chat_new(engine, "Be brief.", &chat, NULL));
  CHECK(llmd_chat_set_overflow(chat, 2) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_chat_set_overflow(NULL, LLMD_OVERFLOW_DROP_OLDEST) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(llmd_chat_last_dropped(chat, NULL, &turns) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK_OK(llmd_chat_ask(chat, words, &p, NULL, NULL, &text, NULL));
  llmd_free(text);
  CHECK(llmd_chat_ask(chat, words, &p, NULL, NULL, &text, &err) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(err != NULL && strstr(err, "context of 512") != NULL);
  llmd_free(err);
  CHECK_OK(llmd_chat_set_overflow(chat, LLMD_OVERFLOW_DROP_OLDEST));
  CHECK_OK(llmd_chat_ask(chat, words, &p, NULL, NULL, &text, NULL));
  llmd_free(text);
  CHECK_OK(llmd_chat_last_dropped(chat, &tokens, &turns));
  CHECK(turns == 1 && tokens > 300);
  llmd_chat_free(chat);
  return 0;
}

static int test_bad_requests(llmd_engine* engine) {
  char* text = NULL;
  char* err = NULL;
  llmd_generate_params p = greedy(-1);
  CHECK(llmd_engine_generate(engine, "", "hi", &p, &text, &err) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(text == NULL);
  CHECK(err != NULL && strstr(err, "max_tokens") != NULL);
  llmd_free(err);

  p = greedy(4);
  p.temperature = NAN;
  err = NULL;
  CHECK(llmd_engine_generate(engine, "", "hi", &p, &text, &err) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(err != NULL && strstr(err, "temperature") != NULL);
  llmd_free(err);

  p = greedy(4);
  err = NULL;
  CHECK(llmd_engine_generate(engine, "", "bad \xC0\xAF", &p, &text, &err) == LLMD_ERR_INVALID_ARGUMENT);
  CHECK(err != NULL && strstr(err, "UTF-8") != NULL);
  llmd_free(err);

  p = greedy(0);  /* max_tokens 0: an empty reply at once */
  CHECK_OK(llmd_engine_generate(engine, "", "hi", &p, &text, NULL));
  CHECK(text != NULL && text[0] == '\0');
  llmd_free(text);
  llmd_engine_stats st;
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.generated_tokens == 0 && st.finish_reason == LLMD_FINISH_LENGTH);
  return 0;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  const char* model = argv[1];

  llmd_engine_params ep = llmd_engine_default_params();
  CHECK(ep.context_tokens == 0 && ep.threads == 0 && ep.sequences == 4 && ep.gpu_layers == 0);
  llmd_generate_params dp = llmd_generate_default_params();
  CHECK(dp.max_tokens == 256 && dp.top_k == 40 && dp.seed == LLMD_SEED_RANDOM);
  CHECK(dp.temperature > 0.69f && dp.temperature < 0.71f);

  /* A missing model file: an error that names it. */
  llmd_engine* engine = (llmd_engine*)1;
  char* err = NULL;
  CHECK(llmd_engine_load("/nonexistent/model.gguf", &ep, &engine, &err) == LLMD_ERR_NOT_FOUND);
  CHECK(engine == NULL);
  CHECK(err != NULL && strstr(err, "/nonexistent/model.gguf") != NULL);
  llmd_free(err);

  ep.context_tokens = 512;
  ep.threads = 2;
  ep.sequences = 2;
  err = NULL;
  if (llmd_engine_load(model, &ep, &engine, &err) != LLMD_OK) {
    fprintf(stderr, "c_engine_test: load failed: %s\n", err != NULL ? err : "(no message)");
    return 1;
  }
  CHECK(engine != NULL);
  llmd_engine_stats st;
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.load_ms > 0 && st.generated_tokens == 0);

  /* Greedy generation, counted; the same prompt again gives the same text from the cache. */
  const llmd_generate_params g = greedy(16);
  char* first = NULL;
  CHECK_OK(llmd_engine_generate(engine, "You are terse.", "Say hello.", &g, &first, NULL));
  CHECK(first != NULL && strlen(first) > 0);
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.generated_tokens > 0 && st.generated_tokens <= 16);
  CHECK(st.prompt_tokens > 0 && st.cached_tokens == 0);
  CHECK(st.load_ms > 0);
  CHECK(st.finish_reason == LLMD_FINISH_STOP || st.finish_reason == LLMD_FINISH_LENGTH);
  const int32_t first_generated = st.generated_tokens;
  char* again = NULL;
  CHECK_OK(llmd_engine_generate(engine, "You are terse.", "Say hello.", &g, &again, NULL));
  CHECK(strcmp(first, again) == 0);
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.cached_tokens == st.prompt_tokens); /* whole: its last token's logits were kept */
  CHECK(st.generated_tokens == first_generated);
  llmd_free(again);

  /* Streaming: the pieces make the same text. */
  collector c;
  memset(&c, 0, sizeof c);
  CHECK_OK(llmd_engine_generate_stream(engine, "You are terse.", "Say hello.", &g, collect, &c, NULL));
  CHECK(c.pieces > 0);
  CHECK(strcmp(c.buf, first) == 0);
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.generated_tokens == first_generated);

  /* A callback that returns non-zero stops the generation early. */
  /* A budget the model will not use up before the stop is seen (the scheduler sees it at its
   * next step, on its own thread). */
  const llmd_generate_params many = greedy(128);
  char* whole = NULL;
  CHECK_OK(llmd_engine_generate(engine, "", "Count to one hundred.", &many, &whole, NULL));
  collector all;
  memset(&all, 0, sizeof all);
  CHECK_OK(llmd_engine_generate_stream(engine, "", "Count to one hundred.", &many, collect, &all, NULL));
  CHECK(strcmp(all.buf, whole) == 0);
  CHECK(all.pieces >= 3);
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  const int32_t whole_generated = st.generated_tokens;
  memset(&c, 0, sizeof c);
  c.stop_after = 2;
  CHECK_OK(llmd_engine_generate_stream(engine, "", "Count to one hundred.", &many, collect, &c, NULL));
  CHECK(c.pieces == 2);
  CHECK(strncmp(c.buf, whole, c.len) == 0);
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.finish_reason == LLMD_FINISH_CANCELLED);
  CHECK(st.generated_tokens < whole_generated);
  llmd_free(whole);

  /* Two chats, each alone first, then both at once from two threads on the one engine: each
   * gives the same replies. */
  chat_run solo[2] = {
      {engine, "You are a helpful assistant.", {"Hello!", "And then?"}, {NULL, NULL}, LLMD_OK, NULL},
      {engine, "You answer in French.", {"What is the sea?", "Why is it blue?"}, {NULL, NULL}, LLMD_OK, NULL},
  };
  for (int i = 0; i < 2; ++i) {
    run_chat(&solo[i]);
    if (solo[i].status != LLMD_OK) {
      fprintf(stderr, "c_engine_test: chat %d: %s\n", i, solo[i].err != NULL ? solo[i].err : "?");
      return 1;
    }
    /* The second turn prefilled only its own text: the first turn's tokens were reused. */
    CHECK_OK(llmd_engine_last_stats(engine, &st));
    CHECK(st.cached_tokens > 0 && st.cached_tokens < st.prompt_tokens);
  }
  chat_run both[2] = {
      {engine, solo[0].system, {solo[0].turns[0], solo[0].turns[1]}, {NULL, NULL}, LLMD_OK, NULL},
      {engine, solo[1].system, {solo[1].turns[0], solo[1].turns[1]}, {NULL, NULL}, LLMD_OK, NULL},
  };
  CHECK_OK(llmd_engine_reset(engine));
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) CHECK(pthread_create(&threads[i], NULL, run_chat, &both[i]) == 0);
  for (int i = 0; i < 2; ++i) CHECK(pthread_join(threads[i], NULL) == 0);
  for (int i = 0; i < 2; ++i) {
    if (both[i].status != LLMD_OK) {
      fprintf(stderr, "c_engine_test: concurrent chat %d: %s\n", i, both[i].err != NULL ? both[i].err : "?");
      return 1;
    }
    for (int t = 0; t < 2; ++t) {
      if (strcmp(both[i].replies[t], solo[i].replies[t]) != 0) {
        fprintf(stderr, "c_engine_test: chat %d turn %d: alone \"%s\", together \"%s\"\n", i, t,
                solo[i].replies[t], both[i].replies[t]);
        return 1;
      }
    }
    free_run(&solo[i]);
    free_run(&both[i]);
  }

  /* A chat's Clear forgets the history: the first turn again gives the first reply. */
  llmd_chat* chat = NULL;
  CHECK_OK(llmd_chat_new(engine, "You are a helpful assistant.", &chat, NULL));
  const llmd_generate_params g12 = greedy(12);
  char* t1 = NULL;
  char* t2 = NULL;
  memset(&c, 0, sizeof c);
  CHECK_OK(llmd_chat_ask(chat, "Hello!", &g12, collect, &c, &t1, NULL));
  CHECK(strcmp(c.buf, t1) == 0);
  CHECK_OK(llmd_chat_clear(chat));
  CHECK_OK(llmd_chat_ask(chat, "Hello!", &g12, NULL, NULL, &t2, NULL));
  CHECK(strcmp(t1, t2) == 0);
  llmd_free(t1);
  llmd_free(t2);
  llmd_chat_free(chat);

  /* Reset forgets the cached prefixes: the same prompt prefills from scratch, same text. */
  CHECK_OK(llmd_engine_reset(engine));
  char* fresh = NULL;
  CHECK_OK(llmd_engine_generate(engine, "You are terse.", "Say hello.", &g, &fresh, NULL));
  CHECK_OK(llmd_engine_last_stats(engine, &st));
  CHECK(st.cached_tokens == 0);
  CHECK(strcmp(fresh, first) == 0);
  llmd_free(fresh);
  llmd_free(first);

  if (test_null_arguments(engine) != 0) return 1;
  if (test_bad_requests(engine) != 0) return 1;
  if (test_chat_overflow(engine) != 0) return 1;

  llmd_engine_free(engine);
  printf("c_engine_test: ok\n");
  return 0;
}
