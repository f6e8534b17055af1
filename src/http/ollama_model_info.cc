// Ollama's model facts (/api/show, /api/tags): read from the GGUF header through a bounded
// reader, never trusting a length from the file.
#include "http/ollama_api.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "http/json_reply.h"

namespace llmd::http {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxKeyBytes = 64 * 1024;
constexpr uint64_t kMaxInfoStringBytes = 4096;
constexpr uint64_t kMaxTemplateBytes = 1 << 20;
constexpr uint64_t kMaxInfoArray = 1024;
enum GgufType : uint32_t {
  kU8 = 0,
  kI8,
  kU16,
  kI16,
  kU32,
  kI32,
  kF32,
  kBool,
  kString,
  kArray,
  kU64,
  kI64,
  kF64,
  kTypeCount
};

uint64_t ScalarBytes(uint32_t type) {
  static constexpr uint64_t kSizes[kTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return type < kTypeCount ? kSizes[type] : 0;
}

// Sequential little-endian reads through a 1 MiB window, every one checked against the size.
class GgufReader {
 public:
  explicit GgufReader(const format::RandomAccessFile& file) : file_(file) {}

  uint64_t remaining() const { return file_.size() - pos_; }

  Status Bytes(uint64_t n, char* dst) {
    if (n > remaining()) return Truncated();
    while (n > 0) {
      if (pos_ < start_ || pos_ >= start_ + buf_.size()) {
        buf_.resize(static_cast<size_t>(std::min<uint64_t>(kWindow, remaining())));
        start_ = pos_;
        LLMD_RETURN_IF_ERROR(file_.Read(pos_, buf_.size(), buf_.data()));
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, start_ + buf_.size() - pos_));
      std::memcpy(dst, buf_.data() + (pos_ - start_), take);
      dst += take;
      pos_ += take;
      n -= take;
    }
    return Status::Ok();
  }
  Status Skip(uint64_t n) {
    if (n > remaining()) return Truncated();
    pos_ += n;
    return Status::Ok();
  }
  Status U64(uint64_t* v) { return Le(v, 8); }
  Status U32(uint32_t* v) {
    uint64_t wide = 0;
    LLMD_RETURN_IF_ERROR(Le(&wide, 4));
    *v = static_cast<uint32_t>(wide);
    return Status::Ok();
  }
  Status Le(uint64_t* v, int n) {
    unsigned char raw[8];
    LLMD_RETURN_IF_ERROR(Bytes(n, reinterpret_cast<char*>(raw)));
    *v = 0;
    for (int i = n - 1; i >= 0; --i) *v = (*v << 8) | raw[i];
    return Status::Ok();
  }
  // A gguf_string; one longer than `limit` is skipped and *out left empty (`*skipped` set).
  Status String(std::string* out, uint64_t limit, bool* skipped = nullptr) {
    uint64_t len = 0;
    LLMD_RETURN_IF_ERROR(U64(&len));
    if (len > remaining()) {
      return CorruptionError("GGUF string length " + std::to_string(len) +
                             " runs past the end of the file");
    }
    out->clear();
    if (len > limit) {
      if (skipped == nullptr) {
        return CorruptionError("GGUF string of " + std::to_string(len) +
                               " bytes where a key was expected");
      }
      *skipped = true;
      return Skip(len);
    }
    out->resize(static_cast<size_t>(len));
    return Bytes(len, out->data());
  }

 private:
  static constexpr uint64_t kWindow = 1 << 20;
  Status Truncated() const {
    return CorruptionError("GGUF file is truncated at offset " + std::to_string(pos_));
  }
  const format::RandomAccessFile& file_;
  uint64_t pos_ = 0;
  std::vector<char> buf_;
  uint64_t start_ = 0;
};

// One scalar of `type` as JSON.
Result<json> Scalar(GgufReader& r, uint32_t type) {
  uint64_t raw = 0;
  LLMD_RETURN_IF_ERROR(r.Le(&raw, static_cast<int>(ScalarBytes(type))));
  switch (type) {
    case kU8:
    case kU16:
    case kU32:
    case kU64:
      return json(raw);
    case kI8:
      return json(static_cast<int8_t>(raw));
    case kI16:
      return json(static_cast<int16_t>(raw));
    case kI32:
      return json(static_cast<int32_t>(raw));
    case kI64:
      return json(static_cast<int64_t>(raw));
    case kF32:
      return SerializeFloat(std::bit_cast<float>(static_cast<uint32_t>(raw)));
    case kF64: {
      const double d = std::bit_cast<double>(raw);
      return std::isfinite(d) ? json(d) : json(nullptr);
    }
    case kBool:
      return json(raw != 0);
    default:
      return CorruptionError("GGUF value type " + std::to_string(type) + " is unknown");
  }
}

// A value of `type` (after its type), as model_info shows it.
Result<json> Value(GgufReader& r, uint32_t type, uint64_t string_limit,
                   std::string* text = nullptr) {
  if (type == kString) {
    std::string s;
    bool skipped = false;
    LLMD_RETURN_IF_ERROR(r.String(&s, string_limit, &skipped));
    if (skipped) return json(nullptr);
    if (text != nullptr) {
      *text = std::move(s);
      return json(nullptr);
    }
    return json(std::move(s));
  }
  if (type != kArray) {
    if (ScalarBytes(type) == 0) {
      return CorruptionError("GGUF value type " + std::to_string(type) + " is unknown");
    }
    return Scalar(r, type);
  }
  uint32_t elem = 0;
  uint64_t count = 0;
  LLMD_RETURN_IF_ERROR(r.U32(&elem));
  LLMD_RETURN_IF_ERROR(r.U64(&count));
  if (elem == kString) {
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t len = 0;
      LLMD_RETURN_IF_ERROR(r.U64(&len));
      LLMD_RETURN_IF_ERROR(r.Skip(len));
    }
    return json(nullptr);
  }
  const uint64_t size = ScalarBytes(elem);
  if (size == 0) {
    return CorruptionError("GGUF array element type " + std::to_string(elem) + " is not a scalar");
  }
  if (count > r.remaining() / size) {
    return CorruptionError("GGUF array of " + std::to_string(count) +
                           " runs past the end of the file");
  }
  if (count > kMaxInfoArray) {
    LLMD_RETURN_IF_ERROR(r.Skip(count * size));
    return json(nullptr);
  }
  json list = json::array();
  for (uint64_t i = 0; i < count; ++i) {
    LLMD_ASSIGN_OR_RETURN(json v, Scalar(r, elem));
    list.push_back(std::move(v));
  }
  return list;
}

}  // namespace

Result<GgufFacts> ReadGgufFacts(const format::RandomAccessFile& file) {
  GgufReader r(file);
  char magic[4];
  LLMD_RETURN_IF_ERROR(r.Bytes(4, magic));
  if (std::memcmp(magic, "GGUF", 4) != 0) return CorruptionError("not a GGUF file");
  uint32_t version = 0;
  uint64_t n_tensors = 0, n_kv = 0;
  LLMD_RETURN_IF_ERROR(r.U32(&version));
  if (version < 2) {
    return CorruptionError("GGUF version " + std::to_string(version) + " is not supported");
  }
  LLMD_RETURN_IF_ERROR(r.U64(&n_tensors));
  LLMD_RETURN_IF_ERROR(r.U64(&n_kv));
  GgufFacts facts;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    LLMD_RETURN_IF_ERROR(r.String(&key, kMaxKeyBytes));
    uint32_t type = 0;
    LLMD_RETURN_IF_ERROR(r.U32(&type));
    if (key == "tokenizer.chat_template" && type == kString) {
      LLMD_ASSIGN_OR_RETURN(json unused, Value(r, type, kMaxTemplateBytes, &facts.chat_template));
      continue;
    }
    LLMD_ASSIGN_OR_RETURN(json v, Value(r, type, kMaxInfoStringBytes));
    if (key == "general.architecture" && v.is_string()) facts.architecture = v.get<std::string>();
    if (key == "general.file_type" && v.is_number_unsigned() && v.get<uint64_t>() <= UINT32_MAX) {
      facts.file_type = static_cast<uint32_t>(v.get<uint64_t>());
    }
    facts.model_info[key] = std::move(v);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    std::string name;
    LLMD_RETURN_IF_ERROR(r.String(&name, kMaxKeyBytes));
    uint32_t n_dims = 0;
    LLMD_RETURN_IF_ERROR(r.U32(&n_dims));
    if (n_dims == 0 || n_dims > 4) {
      return CorruptionError("GGUF tensor '" + name + "' has " + std::to_string(n_dims) +
                             " dimensions");
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      LLMD_RETURN_IF_ERROR(r.U64(&ne));
      elements = (ne != 0 && elements > UINT64_MAX / ne) ? UINT64_MAX : elements * ne;
    }
    LLMD_RETURN_IF_ERROR(r.Skip(4 + 8));  // type, offset
    facts.parameter_count = elements > UINT64_MAX - facts.parameter_count
                                ? UINT64_MAX
                                : facts.parameter_count + elements;
  }
  if (!facts.model_info.contains("general.parameter_count")) {
    facts.model_info["general.parameter_count"] = facts.parameter_count;
  }
  return facts;
}

std::string FileTypeName(std::optional<uint32_t> file_type) {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4"},  {39, "NVFP4"},  {40, "Q1_0"},
      {41, "Q2_0"}};
  if (!file_type) return "unknown";
  for (const auto& [id, name] : kNames) {
    if (id == *file_type) return name;
  }
  return "unknown";
}

std::string ParameterSize(uint64_t n) {
  char buf[32];
  const double d = static_cast<double>(n);
  auto whole = [](double x) { return x == std::floor(x); };
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof buf, whole(d / 1e9) ? "%.0fB" : "%.1fB", d / 1e9);
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof buf, whole(d / 1e6) ? "%.0fM" : "%.2fM", d / 1e6);
  } else if (n >= 1000ull) {
    std::snprintf(buf, sizeof buf, "%.0fK", d / 1e3);
  } else {
    return std::to_string(n);
  }
  return buf;
}

}  // namespace llmd::http
