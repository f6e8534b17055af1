#include "http/responses/response_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/log.h"
#include "format/session_file.h"

namespace llmd::http {
namespace {

// Files keep the objects' field order, so what GET returns after a restart is the same text.
using ordered = nlohmann::ordered_json;

constexpr int kFileVersion = 1;
constexpr std::string_view kSuffix = ".json";

Result<std::string> Encode(const StoredResponse& r) {
  // The parts are JSON already; they go in as parsed values, read back in the same order.
  ordered response = ordered::parse(r.response_json, nullptr, /*allow_exceptions=*/false);
  ordered items = ordered::parse(r.items_json, nullptr, /*allow_exceptions=*/false);
  if (!response.is_object() || !items.is_array()) {
    return InvalidArgumentError("response " + r.id + " is not a Response object and a list of items");
  }
  ordered file = {{"version", kFileVersion},       {"id", r.id},
                  {"owner", r.owner},              {"created_at_ms", r.created_at_ms},
                  {"response", std::move(response)}, {"items", std::move(items)}};
  return file.dump(-1, ' ', false, ordered::error_handler_t::replace);
}

// A file read back, checked field by field; the reason when it is not one of ours.
Result<StoredResponse> Decode(const std::string& text, const std::string& expected_id) {
  const ordered file = ordered::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!file.is_object()) return CorruptionError("not a JSON object");
  const auto field = [&](const char* key) -> const ordered* { return file.contains(key) ? &file[key] : nullptr; };
  const ordered* version = field("version");
  if (version == nullptr || !version->is_number_integer() || *version != kFileVersion) {
    return CorruptionError("not a version " + std::to_string(kFileVersion) + " response file");
  }
  for (const char* key : {"id", "owner"}) {
    if (field(key) == nullptr || !field(key)->is_string()) return CorruptionError(std::string("'") + key + "' is not a string");
  }
  if (*field("id") != expected_id) return CorruptionError("its id is not its file name's");
  if (field("owner")->get_ref<const std::string&>().empty()) return CorruptionError("it has no owner");
  if (field("created_at_ms") == nullptr || !field("created_at_ms")->is_number_integer()) {
    return CorruptionError("'created_at_ms' is not an integer");
  }
  if (field("response") == nullptr || !field("response")->is_object()) return CorruptionError("'response' is not an object");
  if (field("items") == nullptr || !field("items")->is_array()) return CorruptionError("'items' is not an array");
  StoredResponse r;
  r.id = expected_id;
  r.owner = field("owner")->get<std::string>();
  r.created_at_ms = field("created_at_ms")->get<int64_t>();
  r.response_json = field("response")->dump(-1, ' ', false, ordered::error_handler_t::replace);
  r.items_json = field("items")->dump(-1, ' ', false, ordered::error_handler_t::replace);
  return r;
}

void LogSkipped(const std::string& path, const std::string& why) {
  Log(LogLevel::kWarn, "stored_response_skipped", {{"path", path}, {"reason", why}});
}

}  // namespace

bool IsValidResponseId(const std::string& id) {
  if (!id.starts_with("resp_") || id.size() > 64 || id.size() == 5) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

ResponseStore::ResponseStore(ResponseStoreOptions options) : options_(std::move(options)) {
  if (!options_.dir.empty() && enabled()) Load();
}

int64_t ResponseStore::Now() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ResponseStore::PathOf(const std::string& id) const {
  return options_.dir + "/" + id + std::string(kSuffix);
}

void ResponseStore::Load() {
  // Owner-only, as the files hold conversations; an existing directory keeps its mode.
  if (::mkdir(options_.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    Log(LogLevel::kWarn, "response_dir_unusable", {{"path", options_.dir}, {"error", std::strerror(errno)}});
    return;
  }
  DIR* dir = ::opendir(options_.dir.c_str());
  if (dir == nullptr) {
    Log(LogLevel::kWarn, "response_dir_unusable", {{"path", options_.dir}, {"error", std::strerror(errno)}});
    return;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) names.emplace_back(e->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());

  std::vector<StoredResponse> loaded;
  const int64_t now = Now();
  for (const std::string& name : names) {
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) continue;  // ., .., temporary files
    const std::string path = options_.dir + "/" + name;
    const std::string id = name.substr(0, name.size() - kSuffix.size());
    if (!IsValidResponseId(id)) {
      LogSkipped(path, "not a response id");
      continue;
    }
    auto text = format::ReadSmallFile(path, options_.max_bytes);
    if (!text.has_value()) {
      LogSkipped(path, text.error().message());
      continue;
    }
    auto r = Decode(*text, id);
    if (!r.has_value()) {
      LogSkipped(path, r.error().message());
      continue;
    }
    if (now - r->created_at_ms >= options_.ttl_ms) {
      ::unlink(path.c_str());  // expired while the daemon was down
      continue;
    }
    loaded.push_back(std::move(*r));
  }
  // The oldest are the least recently used: the first to go when room is short.
  std::sort(loaded.begin(), loaded.end(),
            [](const StoredResponse& a, const StoredResponse& b) { return a.created_at_ms < b.created_at_ms; });
  std::lock_guard<std::mutex> lock(mu_);
  for (StoredResponse& r : loaded) {
    bytes_ += r.bytes();
    const std::string id = r.id;
    entries_[id] = Entry{std::move(r), ++use_counter_};
  }
  EnforceLimitsLocked("");
  Log(LogLevel::kInfo, "stored_responses_loaded",
      {{"path", options_.dir}, {"count", std::to_string(entries_.size())}, {"bytes", std::to_string(bytes_)}});
}

void ResponseStore::DropLocked(std::map<std::string, Entry>::iterator it) {
  if (!options_.dir.empty()) ::unlink(PathOf(it->first).c_str());
  bytes_ -= it->second.response.bytes();
  entries_.erase(it);
}

void ResponseStore::DropExpiredLocked() {
  const int64_t now = Now();
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (now - it->second.response.created_at_ms >= options_.ttl_ms) DropLocked(it);
    it = next;
  }
}

void ResponseStore::EnforceLimitsLocked(const std::string& keep) {
  while (entries_.size() > options_.max_responses || bytes_ > options_.max_bytes) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first != keep && (oldest == entries_.end() || it->second.last_used < oldest->second.last_used)) {
        oldest = it;
      }
    }
    if (oldest == entries_.end()) return;
    DropLocked(oldest);
  }
}

Status ResponseStore::Put(StoredResponse response) {
  if (!enabled()) return UnimplementedError("storing responses is off (responses_max_stored = 0)");
  if (!IsValidResponseId(response.id)) return InvalidArgumentError("'" + response.id + "' is not a response id");
  if (response.bytes() > options_.max_bytes) {
    return InvalidArgumentError("response " + response.id + " is " + std::to_string(response.bytes()) +
                                " bytes, over the store's limit of " + std::to_string(options_.max_bytes) +
                                " (responses_max_mb)");
  }
  std::string file;
  if (!options_.dir.empty()) {
    LLMD_ASSIGN_OR_RETURN(file, Encode(response));
  }
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked();
  Status saved = Status::Ok();
  if (!options_.dir.empty()) {
    saved = format::WriteFileAtomically(PathOf(response.id), file);
    if (!saved.ok()) saved = UnavailableError("kept in memory only, not in " + options_.dir + ": " + saved.message());
  }
  const std::string id = response.id;
  if (auto it = entries_.find(id); it != entries_.end()) bytes_ -= it->second.response.bytes();
  bytes_ += response.bytes();
  entries_[id] = Entry{std::move(response), ++use_counter_};
  EnforceLimitsLocked(id);
  return saved;
}

std::optional<StoredResponse> ResponseStore::Get(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked();
  auto it = entries_.find(id);
  if (it == entries_.end() || owner.empty() || it->second.response.owner != owner) return std::nullopt;
  it->second.last_used = ++use_counter_;
  return it->second.response;
}

bool ResponseStore::Erase(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked();
  auto it = entries_.find(id);
  if (it == entries_.end() || owner.empty() || it->second.response.owner != owner) return false;
  DropLocked(it);
  return true;
}

ResponseStore::Totals ResponseStore::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked();
  return {entries_.size(), bytes_};
}

}  // namespace llmd::http
