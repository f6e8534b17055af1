// GET /v1/responses/{id}/input_items: a stored response's input items as OpenAI lists them,
// {"object":"list","data":[...],"first_id","last_id","has_more"}. The input items are the
// conversation the response answered: the items of the responses it follows
// (previous_response_id; their outputs included) and its own input, without its output and
// without its instructions (which are not items), as OpenAI's are.
//
// Every item has an id. Items the client sent without one get one when the response is stored
// (AssignItemIds), made from the response's id and the item's place ("msg_X_in0",
// "fc_X_in3", ...), so a follow-up keeps them and a page's `after` stays valid; a response
// stored before ids were given gets the same ids when listed. Listed items are in OpenAI's item
// shape: a message's string content becomes one input_text part (output_text, with no
// annotations, for the assistant's), and an item without a status is "completed".
//
// Query (the names OpenAI's clients send; other names are ignored, as unknown body fields are):
// limit 1..100 (default 20), order asc|desc (default desc: newest first), after or before an
// item id (not both), include (repeated, include[]=..., or comma-separated) of
// IsResponseIncludable values. A bad value is InvalidArgument naming the parameter.
//
// Thread-safety: pure functions.
#ifndef LLMD_HTTP_RESPONSES_RESPONSE_INPUT_ITEMS_H_
#define LLMD_HTTP_RESPONSES_RESPONSE_INPUT_ITEMS_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "http/query_string.h"
#include "http/responses/response_store.h"
#include "llmd/result.h"

namespace llmd::http {

inline constexpr size_t kDefaultInputItemsLimit = 20;
inline constexpr size_t kMaxInputItemsLimit = 100;

struct InputItemsPage {
  size_t limit = kDefaultInputItemsLimit;
  bool ascending = false;            // order=asc; OpenAI's default is desc
  std::optional<std::string> after;  // items after this one, in the page's order
  std::optional<std::string> before;  // items before this one (the nearest `limit` of them)
};

Result<InputItemsPage> ParseInputItemsQuery(const QueryParams& query);

// The query of GET /v1/responses/{id}: include is checked as above; stream=true is refused (a
// stored response is returned whole) and so is starting_after (which only applies to it).
Status CheckRetrieveQuery(const QueryParams& query);

// Gives every item of the array `items` that has no "id" one made from `response_id` and its
// index. Items that have one keep it.
void AssignItemIds(nlohmann::ordered_json* items, std::string_view response_id);

// The list object for `stored` (JSON text). InvalidArgument when `after` or `before` is not an
// input item of this response.
Result<std::string> RenderInputItems(const StoredResponse& stored, const InputItemsPage& page);

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSE_INPUT_ITEMS_H_
