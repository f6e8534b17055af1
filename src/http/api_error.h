// ApiError: the one mapping from a Status (code and reason) to an HTTP status and an error's
// `type`, `code` and `param`, in OpenAI's vocabulary; each API's front end renders it in its
// own body shape (json_reply.h). No message text is ever inspected.
#ifndef LLMD_HTTP_API_ERROR_H_
#define LLMD_HTTP_API_ERROR_H_

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

ApiError ApiErrorOf(const Status& status);

}  // namespace llmd::http

#endif  // LLMD_HTTP_API_ERROR_H_
