#include "models/modelfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "models/chat_template_syntax.h"

namespace llmd::models {
namespace {

constexpr std::string_view kInstructions = "FROM, SYSTEM, TEMPLATE, PARAMETER, EMBEDDING";
// Ollama's instructions that llmd has no use for: refused by name, not as unknown words.
constexpr std::string_view kOllamaOnly[] = {"ADAPTER",  "MESSAGE", "LICENSE", "DRAFT",
                                            "RENDERER", "PARSER",  "REQUIRES"};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// The text's lines, a CR before each line end dropped (files written on Windows).
std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (true) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (nl != std::string_view::npos && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file_name)
      : lines_(SplitLines(text)), file_(file_name) {}

  Result<Manifest> Parse();

 private:
  Status Error(size_t line_index, const std::string& message) const {
    return InvalidArgumentError(std::string(file_) + ":" + std::to_string(line_index + 1) + ": " +
                                message);
  }
  Result<std::string> ReadValue(std::string_view start, std::string_view instruction);
  Status Apply(const std::string& instruction, std::string_view args, size_t line);
  Status ApplyParameter(std::string_view args, size_t line);
  // Refuses a second instruction of a kind that may appear once.
  Status Once(const std::string& instruction, size_t line);

  std::vector<std::string_view> lines_;
  std::string_view file_;
  // The line after the instruction being read.
  size_t next_ = 0;
  // Each instruction that may appear once, with the index of its line.
  std::vector<std::pair<std::string, size_t>> seen_;
  Manifest manifest_;
};

// A value starts at `start` (a suffix of the current line): bare, the rest of the line; or
// quoted, up to the first line that ends with the closing quotes. Advances next_ past it.
Result<std::string> Parser::ReadValue(std::string_view start, std::string_view instruction) {
  const size_t first = next_ - 1;
  std::string_view quote;
  if (start.substr(0, 3) == R"(""")") {
    quote = R"(""")";
  } else if (start.substr(0, 1) == "\"") {
    quote = "\"";
  }
  if (quote.empty()) {
    std::string_view bare = TrimRight(start);
    if (bare.empty()) return Error(first, std::string(instruction) + " needs a value");
    return std::string(bare);
  }
  std::string value;
  for (size_t k = first; k < lines_.size(); ++k) {
    std::string_view piece = k == first ? start.substr(quote.size()) : lines_[k];
    std::string_view trimmed = TrimRight(piece);
    if (trimmed.size() >= quote.size() && trimmed.substr(trimmed.size() - quote.size()) == quote) {
      value.append(trimmed.substr(0, trimmed.size() - quote.size()));
      next_ = k + 1;
      return value;
    }
    value.append(piece);
    value.push_back('\n');
  }
  return Error(first, std::string(instruction) + ": " + std::string(quote) +
                          " is never closed (a quoted value ends on a line that ends with " +
                          std::string(quote) + ")");
}

Status Parser::Once(const std::string& instruction, size_t line) {
  for (const auto& [name, at] : seen_) {
    if (name == instruction) {
      return Error(line,
                   instruction + " is given twice (first on line " + std::to_string(at + 1) + ")");
    }
  }
  seen_.emplace_back(instruction, line);
  return Status::Ok();
}

Status Parser::ApplyParameter(std::string_view args, size_t line) {
  size_t key_end = 0;
  while (key_end < args.size() &&
         (std::isalnum(static_cast<unsigned char>(args[key_end])) || args[key_end] == '_')) {
    ++key_end;
  }
  std::string_view key = args.substr(0, key_end);
  if (key.empty()) return Error(line, "PARAMETER needs a key and a value");
  if (key_end < args.size() && !IsBlank(args[key_end])) {
    return Error(line, "PARAMETER key '" + std::string(TrimRight(args)) +
                           "' may hold only letters, digits and '_'");
  }
  std::string_view rest = TrimLeft(args.substr(key_end));
  if (rest.empty()) return Error(line, "PARAMETER " + std::string(key) + " needs a value");
  LLMD_ASSIGN_OR_RETURN(std::string value, ReadValue(rest, "PARAMETER " + std::string(key)));
  Status added = manifest_.defaults.parameters.Add(key, value);
  return added.ok() ? added : Error(line, added.message());
}

Status Parser::Apply(const std::string& instruction, std::string_view args, size_t line) {
  if (instruction == "PARAMETER") return ApplyParameter(args, line);
  LLMD_RETURN_IF_ERROR(Once(instruction, line));
  LLMD_ASSIGN_OR_RETURN(std::string value, ReadValue(args, instruction));
  ModelDefaults& d = manifest_.defaults;
  if (instruction == "SYSTEM") {
    d.system = std::move(value);
  } else if (instruction == "TEMPLATE") {
    if (Status jinja = CheckChatTemplate(value); !jinja.ok()) return Error(line, jinja.message());
    d.chat_template = std::move(value);
  } else if (instruction == "EMBEDDING") {
    const std::string v = Upper(value);
    if (v != "TRUE" && v != "FALSE") {
      return Error(line, "EMBEDDING must be true or false, not '" + value + "'");
    }
    d.embedding = v == "TRUE";
  } else {
    // FROM. Ollama's Modelfiles say "./x.gguf" for a file beside them.
    if (value.substr(0, 2) == "./") value.erase(0, 2);
    auto from = ParseFrom(value);
    if (!from.has_value()) return Error(line, from.error().message());
    manifest_.from = std::move(value);
  }
  return Status::Ok();
}

Result<Manifest> Parser::Parse() {
  while (next_ < lines_.size()) {
    const size_t line = next_++;
    std::string_view text = TrimLeft(lines_[line]);
    if (text.empty() || text.front() == '#') continue;
    const std::string_view word = text.substr(0, text.find_first_of(" \t"));
    const std::string instruction = Upper(word);
    const bool known = instruction == "FROM" || instruction == "SYSTEM" ||
                       instruction == "TEMPLATE" || instruction == "PARAMETER" ||
                       instruction == "EMBEDDING";
    if (!known) {
      const bool ollama = std::find(std::begin(kOllamaOnly), std::end(kOllamaOnly), instruction) !=
                          std::end(kOllamaOnly);
      return Error(line, (ollama ? instruction + " is not supported by llmd"
                                 : "unknown instruction '" + std::string(word) + "'") +
                             "; llmd reads " + std::string(kInstructions));
    }
    if (word.size() == text.size()) return Error(line, instruction + " needs a value");
    LLMD_RETURN_IF_ERROR(Apply(instruction, TrimLeft(text.substr(word.size())), line));
  }
  if (manifest_.from.empty()) {
    return InvalidArgumentError(std::string(file_) +
                                ": no FROM line (a manifest names its weights)");
  }
  return manifest_;
}

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

// `s` as a value ParseModelfile reads back the same: bare when it can be, else """-quoted.
Result<std::string> Quote(std::string_view s, std::string_view what) {
  if (s.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(std::string(what) + " holds a NUL byte");
  }
  const bool bare = !s.empty() && s.find_first_of("\r\n") == std::string_view::npos &&
                    !IsBlank(s.front()) && s.front() != '"' && !IsBlank(s.back());
  if (bare) return std::string(s);
  // In """ quotes every line but the last must not look like the end of the value.
  std::vector<std::string_view> lines;
  for (std::string_view rest = s;;) {
    const size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  for (size_t k = 0; k + 1 < lines.size(); ++k) {
    if (!lines[k].empty() && lines[k].back() == '\r') {
      return InvalidArgumentError(std::string(what) + " has a carriage return before a line end");
    }
    std::string_view t = TrimRight(lines[k]);
    if (t.size() >= 3 && t.substr(t.size() - 3) == R"(""")") {
      return InvalidArgumentError(std::string(what) +
                                  R"( has a line ending in """ before its last)");
    }
  }
  return R"(""")" + std::string(s) + R"(""")";
}

}  // namespace

ModelDefaults ModelDefaults::OverriddenBy(const ModelDefaults& over) const {
  ModelDefaults out = *this;
  if (over.system) out.system = over.system;
  if (over.chat_template) out.chat_template = over.chat_template;
  if (over.embedding) out.embedding = over.embedding;
  out.parameters = parameters.OverriddenBy(over.parameters);
  return out;
}

Result<FromTarget> ParseFrom(std::string_view from) {
  if (from.empty()) return InvalidArgumentError("FROM needs a value");
  FromTarget target;
  const bool is_file = from.size() > kGgufExtension.size() &&
                       from.substr(from.size() - kGgufExtension.size()) == kGgufExtension;
  if (!is_file) {
    auto name = ParseModelName(from);
    if (!name.has_value()) {
      return InvalidArgumentError("FROM names neither a .gguf file nor a model: " +
                                  name.error().message());
    }
    target.kind = FromTarget::Kind::kModel;
    target.model = std::move(*name);
    return target;
  }
  const std::string quoted = "FROM '" + std::string(from) + "'";
  if (from.find('/') != std::string_view::npos) {
    return InvalidArgumentError(quoted +
                                " is a path; name a GGUF file in the manifest's own directory");
  }
  if (from.front() == '.') return InvalidArgumentError(quoted + " names a hidden file");
  if (HasControl(from) || IsBlank(from.front()) || IsBlank(from.back())) {
    return InvalidArgumentError(quoted + " has control characters or spaces at its ends");
  }
  target.kind = FromTarget::Kind::kFile;
  target.file = std::string(from);
  return target;
}

Result<Manifest> ParseModelfile(std::string_view text, std::string_view file_name) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    const size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + nul, '\n'));
    return InvalidArgumentError(std::string(file_name) + ":" + std::to_string(line + 1) +
                                ": a NUL byte (a manifest is text)");
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte-order mark
  return Parser(text, file_name).Parse();
}

Result<Manifest> ReadModelfile(const std::string& path) {
  // O_NONBLOCK: a FIFO put where a manifest belongs must not hang the scan.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    return err == ENOENT ? NotFoundError(std::move(msg)) : InvalidArgumentError(std::move(msg));
  }
  struct stat st {};
  std::string text;
  Status status;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    status = InvalidArgumentError(path + ": not a regular file");
  } else if (static_cast<uint64_t>(st.st_size) > kMaxModelfileBytes) {
    status =
        InvalidArgumentError(path + ": " + std::to_string(st.st_size) +
                             " bytes; a manifest is at most " + std::to_string(kMaxModelfileBytes));
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // a file cut short while read: parse what was there
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (!status.ok()) return status;
  return ParseModelfile(text, path);
}

Result<std::string> RenderModelfile(const Manifest& manifest) {
  LLMD_RETURN_IF_ERROR(ParseFrom(manifest.from).error());
  std::string out;
  auto line = [&out](std::string_view instruction, const Result<std::string>& value) -> Status {
    if (!value.has_value()) return value.error();
    out.append(instruction).append(" ").append(*value).append("\n");
    return Status::Ok();
  };
  const ModelDefaults& d = manifest.defaults;
  LLMD_RETURN_IF_ERROR(line("FROM", Quote(manifest.from, "FROM")));
  if (d.system) LLMD_RETURN_IF_ERROR(line("SYSTEM", Quote(*d.system, "SYSTEM")));
  if (d.chat_template) LLMD_RETURN_IF_ERROR(line("TEMPLATE", Quote(*d.chat_template, "TEMPLATE")));
  for (const Parameter& p : d.parameters.items()) {
    const std::string what = "PARAMETER " + p.key;
    LLMD_RETURN_IF_ERROR(line(what, Quote(FormatParameterValue(p.value), what)));
  }
  if (d.embedding) out += *d.embedding ? "EMBEDDING true\n" : "EMBEDDING false\n";
  return out;
}

}  // namespace llmd::models
