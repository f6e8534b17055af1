#include "http/responses/response_input_items.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "http/api_text.h"
#include "http/responses/responses_api.h"

namespace llmd::http {
namespace {

// Stored items keep the field order the client and the Response wrote.
using ordered = nlohmann::ordered_json;

// The one value of a parameter that may be given once; none when absent.
Result<std::optional<std::string>> Single(const QueryParams& query, const char* name) {
  std::vector<std::string> values = QueryValues(query, name);
  if (values.empty()) return std::optional<std::string>();
  if (values.size() > 1) return InvalidArgumentError(std::string("'") + name + "' is given more than once");
  return std::optional<std::string>(std::move(values.front()));
}

Result<size_t> ReadLimit(const QueryParams& query) {
  LLMD_ASSIGN_OR_RETURN(auto limit, Single(query, "limit"));
  if (!limit) return kDefaultInputItemsLimit;
  const std::string& v = *limit;
  const bool digits = !v.empty() && v.size() <= 3 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  const size_t n = digits ? std::stoul(v) : 0;
  if (n < 1 || n > kMaxInputItemsLimit) {
    return InvalidArgumentError("'limit' must be an integer in 1.." + std::to_string(kMaxInputItemsLimit) + " (got '" +
                                v + "')");
  }
  return n;
}

// An item id to page from; none when absent.
Result<std::optional<std::string>> ReadCursor(const QueryParams& query, const char* name) {
  LLMD_ASSIGN_OR_RETURN(auto id, Single(query, name));
  if (id && id->empty()) return InvalidArgumentError(std::string("'") + name + "' must be an item id (got '')");
  return id;
}

// include, as OpenAI's clients write an array: repeated, with brackets, or comma-separated.
Status CheckInclude(const QueryParams& query) {
  for (const char* name : {"include", "include[]"}) {
    for (const std::string& values : QueryValues(query, name)) {
      size_t start = 0;
      while (start <= values.size()) {
        size_t end = values.find(',', start);
        if (end == std::string::npos) end = values.size();
        const std::string value = values.substr(start, end - start);
        start = end + 1;
        if (!IsResponseIncludable(value)) {
          return InvalidArgumentError("'include' value '" + value + "' is not a known include value");
        }
      }
    }
  }
  return Status::Ok();
}

std::string IdPrefix(const ordered& item) {
  const std::string type = item.is_object() && item.contains("type") && item["type"].is_string()
                               ? item["type"].get<std::string>()
                               : "message";
  if (type == "message") return "msg_";
  if (type == "function_call") return "fc_";
  if (type == "function_call_output") return "fco_";
  if (type == "reasoning") return "rs_";
  return "item_";
}

// `item` in OpenAI's listed shape: id and type first, a message's string content as one text
// part, a status.
ordered Listed(const ordered& item) {
  ordered out = ordered::object();
  out["id"] = item["id"];
  const bool message = !item.contains("type") || item["type"] == "message";
  out["type"] = message ? ordered("message") : item["type"];
  for (const auto& [key, value] : item.items()) {
    if (key == "id" || key == "type") continue;
    if (message && key == "content" && value.is_string()) {
      const bool assistant = item.contains("role") && item["role"] == "assistant";
      ordered part = {{"type", assistant ? "output_text" : "input_text"}, {"text", value}};
      if (assistant) part["annotations"] = ordered::array();
      out["content"] = ordered::array({part});
      continue;
    }
    out[key] = value;
  }
  if (!out.contains("status")) out["status"] = "completed";
  return out;
}

// Where the item `id` is in `items`; InvalidArgument naming `param` when it is not there.
Result<size_t> IndexOf(const std::vector<ordered>& items, const std::string& id, const char* param) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i]["id"] == id) return i;
  }
  return InvalidArgumentError(std::string("'") + param + "' is not an input item of this response: '" + id + "'");
}

}  // namespace

Result<InputItemsPage> ParseInputItemsQuery(const QueryParams& query) {
  InputItemsPage page;
  LLMD_ASSIGN_OR_RETURN(page.limit, ReadLimit(query));
  LLMD_ASSIGN_OR_RETURN(auto order, Single(query, "order"));
  if (order && *order != "asc" && *order != "desc") {
    return InvalidArgumentError("'order' must be asc or desc (got '" + *order + "')");
  }
  page.ascending = order == "asc";
  LLMD_ASSIGN_OR_RETURN(page.after, ReadCursor(query, "after"));
  LLMD_ASSIGN_OR_RETURN(page.before, ReadCursor(query, "before"));
  if (page.after && page.before) return InvalidArgumentError("'after' and 'before' cannot be used together");
  LLMD_RETURN_IF_ERROR(CheckInclude(query));
  return page;
}

Status CheckRetrieveQuery(const QueryParams& query) {
  LLMD_RETURN_IF_ERROR(CheckInclude(query));
  LLMD_ASSIGN_OR_RETURN(auto stream, Single(query, "stream"));
  if (stream && *stream != "false") {
    return InvalidArgumentError("'stream' is not supported here: llmd returns a stored response whole "
                                "(GET it without stream)");
  }
  if (!QueryValues(query, "starting_after").empty()) {
    return InvalidArgumentError("'starting_after' is not supported: it resumes a stream, and llmd returns a stored "
                                "response whole");
  }
  return Status::Ok();
}

void AssignItemIds(ordered* items, std::string_view response_id) {
  if (!items->is_array()) return;
  const std::string suffix = IdSuffix(std::string(response_id));
  for (size_t i = 0; i < items->size(); ++i) {
    ordered& item = (*items)[i];
    if (!item.is_object() || (item.contains("id") && item["id"].is_string())) continue;
    item["id"] = IdPrefix(item) + suffix + "_in" + std::to_string(i);
  }
}

Result<std::string> RenderInputItems(const StoredResponse& stored, const InputItemsPage& page) {
  ordered items = ordered::parse(stored.items_json, nullptr, /*allow_exceptions=*/false);
  const ordered response = ordered::parse(stored.response_json, nullptr, /*allow_exceptions=*/false);
  if (!items.is_array() || !response.is_object()) {
    return InternalError("stored response " + stored.id + " has no conversation");
  }
  // The stored conversation ends with the response's own output items.
  const size_t outputs =
      response.contains("output") && response["output"].is_array() ? response["output"].size() : 0;
  const size_t inputs = items.size() > outputs ? items.size() - outputs : 0;
  AssignItemIds(&items, stored.id);  // a response stored before items had ids
  std::vector<ordered> listed;
  for (size_t i = 0; i < inputs; ++i) {
    if (items[i].is_object()) listed.push_back(Listed(items[i]));
  }
  if (!page.ascending) std::reverse(listed.begin(), listed.end());

  size_t begin = 0, end = listed.size();
  bool has_more = false;
  if (page.before) {
    LLMD_ASSIGN_OR_RETURN(end, IndexOf(listed, *page.before, "before"));
    begin = end > page.limit ? end - page.limit : 0;
    has_more = begin > 0;
  } else {
    if (page.after) {
      LLMD_ASSIGN_OR_RETURN(size_t at, IndexOf(listed, *page.after, "after"));
      begin = at + 1;
    }
    end = std::min(listed.size(), begin + page.limit);
    has_more = end < listed.size();
  }
  ordered data = ordered::array();
  for (size_t i = begin; i < end; ++i) data.push_back(std::move(listed[i]));
  ordered list = {{"object", "list"},
                  {"data", data},
                  {"first_id", data.empty() ? ordered(nullptr) : data.front()["id"]},
                  {"last_id", data.empty() ? ordered(nullptr) : data.back()["id"]},
                  {"has_more", has_more}};
  return list.dump(-1, ' ', false, ordered::error_handler_t::replace);
}

}  // namespace llmd::http
