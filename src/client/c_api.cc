#include "llmd/llmd.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "llmd/client.h"

struct llmd_client {
  llmd::LlmClient client;
};

namespace {

char* CopyString(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

llmd_status Fail(const llmd::ClientError& e, uint32_t* server_code, char** errmsg) {
  if (errmsg != nullptr) *errmsg = CopyString(e.ToString());
  if (server_code != nullptr) *server_code = e.server_code;
  switch (e.kind) {
    case llmd::ClientError::Kind::kConnectionFailed: return LLMD_ERR_CONNECTION_FAILED;
    case llmd::ClientError::Kind::kTimeout: return LLMD_ERR_TIMEOUT;
    case llmd::ClientError::Kind::kServerError: return LLMD_ERR_SERVER;
    case llmd::ClientError::Kind::kIoError: return LLMD_ERR_IO;
  }
  return LLMD_ERR_IO;
}

llmd_status Invalid(const char* what, char** errmsg) {
  if (errmsg != nullptr) *errmsg = CopyString(std::string(what) + " must not be NULL");
  return LLMD_ERR_INVALID_ARGUMENT;
}

}  // namespace

extern "C" {

llmd_client_params llmd_client_default_params(void) { return {"/run/llmd/llm.sock", 10000}; }

llmd_client* llmd_client_open(const llmd_client_params* params) {
  llmd_client_params p = params != nullptr ? *params : llmd_client_default_params();
  if (p.socket_path == nullptr) p.socket_path = "/run/llmd/llm.sock";
  if (p.timeout_ms <= 0) p.timeout_ms = 10000;
  return new (std::nothrow) llmd_client{llmd::LlmClient(p.socket_path, std::chrono::milliseconds(p.timeout_ms))};
}

void llmd_client_close(llmd_client* client) { delete client; }

llmd_status llmd_generate(llmd_client* client, const char* prompt, int32_t max_tokens, char** text_out,
                          uint32_t* tokens_out, uint32_t* server_code, char** errmsg) {
  if (client == nullptr) return Invalid("client", errmsg);
  if (prompt == nullptr) return Invalid("prompt", errmsg);
  if (text_out == nullptr) return Invalid("text_out", errmsg);
  std::optional<uint32_t> max;
  if (max_tokens > 0) max = static_cast<uint32_t>(max_tokens);
  auto r = client->client.Generate(prompt, max);
  if (!r.has_value()) return Fail(r.error(), server_code, errmsg);
  *text_out = CopyString(r->text);
  if (tokens_out != nullptr) *tokens_out = r->tokens_generated;
  return LLMD_OK;
}

llmd_status llmd_generate_stream(llmd_client* client, const char* prompt, int32_t max_tokens,
                                 llmd_text_callback on_text, void* user_data, uint32_t* tokens_out,
                                 uint32_t* server_code, char** errmsg) {
  if (client == nullptr) return Invalid("client", errmsg);
  if (prompt == nullptr) return Invalid("prompt", errmsg);
  llmd::GenerateOptions options;
  if (max_tokens > 0) options.max_tokens = static_cast<uint32_t>(max_tokens);
  auto r = client->client.GenerateStream(prompt, options, [&](std::string_view text) {
    return on_text == nullptr || on_text(text.data(), static_cast<int32_t>(text.size()), user_data) == 0;
  });
  if (!r.has_value()) return Fail(r.error(), server_code, errmsg);
  if (tokens_out != nullptr) *tokens_out = r->tokens_generated;
  return LLMD_OK;
}

llmd_status llmd_health(llmd_client* client, int32_t* model_loaded, uint8_t* npu_core, float* kv_cache_usage,
                        char** errmsg) {
  if (client == nullptr) return Invalid("client", errmsg);
  auto r = client->client.HealthCheck();
  if (!r.has_value()) return Fail(r.error(), nullptr, errmsg);
  if (model_loaded != nullptr) *model_loaded = r->model_loaded ? 1 : 0;
  if (npu_core != nullptr) *npu_core = r->npu_core;
  if (kv_cache_usage != nullptr) *kv_cache_usage = r->kv_cache_usage;
  return LLMD_OK;
}

llmd_status llmd_shutdown(llmd_client* client, uint32_t* server_code, char** errmsg) {
  if (client == nullptr) return Invalid("client", errmsg);
  if (auto e = client->client.Shutdown()) return Fail(*e, server_code, errmsg);
  return LLMD_OK;
}

void llmd_free(void* ptr) { std::free(ptr); }

}  // extern "C"
