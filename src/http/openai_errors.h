// The OpenAI-compatible API's one mapping from a Status (code and reason) to an HTTP status
// and OpenAI's error `type`, `code` and `param`. No message text is ever inspected.
#ifndef LLMD_HTTP_OPENAI_ERRORS_H_
#define LLMD_HTTP_OPENAI_ERRORS_H_

#include <string>
#include <utility>
#include <vector>

#include "llmd/status.h"

namespace llmd::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct ApiError {
  int status;
  const char* type;
  const char* code;
  std::string message;
  Headers headers;
  const char* param = nullptr;  // the request field at fault, where the reason says; else null
};

ApiError OpenAiError(const Status& status);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_ERRORS_H_
