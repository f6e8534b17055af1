#include "http/api_text.h"

namespace llmd::http {

std::string Quoted(const std::string& field) { return "'" + field + "'"; }

std::string DumpOrdered(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string IdSuffix(const std::string& id) {
  const size_t underscore = id.find('_');
  return underscore == std::string::npos ? id : id.substr(underscore + 1);
}

std::string Extension(const std::string& sent, const std::string& now) {
  if (now.size() <= sent.size() || now.compare(0, sent.size(), sent) != 0) return {};
  return now.substr(sent.size());
}

}  // namespace llmd::http
