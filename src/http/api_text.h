// Small text helpers the API translation layers (Anthropic Messages, Responses, the reply
// deltas) share, so that each is written once: how errors name a field, how JSON goes out,
// how ids are made from an object's id, and what a later parse adds to text already sent.
#ifndef LLMD_HTTP_API_TEXT_H_
#define LLMD_HTTP_API_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>

namespace llmd::http {

// "'FIELD'": a request field as error messages name it.
std::string Quoted(const std::string& field);

// JSON text of an ordered object (the fields in the order the API documents them, for people
// reading it). Model text may hold invalid UTF-8 (a token can be part of a character): it is
// replaced, never thrown. json_reply.h's Dump does the same for unordered objects (a name of its own:
// a braced list would fit either).
std::string DumpOrdered(const nlohmann::ordered_json& j);

// "resp_X" -> "X", "msg_X" -> "X": the part the ids made for what an object holds (output
// items, tool uses) share with the object's own id, so a stream and its final object agree
// without shared state. An id without "_" is its own suffix.
std::string IdSuffix(const std::string& id);

// What `now` adds to `sent` when it extends it; nothing when it does not (yet). Parses of a
// growing reply may hold text back and release it later; what was sent is never taken back.
std::string Extension(const std::string& sent, const std::string& now);

}  // namespace llmd::http

#endif  // LLMD_HTTP_API_TEXT_H_
