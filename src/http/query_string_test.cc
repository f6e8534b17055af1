#include "http/query_string.h"

#include <gtest/gtest.h>

#include <string>

namespace llmd::http {
namespace {

TEST(QueryString, SplitsAndDecodesNamesAndValues) {
  auto q = ParseQueryString("limit=5&order=desc&after=msg%5Fa%2Db&include%5B%5D=x&q=a+b%20c&flag");
  ASSERT_TRUE(q.has_value()) << q.error().message();
  const QueryParams want = {{"limit", "5"}, {"order", "desc"},  {"after", "msg_a-b"},
                            {"include[]", "x"}, {"q", "a b c"}, {"flag", ""}};
  EXPECT_EQ(*q, want);
}

TEST(QueryString, SkipsEmptyPartsAndKeepsRepeatedNames) {
  auto q = ParseQueryString("&a=1&&a=2&b=&");
  ASSERT_TRUE(q.has_value()) << q.error().message();
  EXPECT_EQ(QueryValues(*q, "a"), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(QueryValues(*q, "b"), (std::vector<std::string>{""}));
  EXPECT_TRUE(QueryValues(*q, "c").empty());
  EXPECT_TRUE(ParseQueryString("")->empty());
  // Only the first '=' splits: the value keeps the rest.
  EXPECT_EQ(ParseQueryString("k=a=b")->front().value, "a=b");
}

TEST(QueryString, RefusesMalformedEscapesAndBytes) {
  struct Case {
    std::string raw, says;
  };
  for (const Case& c : {Case{"a=%zz", "the value of 'a' has a '%' not followed by two hex digits"},
                        Case{"a=%4", "the value of 'a' has a '%' not followed by two hex digits"},
                        Case{"a%=1", "parameter 1's name has a '%'"},
                        Case{"a=%ff", "the value of 'a' is not UTF-8"},
                        Case{"a=%00", "the value of 'a' holds a control character"},
                        Case{"x=1&=2", "parameter 2 has no name"}}) {
    auto q = ParseQueryString(c.raw);
    ASSERT_FALSE(q.has_value()) << c.raw;
    EXPECT_EQ(q.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(q.error().message().find("malformed query string: " + c.says), std::string::npos)
        << c.raw << ": " << q.error().message();
  }
  // A decoded multi-byte character is fine.
  EXPECT_EQ(ParseQueryString("q=%C3%A9")->front().value, "\xC3\xA9");
}

TEST(QueryString, BoundsTheNumberOfParameters) {
  std::string raw;
  for (size_t i = 0; i < kMaxQueryParams; ++i) raw += "p=" + std::to_string(i) + "&";
  EXPECT_TRUE(ParseQueryString(raw).has_value());
  auto over = ParseQueryString(raw + "p=last");
  ASSERT_FALSE(over.has_value());
  EXPECT_NE(over.error().message().find("more than 64 parameters"), std::string::npos) << over.error().message();
}

}  // namespace
}  // namespace llmd::http
