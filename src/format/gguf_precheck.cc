#include "format/gguf_precheck.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "format/ggml_types.h"
#include "format/gguf_metadata.h"

namespace llmd::format {
namespace {

enum GgufType : uint32_t {
  kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64,
  kTypeCount
};

// Bytes of one scalar of `type`; 0 for string and array.
uint64_t ScalarSize(uint32_t type) {
  static constexpr uint64_t kSizes[kTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return type < kTypeCount ? kSizes[type] : 0;
}

Status Bad(const std::string& what) { return CorruptionError("GGUF " + what); }

// Sequential little-endian reads with a window buffer; every read is bounds-checked against
// the file size before any allocation.
class Reader {
 public:
  explicit Reader(const RandomAccessFile& file) : file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return file_.size() - pos_; }
  // Back to a position read before (to read a checked value again).
  void Seek(uint64_t pos) { pos_ = std::min(pos, file_.size()); }

  Status Skip(uint64_t n, const char* what) {
    if (n > remaining()) return Truncated(what);
    pos_ += n;
    return Status::Ok();
  }

  Status Bytes(uint64_t n, char* dst, const char* what) {
    if (n > remaining()) return Truncated(what);
    while (n > 0) {
      if (pos_ < buf_start_ || pos_ >= buf_start_ + buf_.size()) LLMD_RETURN_IF_ERROR(Fill());
      uint64_t in_buf = buf_start_ + buf_.size() - pos_;
      size_t take = static_cast<size_t>(std::min(n, in_buf));
      std::memcpy(dst, buf_.data() + (pos_ - buf_start_), take);
      dst += take;
      pos_ += take;
      n -= take;
    }
    return Status::Ok();
  }

  template <typename T>
  Status Scalar(T* out, const char* what) {
    unsigned char raw[sizeof(T)];
    LLMD_RETURN_IF_ERROR(Bytes(sizeof(T), reinterpret_cast<char*>(raw), what));
    std::make_unsigned_t<T> v = 0;
    for (int i = sizeof(T) - 1; i >= 0; --i) v = (v << 8) | raw[i];
    std::memcpy(out, &v, sizeof(T));
    return Status::Ok();
  }

  // A gguf_string (u64 length + bytes) read into memory; `limit` caps the allocation.
  Status String(std::string* out, uint64_t limit, const char* what) {
    uint64_t len;
    LLMD_RETURN_IF_ERROR(Scalar(&len, what));
    if (len > remaining()) {
      return Bad(std::string(what) + ": string length " + std::to_string(len) +
                 " exceeds the " + std::to_string(remaining()) + " bytes left in the file");
    }
    if (len > limit) {
      return Bad(std::string(what) + ": string length " + std::to_string(len) +
                 " exceeds the limit of " + std::to_string(limit));
    }
    out->resize(static_cast<size_t>(len));
    return Bytes(len, out->data(), what);
  }

  // A gguf_string whose content is not needed.
  Status SkipString(const char* what) {
    uint64_t len;
    LLMD_RETURN_IF_ERROR(Scalar(&len, what));
    if (len > remaining()) {
      return Bad(std::string(what) + ": string length " + std::to_string(len) +
                 " exceeds the " + std::to_string(remaining()) + " bytes left in the file");
    }
    pos_ += len;
    return Status::Ok();
  }

 private:
  static constexpr size_t kWindow = 1 << 20;

  Status Truncated(const char* what) const {
    return Bad(std::string("file is truncated in ") + what + " at offset " +
               std::to_string(pos_) + " (file size " + std::to_string(file_.size()) + ")");
  }

  Status Fill() {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kWindow, remaining()));
    buf_.resize(n);
    buf_start_ = pos_;
    return file_.Read(pos_, n, buf_.data());
  }

  const RandomAccessFile& file_;
  uint64_t pos_ = 0;
  std::vector<char> buf_;
  uint64_t buf_start_ = 0;
};

// Expected element types of the tokenizer arrays llama.cpp indexes without checking.
uint32_t ExpectedArrayType(const std::string& key) {
  if (key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.merges") return kString;
  if (key == "tokenizer.ggml.token_type") return kI32;
  if (key == "tokenizer.ggml.scores") return kF32;
  return kTypeCount;  // any
}

bool IsByteTokenText(const std::string& s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') ||
                                 (c >= 'a' && c <= 'f'); };
  return s.size() == 6 && s.starts_with("<0x") && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

struct VocabFacts {
  // One bit per token (bounded by the file size, never a copy of the strings): whether its
  // text has the <0xHH> form, and whether its type says it is a byte token.
  std::vector<bool> byte_text;
  std::vector<bool> byte_type;
  uint64_t n_tokens = 0;
  uint64_t n_token_types = 0;
  uint64_t n_scores = 0;
  bool has_tokens = false, has_token_types = false, has_scores = false;
  std::vector<std::pair<std::string, uint32_t>> special_ids;  // key, id
};

class Prechecker {
 public:
  Prechecker(const RandomAccessFile& file, GgufMetadata* metadata)
      : file_(file), r_(file), metadata_(metadata) {}

  Result<GgufSummary> Run() {
    LLMD_RETURN_IF_ERROR(Header());
    LLMD_RETURN_IF_ERROR(KeyValues());
    LLMD_RETURN_IF_ERROR(CheckVocab());
    LLMD_RETURN_IF_ERROR(Tensors());
    if (summary_.architecture.empty()) return Bad("has no general.architecture string");
    ResolveShape();
    return summary_;
  }

 private:
  Status Header() {
    char magic[4];
    LLMD_RETURN_IF_ERROR(r_.Bytes(4, magic, "the header"));
    if (std::memcmp(magic, "GGUF", 4) != 0) return Bad("magic is missing");
    LLMD_RETURN_IF_ERROR(r_.Scalar(&summary_.version, "the header"));
    if (summary_.version != 2 && summary_.version != 3) {
      return Bad("version " + std::to_string(summary_.version) + " is not supported");
    }
    LLMD_RETURN_IF_ERROR(r_.Scalar(&summary_.n_tensors, "the header"));
    LLMD_RETURN_IF_ERROR(r_.Scalar(&summary_.n_kv, "the header"));
    // Smallest encodings: a KV is key length (8) + type (4) + 1 byte; a tensor info is
    // name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
    if (summary_.n_kv > r_.remaining() / 13) {
      return Bad("header claims " + std::to_string(summary_.n_kv) +
                 " key-value pairs, more than the file can hold");
    }
    if (summary_.n_tensors > r_.remaining() / 32) {
      return Bad("header claims " + std::to_string(summary_.n_tensors) +
                 " tensors, more than the file can hold");
    }
    return Status::Ok();
  }

  Status KeyValues() {
    std::set<std::string> seen;
    for (uint64_t i = 0; i < summary_.n_kv; ++i) {
      std::string key;
      LLMD_RETURN_IF_ERROR(r_.String(&key, kMaxKeyBytes, "a key-value key"));
      if (key.empty()) return Bad("key-value pair " + std::to_string(i) + " has an empty key");
      if (!seen.insert(key).second) return Bad("duplicate key '" + key + "'");
      uint32_t type;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&type, "a key-value type"));
      const uint64_t start = r_.pos();
      LLMD_RETURN_IF_ERROR(Value(key, type));
      if (metadata_ != nullptr) LLMD_RETURN_IF_ERROR(Record(std::move(key), type, start));
    }
    return Status::Ok();
  }

  Status Value(const std::string& key, uint32_t type) {
    const std::string where = "key '" + key + "'";
    if (type >= kTypeCount) return Bad(where + ": unknown value type " + std::to_string(type));
    if (key == "general.alignment") {
      if (type != kU32) return Bad(where + ": must be a UINT32");
      uint32_t a;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&a, "general.alignment"));
      if (a == 0 || (a & (a - 1)) != 0 || a > kMaxAlignment) {
        return Bad("alignment " + std::to_string(a) + " is not a power of two <= 1 MiB");
      }
      summary_.alignment = a;
      return Status::Ok();
    }
    if (key == "general.architecture" || key == "general.name") {
      if (type != kString) return Bad(where + ": must be a string");
      std::string* dst = key == "general.name" ? &summary_.name : &summary_.architecture;
      return r_.String(dst, kMaxKeyBytes, "general.architecture");
    }
    if (key.starts_with("tokenizer.ggml.") && key.ends_with("_token_id")) {
      if (type != kU32 && type != kI32) return Bad(where + ": must be a 32-bit integer");
      uint32_t id;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&id, where.c_str()));
      if (!(type == kI32 && static_cast<int32_t>(id) == -1)) vocab_.special_ids.emplace_back(key, id);
      return Status::Ok();
    }
    if (type == kString) return r_.SkipString(where.c_str());
    if (IsShapeKey(key) && shape_.size() < 64 && (type == kU32 || type == kI32 || type == kU64 || type == kI64)) {
      return ShapeValue(key, type);
    }
    if (type != kArray) return r_.Skip(ScalarSize(type), where.c_str());
    return Array(key, where);
  }

  // Reads the value Value() has just checked (it starts at `start`) again, as reports show it
  // (GgufMetadata), and goes on from where Value() stopped; every read here is one Value()
  // has bounded.
  Status Record(std::string key, uint32_t type, uint64_t start) {
    const uint64_t end = r_.pos();
    const bool chat_template = type == kString && key == "tokenizer.chat_template";
    r_.Seek(start);
    const uint64_t string_limit = chat_template ? kMaxChatTemplateBytes : kMaxShownStringBytes;
    LLMD_ASSIGN_OR_RETURN(GgufValue value, ShownValue(type, string_limit));
    r_.Seek(end);
    if (chat_template) {
      auto* text = std::get_if<std::string>(&value);
      if (text != nullptr) metadata_->chat_template = std::move(*text);
      return Status::Ok();
    }
    const uint64_t* u = std::get_if<uint64_t>(&value);
    if (key == "general.file_type" && u != nullptr && *u <= std::numeric_limits<uint32_t>::max()) {
      metadata_->file_type = static_cast<uint32_t>(*u);
    }
    metadata_->values.push_back({std::move(key), std::move(value)});
    return Status::Ok();
  }

  // A value of `type` as GgufValue holds it; strings up to `string_limit` bytes.
  Result<GgufValue> ShownValue(uint32_t type, uint64_t string_limit) {
    const char* what = "a key-value value";
    if (type == kString) {
      uint64_t len;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&len, what));
      if (len > string_limit) return GgufValue();
      std::string text(static_cast<size_t>(len), '\0');
      LLMD_RETURN_IF_ERROR(r_.Bytes(len, text.data(), what));
      return GgufValue(std::move(text));
    }
    if (type == kArray) {
      uint32_t elem;
      uint64_t count;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&elem, what));
      LLMD_RETURN_IF_ERROR(r_.Scalar(&count, what));
      if (elem == kString || count > kMaxShownArray) return GgufValue();
      std::vector<GgufScalar> list(static_cast<size_t>(count));
      for (GgufScalar& v : list) LLMD_RETURN_IF_ERROR(ScalarValue(elem, &v));
      return GgufValue(std::move(list));
    }
    GgufScalar v;
    LLMD_RETURN_IF_ERROR(ScalarValue(type, &v));
    return std::visit([](auto x) { return GgufValue(x); }, v);
  }

  // One scalar of `type` (not a string or an array).
  Status ScalarValue(uint32_t type, GgufScalar* out) {
    switch (type) {
      case kU8: return ReadScalarAs<uint8_t, uint64_t>(out);
      case kI8: return ReadScalarAs<int8_t, int64_t>(out);
      case kU16: return ReadScalarAs<uint16_t, uint64_t>(out);
      case kI16: return ReadScalarAs<int16_t, int64_t>(out);
      case kU32: return ReadScalarAs<uint32_t, uint64_t>(out);
      case kI32: return ReadScalarAs<int32_t, int64_t>(out);
      case kU64: return ReadScalarAs<uint64_t, uint64_t>(out);
      case kI64: return ReadScalarAs<int64_t, int64_t>(out);
      case kBool: return ReadScalarAs<uint8_t, bool>(out);
      case kF32: {
        uint32_t bits;
        LLMD_RETURN_IF_ERROR(r_.Scalar(&bits, "a key-value value"));
        *out = std::bit_cast<float>(bits);
        return Status::Ok();
      }
      case kF64: {
        uint64_t bits;
        LLMD_RETURN_IF_ERROR(r_.Scalar(&bits, "a key-value value"));
        *out = std::bit_cast<double>(bits);
        return Status::Ok();
      }
      default:
        return Bad("value type " + std::to_string(type) + " is not a scalar");
    }
  }

  // A `Raw` from the file, widened to `As` (sign-extended; a bool is any non-zero byte).
  template <typename Raw, typename As>
  Status ReadScalarAs(GgufScalar* out) {
    Raw v;
    LLMD_RETURN_IF_ERROR(r_.Scalar(&v, "a key-value value"));
    *out = static_cast<As>(v);
    return Status::Ok();
  }

  // The architecture-prefixed hyperparameters the planner needs. They may come before
  // general.architecture, so they are kept by full key and resolved at the end.
  static constexpr const char* kShapeSuffixes[] = {".block_count", ".context_length", ".embedding_length", ".attention.head_count",
                                                   ".attention.head_count_kv", ".attention.key_length",
                                                   ".attention.value_length", ".full_attention_interval",
                                                   ".ssm.conv_kernel", ".ssm.inner_size", ".ssm.state_size",
                                                   ".ssm.group_count", ".nextn_predict_layers"};
  static bool IsShapeKey(const std::string& key) {
    return std::any_of(std::begin(kShapeSuffixes), std::end(kShapeSuffixes),
                       [&](const char* suffix) { return key.ends_with(suffix); });
  }

  Status ShapeValue(const std::string& key, uint32_t type) {
    uint64_t v = 0;
    if (type == kU32 || type == kI32) {
      uint32_t v32;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&v32, key.c_str()));
      v = type == kI32 && static_cast<int32_t>(v32) < 0 ? 0 : v32;
    } else {
      LLMD_RETURN_IF_ERROR(r_.Scalar(&v, key.c_str()));
      if (type == kI64 && static_cast<int64_t>(v) < 0) v = 0;
    }
    shape_[key] = static_cast<uint32_t>(std::min<uint64_t>(v, std::numeric_limits<uint32_t>::max()));
    return Status::Ok();
  }

  void ResolveShape() {
    auto get = [&](const char* suffix) {
      auto it = shape_.find(summary_.architecture + suffix);
      return it == shape_.end() ? 0u : it->second;
    };
    summary_.block_count = get(".block_count");
    summary_.context_length = get(".context_length");
    const uint32_t embd = get(".embedding_length"), heads = get(".attention.head_count");
    summary_.embedding_length = embd;
    summary_.head_count = heads;
    summary_.head_count_kv = get(".attention.head_count_kv") ? get(".attention.head_count_kv") : heads;
    const uint32_t head_dim = heads ? embd / heads : 0;
    summary_.key_length = get(".attention.key_length") ? get(".attention.key_length") : head_dim;
    summary_.value_length = get(".attention.value_length") ? get(".attention.value_length") : head_dim;
    summary_.tied_output_bytes = has_output_weight_ ? 0 : token_embd_bytes_;
    summary_.ssm_conv_kernel = get(".ssm.conv_kernel");
    summary_.ssm_inner_size = get(".ssm.inner_size");
    summary_.ssm_state_size = get(".ssm.state_size");
    summary_.ssm_group_count = get(".ssm.group_count");
    summary_.nextn_layers = get(".nextn_predict_layers");
    // qwen35's loader defaults the interval to 4 when the file has recurrent layers.
    summary_.full_attention_interval = get(".full_attention_interval");
    if (summary_.full_attention_interval == 0 && summary_.ssm_inner_size > 0) summary_.full_attention_interval = 4;
  }

  // Adds a tensor's bytes to the part of the model llama.cpp places it with.
  void CountTensorBytes(const std::string& name, uint64_t nbytes) {
    static constexpr uint32_t kMaxBlocks = 1 << 16;  // a crafted "blk.4000000000" stays bounded
    if (name.starts_with("blk.")) {
      uint32_t block = 0;
      const char* first = name.data() + 4;
      const char* last = name.data() + name.size();
      auto [end, ec] = std::from_chars(first, last, block);
      if (ec == std::errc() && end != first && end != last && *end == '.' && block < kMaxBlocks) {
        if (summary_.layer_bytes.size() <= block) summary_.layer_bytes.resize(block + 1, 0);
        summary_.layer_bytes[block] += nbytes;
        return;
      }
    }
    if (name == "output.weight") has_output_weight_ = true;
    if (name == "token_embd.weight") token_embd_bytes_ = nbytes;
    if (name.starts_with("output.") || name.starts_with("output_norm.")) {
      summary_.output_bytes += nbytes;
    } else {
      summary_.input_bytes += nbytes;
    }
  }

  Status Array(const std::string& key, const std::string& where) {
    uint32_t elem;
    uint64_t count;
    LLMD_RETURN_IF_ERROR(r_.Scalar(&elem, where.c_str()));
    LLMD_RETURN_IF_ERROR(r_.Scalar(&count, where.c_str()));
    if (elem >= kTypeCount) return Bad(where + ": unknown array element type " + std::to_string(elem));
    if (elem == kArray) return Bad(where + ": nested arrays are not supported");
    uint32_t expected = ExpectedArrayType(key);
    if (expected != kTypeCount && elem != expected) {
      return Bad(where + ": array element type " + std::to_string(elem) + " should be " +
                 std::to_string(expected));
    }
    uint64_t min_elem = elem == kString ? 8 : ScalarSize(elem);
    if (count > r_.remaining() / min_elem) {
      return Bad(where + ": array count " + std::to_string(count) +
                 " exceeds what the file can hold");
    }
    if (key == "tokenizer.ggml.tokens") return Tokens(count);
    if (key == "tokenizer.ggml.token_type") return TokenTypes(count);
    if (key == "tokenizer.ggml.scores") {
      vocab_.has_scores = true;
      vocab_.n_scores = count;
    }
    if (elem != kString) return r_.Skip(count * min_elem, where.c_str());
    for (uint64_t i = 0; i < count; ++i) LLMD_RETURN_IF_ERROR(r_.SkipString(where.c_str()));
    return Status::Ok();
  }

  Status Tokens(uint64_t count) {
    vocab_.has_tokens = true;
    vocab_.n_tokens = count;
    summary_.vocab_size = count;
    vocab_.byte_text.resize(static_cast<size_t>(count));
    std::string t;
    for (uint64_t i = 0; i < count; ++i) {
      Status s = r_.String(&t, kMaxTokenBytes, "tokenizer.ggml.tokens");
      if (!s.ok()) return s.WithContext("token " + std::to_string(i));
      vocab_.byte_text[static_cast<size_t>(i)] = IsByteTokenText(t);
    }
    return Status::Ok();
  }

  Status TokenTypes(uint64_t count) {
    vocab_.has_token_types = true;
    vocab_.n_token_types = count;
    constexpr int32_t kByteTokenType = 6;  // LLAMA_TOKEN_TYPE_BYTE
    vocab_.byte_type.resize(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      int32_t t;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&t, "tokenizer.ggml.token_type"));
      vocab_.byte_type[static_cast<size_t>(i)] = t == kByteTokenType;
    }
    return Status::Ok();
  }

  Status CheckVocab() {
    if (!vocab_.has_tokens) {
      if (vocab_.has_token_types || vocab_.has_scores) return Bad("has token types or scores but no tokens");
      return Status::Ok();
    }
    if (vocab_.n_tokens == 0) return Bad("vocabulary is empty");
    if (vocab_.has_token_types && vocab_.n_token_types != vocab_.n_tokens) {
      return Bad("tokenizer.ggml.token_type has " + std::to_string(vocab_.n_token_types) +
                 " entries for " + std::to_string(vocab_.n_tokens) + " tokens");
    }
    if (vocab_.has_scores && vocab_.n_scores != vocab_.n_tokens) {
      return Bad("tokenizer.ggml.scores has " + std::to_string(vocab_.n_scores) +
                 " entries for " + std::to_string(vocab_.n_tokens) + " tokens");
    }
    for (const auto& [key, id] : vocab_.special_ids) {
      if (id >= vocab_.n_tokens) {
        return Bad("key '" + key + "': token id " + std::to_string(id) +
                   " is outside the vocabulary of " + std::to_string(vocab_.n_tokens));
      }
    }
    for (size_t i = 0; i < vocab_.byte_type.size(); ++i) {
      if (vocab_.byte_type[i] && !vocab_.byte_text[i]) {
        return Bad("byte token " + std::to_string(i) + " is not of the form <0xHH>");
      }
    }
    return Status::Ok();
  }

  Status Tensors() {
    struct Span {
      uint64_t begin, end;
      size_t index;
    };
    std::vector<Span> spans;
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (uint64_t i = 0; i < summary_.n_tensors; ++i) {
      std::string name;
      LLMD_RETURN_IF_ERROR(r_.String(&name, kMaxKeyBytes, "a tensor name"));
      const std::string where = "tensor '" + name + "'";
      if (!seen.insert(name).second) return Bad("duplicate " + where);
      uint32_t n_dims;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&n_dims, where.c_str()));
      if (n_dims == 0 || n_dims > kMaxTensorDims) {
        return Bad(where + ": " + std::to_string(n_dims) + " dimensions (must be 1..4)");
      }
      int64_t ne[kMaxTensorDims] = {1, 1, 1, 1};
      uint64_t elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        LLMD_RETURN_IF_ERROR(r_.Scalar(&ne[d], where.c_str()));
        if (ne[d] <= 0) return Bad(where + ": dimension " + std::to_string(d) + " is " + std::to_string(ne[d]));
        if (elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne[d]) {
          return Bad(where + ": element count overflows");
        }
        elements *= static_cast<uint64_t>(ne[d]);
      }
      const uint64_t counted = summary_.parameter_count;
      summary_.parameter_count = elements > std::numeric_limits<uint64_t>::max() - counted
                                     ? std::numeric_limits<uint64_t>::max()
                                     : counted + elements;
      uint32_t type;
      uint64_t offset;
      LLMD_RETURN_IF_ERROR(r_.Scalar(&type, where.c_str()));
      LLMD_RETURN_IF_ERROR(r_.Scalar(&offset, where.c_str()));
      const GgmlTypeInfo* info = FindGgmlType(type);
      if (info == nullptr) return Bad(where + ": unknown tensor type " + std::to_string(type));
      if (ne[0] % info->block_size != 0) {
        return Bad(where + ": row of " + std::to_string(ne[0]) + " is not a multiple of the " +
                   std::string(info->name) + " block size " + std::to_string(info->block_size));
      }
      uint64_t blocks = elements / static_cast<uint64_t>(info->block_size);
      if (blocks > std::numeric_limits<uint64_t>::max() / info->type_size) {
        return Bad(where + ": byte size overflows");
      }
      uint64_t nbytes = blocks * info->type_size;
      if (offset % summary_.alignment != 0) {
        return Bad(where + ": offset " + std::to_string(offset) + " is not aligned to " +
                   std::to_string(summary_.alignment));
      }
      if (nbytes > std::numeric_limits<uint64_t>::max() - summary_.tensor_bytes) {
        return Bad("total tensor size overflows");
      }
      summary_.tensor_bytes += nbytes;
      CountTensorBytes(name, nbytes);
      spans.push_back({offset, 0, names.size()});
      spans.back().end = nbytes;  // the size for now; checked against the data section below
      names.push_back(name);
    }
    // Tensor data starts at the next alignment boundary after the tensor table (a file with
    // no tensors needs no padding).
    uint64_t pos = r_.pos();
    uint64_t pad = summary_.n_tensors == 0
                       ? 0
                       : (summary_.alignment - pos % summary_.alignment) % summary_.alignment;
    if (pad > file_.size() - pos) return Bad("file is truncated before the tensor data");
    summary_.data_offset = pos + pad;
    uint64_t data_size = file_.size() - summary_.data_offset;
    for (auto& s : spans) {
      uint64_t nbytes = s.end;
      if (s.begin > data_size || nbytes > data_size - s.begin) {
        return Bad("tensor '" + names[s.index] + "': data at " + std::to_string(s.begin) + ".." +
                   std::to_string(s.begin) + "+" + std::to_string(nbytes) +
                   " runs past the end of the file (data section is " +
                   std::to_string(data_size) + " bytes)");
      }
      s.end = s.begin + nbytes;
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < spans.size(); ++i) {
      if (spans[i].begin < spans[i - 1].end) {
        return Bad("tensors '" + names[spans[i - 1].index] + "' and '" + names[spans[i].index] +
                   "' overlap");
      }
    }
    return Status::Ok();
  }

  const RandomAccessFile& file_;
  Reader r_;
  GgufMetadata* metadata_;  // filled as the key-values are checked; nullptr: not wanted
  GgufSummary summary_;
  VocabFacts vocab_;
  std::map<std::string, uint32_t> shape_;  // shape hyperparameters by full key
  bool has_output_weight_ = false;
  uint64_t token_embd_bytes_ = 0;
};

}  // namespace

Result<GgufSummary> PrecheckGguf(const RandomAccessFile& file, GgufMetadata* metadata) {
  return Prechecker(file, metadata).Run();
}

}  // namespace llmd::format
