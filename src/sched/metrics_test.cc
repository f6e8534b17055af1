#include "sched/metrics.h"

#include <gtest/gtest.h>

namespace llmd::sched {
namespace {

TEST(Histogram, RendersCumulativeBucketsSumAndCount) {
  Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.1);  // on a bound: counts in that bucket (le)
  h.Observe(0.5);
  h.Observe(7);
  std::string out;
  h.Render("x_seconds", "model=\"m\"", &out);
  EXPECT_EQ(out,
            "x_seconds_bucket{model=\"m\",le=\"0.1\"} 2\n"
            "x_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
            "x_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{model=\"m\"} 7.65\n"
            "x_seconds_count{model=\"m\"} 4\n");
}

TEST(RequestCounters, CountsByApiAndOutcome) {
  RequestCounters c;
  c.Count("http", "ok");
  c.Count("http", "ok");
  c.Count("native", "busy");
  std::string out;
  c.Render(&out);
  EXPECT_EQ(out,
            "llmd_requests_total{api=\"http\",outcome=\"ok\"} 2\n"
            "llmd_requests_total{api=\"native\",outcome=\"busy\"} 1\n");
}

TEST(Metrics, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace llmd::sched
