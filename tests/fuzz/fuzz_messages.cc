// Postcard request/response decoding from arbitrary payloads. Whatever decodes must encode
// and decode again to the same bytes. (Values are compared through their encoding: a NaN
// sampling parameter decodes fine, is refused later by validation, and is unequal to itself.)
#include <cstddef>
#include <cstdint>
#include <string>

#include "proto/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string payload(reinterpret_cast<const char*>(data), size);
  if (auto req = llmd::proto::DecodeRequest(payload); req.has_value()) {
    auto again = llmd::proto::DecodeRequest(llmd::proto::EncodeRequest(*req));
    if (!again.has_value() ||
        llmd::proto::EncodeRequest(*again) != llmd::proto::EncodeRequest(*req)) {
      __builtin_trap();
    }
  }
  if (auto resp = llmd::proto::DecodeResponse(payload); resp.has_value()) {
    auto again = llmd::proto::DecodeResponse(llmd::proto::EncodeResponse(*resp));
    if (!again.has_value() ||
        llmd::proto::EncodeResponse(*again) != llmd::proto::EncodeResponse(*resp)) {
      __builtin_trap();
    }
  }
  return 0;
}
