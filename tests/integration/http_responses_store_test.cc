// Stored responses of the Responses API against the real daemon: store and
// previous_response_id (the same text as the whole input, from the prompt cache), GET and
// DELETE /v1/responses/{id}, its input_items page by page, a second real UID that gets 404 for all of it, and the files under
// session_dir that outlive a restart.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/http_harness.h"
#include "tests/support/nobody_child.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

using nlohmann::json;

json Parse(const HttpReply& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.status << " " << r.body;
  return j;
}

// The text of a Response's message items.
std::string OutputText(const json& response) {
  std::string text;
  for (const json& item : response.at("output")) {
    if (item.at("type") != "message") continue;
    for (const json& part : item.at("content")) text += part.at("text").get<std::string>();
  }
  return text;
}

json Request(json input, json extra = json::object()) {
  json b = {{"input", std::move(input)}, {"max_output_tokens", 12}, {"temperature", 0}};
  b.update(extra);
  return b;
}

// The final Response object of a streamed reply (its response.completed or .incomplete event).
json StreamedResponse(const std::string& body) {
  json last;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    json event = json::parse(body.substr(at + 6, end - at - 6), nullptr, false);
    if (event.is_object() && (event["type"] == "response.completed" || event["type"] == "response.incomplete")) {
      last = event["response"];
    }
    at = end;
  }
  return last;
}

class HttpResponsesStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new HttpDaemon({"--rate-limit", "100000"}); }
  static void TearDownTestSuite() { delete daemon_; }
  static HttpDaemon& d() { return *daemon_; }
  static HttpDaemon* daemon_;
};
HttpDaemon* HttpResponsesStore::daemon_ = nullptr;

TEST_F(HttpResponsesStore, AFollowUpGivesTheWholeInputsTextFromTheCache) {
  ASSERT_TRUE(d().process().ready()) << d().process().log();
  const std::string first = "Tell me about rivers.", second = "And what about lakes?";
  auto r1 = d().Tcp("POST", "/v1/responses", Request(first, {{"store", true}}).dump());
  ASSERT_EQ(r1.status, 200) << r1.body;
  const json one = Parse(r1);
  EXPECT_EQ(one["store"], true);
  const std::string id = one["id"];
  const std::string answer = OutputText(one);

  auto r2 = d().Tcp("POST", "/v1/responses", Request(second, {{"previous_response_id", id}}).dump());
  ASSERT_EQ(r2.status, 200) << r2.body;
  const json two = Parse(r2);
  EXPECT_EQ(two["previous_response_id"], id);
  EXPECT_EQ(two["store"], true) << "store is on by default, as OpenAI's";
  EXPECT_GT(two["usage"]["input_tokens_details"]["cached_tokens"].get<int>(), 0)
      << "the stored conversation renders to the tokens the cache holds: " << two["usage"];

  // The same conversation sent whole (not stored) gives the same text.
  const json whole_input = {{{"role", "user"}, {"content", first}},
                            {{"role", "assistant"}, {"content", answer}},
                            {{"role", "user"}, {"content", second}}};
  auto r3 = d().Tcp("POST", "/v1/responses", Request(whole_input, {{"store", false}}).dump());
  ASSERT_EQ(r3.status, 200) << r3.body;
  const json three = Parse(r3);
  ASSERT_FALSE(OutputText(two).empty()) << "an empty answer would make the comparison say nothing: " << r2.body;
  EXPECT_EQ(OutputText(three), OutputText(two));
  EXPECT_EQ(three["usage"]["input_tokens"], two["usage"]["input_tokens"]);
  EXPECT_EQ(three["store"], false);
  EXPECT_EQ(d().Tcp("GET", "/v1/responses/" + three["id"].get<std::string>()).status, 404) << "store:false keeps nothing";
}

TEST_F(HttpResponsesStore, GetReturnsItDeleteRemovesIt) {
  auto created = d().Tcp("POST", "/v1/responses", Request("Name a colour.").dump());
  ASSERT_EQ(created.status, 200) << created.body;
  const json response = Parse(created);
  const std::string id = response["id"];

  auto got = d().Tcp("GET", "/v1/responses/" + id);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Parse(got), response) << "GET returns the Response object the POST returned";

  auto metrics = d().Unix("GET", "/metrics");
  EXPECT_NE(metrics.body.find("\nllmd_stored_responses "), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("\nllmd_stored_responses_limit 1000\n"), std::string::npos);
  EXPECT_NE(metrics.body.find("\nllmd_stored_response_ttl_seconds 604800\n"), std::string::npos);

  auto deleted = d().Tcp("DELETE", "/v1/responses/" + id);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(Parse(deleted), json({{"id", id}, {"object", "response"}, {"deleted", true}}));

  auto gone = d().Tcp("GET", "/v1/responses/" + id);
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_EQ(Parse(gone)["error"]["message"], "Response with id '" + id + "' not found.");
  EXPECT_EQ(d().Tcp("DELETE", "/v1/responses/" + id).status, 404);
  auto follow = d().Tcp("POST", "/v1/responses", Request("more", {{"previous_response_id", id}}).dump());
  EXPECT_EQ(follow.status, 404) << follow.body;
  const json error = Parse(follow)["error"];
  EXPECT_EQ(error["message"], "Previous response with id '" + id + "' not found.");
  EXPECT_EQ(error["code"], "previous_response_not_found");
  EXPECT_EQ(error["param"], "previous_response_id");

  EXPECT_EQ(d().Tcp("GET", "/v1/responses/resp_..%2F..%2Fetc").status, 404);
  EXPECT_EQ(d().Tcp("PUT", "/v1/responses/" + id).status, 405);
  EXPECT_EQ(d().Tcp("GET", "/v1/responses/" + id + "/input_items").status, 404);
}

// The text of a listed message item.
std::string ItemText(const json& item) { return item.at("content").at(0).at("text"); }

TEST_F(HttpResponsesStore, InputItemsListTheConversationPageByPageForItsOwnerOnly) {
  auto r1 = d().Tcp("POST", "/v1/responses", Request("First question.").dump());
  ASSERT_EQ(r1.status, 200) << r1.body;
  const json one = Parse(r1);
  auto r2 = d().Tcp("POST", "/v1/responses", Request("Second question.", {{"previous_response_id", one["id"]}}).dump());
  ASSERT_EQ(r2.status, 200) << r2.body;
  const std::string items_path = "/v1/responses/" + Parse(r2)["id"].get<std::string>() + "/input_items";

  // Newest first: this input, the first response's output, its input; never the second's output.
  auto listed = d().Tcp("GET", items_path);
  ASSERT_EQ(listed.status, 200) << listed.body;
  const json list = Parse(listed);
  ASSERT_EQ(list["data"].size(), 2 + one["output"].size()) << listed.body;
  EXPECT_EQ(ItemText(list["data"].front()), "Second question.");
  EXPECT_EQ(ItemText(list["data"].back()), "First question.");
  if (!one["output"].empty()) {
    EXPECT_EQ(list["data"][1]["id"], one["output"].back()["id"]);  // its newest output item
  }
  EXPECT_EQ(list["has_more"], false);

  // One at a time from the oldest: `after` is the last page's last_id.
  auto page1 = Parse(d().Tcp("GET", items_path + "?order=asc&limit=1"));
  EXPECT_EQ(ItemText(page1["data"][0]), "First question.");
  EXPECT_EQ(page1["has_more"], true);
  auto page2 = Parse(d().Tcp("GET", items_path + "?order=asc&limit=1&after=" + page1["last_id"].get<std::string>()));
  EXPECT_EQ(page2["data"][0]["id"], list["data"][list["data"].size() - 2]["id"]);

  auto bad = d().Tcp("GET", items_path + "?limit=500");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("'limit' must be an integer in 1..100"), std::string::npos) << bad.body;
  EXPECT_EQ(d().Tcp("GET", items_path + "?after=%zz").status, 400) << "a malformed query string";
  EXPECT_EQ(d().Tcp("POST", items_path).status, 405);
  EXPECT_EQ(d().Unix("GET", items_path).status, 404) << "the same UID without the key is another owner";
}

TEST_F(HttpResponsesStore, AStreamedResponseIsStoredToo) {
  auto streamed = d().Tcp("POST", "/v1/responses", Request("Count to three.", {{"stream", true}}).dump());
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  const json final_object = StreamedResponse(streamed.body);
  ASSERT_TRUE(final_object.is_object()) << streamed.body;
  auto got = d().Tcp("GET", "/v1/responses/" + final_object["id"].get<std::string>());
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(OutputText(Parse(got)), OutputText(final_object));
  EXPECT_EQ(Parse(got)["usage"], final_object["usage"]);
}

TEST_F(HttpResponsesStore, TheSameUidWithoutTheKeyIsAnotherOwner) {
  auto created = d().Tcp("POST", "/v1/responses", Request("Hello.").dump());
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = Parse(created)["id"];
  EXPECT_EQ(d().Unix("GET", "/v1/responses/" + id).status, 404) << "made with the API key, seen only with it";
  auto mine = d().Unix("POST", "/v1/responses", Request("Hello.").dump());
  ASSERT_EQ(mine.status, 200) << mine.body;
  const std::string unix_id = Parse(mine)["id"];
  EXPECT_EQ(d().Unix("GET", "/v1/responses/" + unix_id).status, 200);
  EXPECT_EQ(d().Tcp("GET", "/v1/responses/" + unix_id).status, 404);
}

// One HTTP request over loopback TCP with the API key, from whatever UID this process is: the
// status and the body.
std::pair<int, std::string> RawTcp(int port, const std::string& method, const std::string& path,
                                   const std::string& body = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {0, ""};
  const std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nAuthorization: Bearer " + HttpDaemon::kApiKey +
                              "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (!reply.starts_with("HTTP/1.1 ")) return {0, reply};
  return {std::stoi(reply.substr(9, 3)), reply};
}

TEST_F(HttpResponsesStore, AnotherUidGets404AndNeverTheContent) {
  SKIP_UNLESS_ROOT();
  auto created = d().Tcp("POST", "/v1/responses", Request("Tell me a secret.").dump());
  ASSERT_EQ(created.status, 200) << created.body;
  const json response = Parse(created);
  const std::string id = response["id"];
  const std::string text = OutputText(response);
  const int port = d().port();
  ASSERT_GT(port, 0);

  // uid 65534 holds the same API key: the key alone does not make it the owner.
  NobodyChild nobody([&](int signal_fd, int stop_fd) {
    int failures = 0;
    auto expect_404 = [&](std::pair<int, std::string> got) {
      const bool leaked = !text.empty() && got.second.find(text) != std::string::npos;
      if (got.first != 404 || leaked || got.second.find(id + "' not found.") == std::string::npos) ++failures;
    };
    expect_404(RawTcp(port, "GET", "/v1/responses/" + id));
    expect_404(RawTcp(port, "DELETE", "/v1/responses/" + id));
    expect_404(RawTcp(port, "GET", "/v1/responses/" + id + "/input_items"));
    expect_404(RawTcp(port, "POST", "/v1/responses", Request("go on", {{"previous_response_id", id}}).dump()));
    // And its own stored response is its own.
    auto own = RawTcp(port, "POST", "/v1/responses", Request("Hello.").dump());
    if (own.first != 200) ++failures;
    const int rc = failures == 0 ? SignalAndHold(signal_fd, stop_fd) : failures;
    return rc;
  });
  EXPECT_TRUE(nobody.WaitForSignal()) << "uid 65534 must get 404 for GET, DELETE, input_items and previous_response_id";
  EXPECT_EQ(nobody.Wait(), 0);
  // Its DELETE removed nothing.
  auto still = d().Tcp("GET", "/v1/responses/" + id);
  ASSERT_EQ(still.status, 200) << still.body;
  EXPECT_EQ(Parse(still), response);
}

TEST(HttpResponsesStoreRestart, AStoredResponseSurvivesARestartWithSessionDir) {
  const std::string sessions = MakeTempDir();
  std::string id;
  json response;
  {
    HttpDaemon first({"--session-dir", sessions});
    ASSERT_TRUE(first.process().ready()) << first.process().log();
    auto created = first.Unix("POST", "/v1/responses", Request("Tell me about rivers.").dump());
    ASSERT_EQ(created.status, 200) << created.body;
    response = Parse(created);
    id = response["id"];
    struct stat st{};
    ASSERT_EQ(::stat((sessions + "/responses/" + id + ".json").c_str(), &st), 0)
        << "the file is written before the reply's last bytes";
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }  // killed (SIGKILL): nothing is saved at exit, the file was already there

  HttpDaemon second({"--session-dir", sessions});
  ASSERT_TRUE(second.process().ready()) << second.process().log();
  EXPECT_NE(second.process().log().find("stored_responses_loaded"), std::string::npos);
  auto got = second.Unix("GET", "/v1/responses/" + id);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Parse(got), response);
  auto follow = second.Unix("POST", "/v1/responses", Request("And lakes?", {{"previous_response_id", id}}).dump());
  EXPECT_EQ(follow.status, 200) << follow.body;
  ASSERT_EQ(second.Unix("DELETE", "/v1/responses/" + id).status, 200);
  struct stat st{};
  EXPECT_NE(::stat((sessions + "/responses/" + id + ".json").c_str(), &st), 0) << "DELETE removes the file";
  (void)!std::system(("rm -rf " + sessions).c_str());
}

}  // namespace
}  // namespace llmd::testing
