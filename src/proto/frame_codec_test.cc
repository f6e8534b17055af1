#include "proto/frame_codec.h"

#include <gtest/gtest.h>

namespace llmd::proto {
namespace {

TEST(FrameCodec, EncodesBigEndianLength) {
  EXPECT_EQ(EncodeFrame("\x01"), std::string("\0\0\0\x01\x01", 5));
  EXPECT_EQ(EncodeFrame(std::string(300, 'x')).substr(0, 4), std::string("\0\0\x01\x2c", 4));
}

TEST(FrameCodec, ReassemblesAFrameSplitAtEveryPoint) {
  const std::string payload = "payload bytes";
  const std::string wire = EncodeFrame(payload);
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    FrameDecoder d;
    ASSERT_EQ(*d.Feed(wire.substr(0, cut)), cut);
    EXPECT_EQ(d.mid_frame(), cut > 0 && cut < wire.size());
    ASSERT_EQ(*d.Feed(wire.substr(cut)), wire.size() - cut);
    auto frame = d.TakeFrame();
    ASSERT_TRUE(frame.has_value()) << "cut " << cut;
    EXPECT_EQ(*frame, payload);
  }
}

TEST(FrameCodec, OneByteAtATime) {
  const std::string wire = EncodeFrame("abc");
  FrameDecoder d;
  for (size_t i = 0; i < wire.size(); ++i) {
    EXPECT_TRUE(d.mid_frame() || i == 0);
    ASSERT_EQ(*d.Feed(wire.substr(i, 1)), 1u);
  }
  EXPECT_EQ(*d.TakeFrame(), "abc");
  EXPECT_FALSE(d.mid_frame());
}

TEST(FrameCodec, PipelinedFramesComeOutInOrder) {
  const std::string wire = EncodeFrame("first") + EncodeFrame("second");
  FrameDecoder d;
  size_t used = *d.Feed(wire);
  EXPECT_EQ(used, 9u) << "stops at the end of the first frame";
  EXPECT_EQ(*d.TakeFrame(), "first");
  EXPECT_EQ(*d.Feed(std::string_view(wire).substr(used)), wire.size() - used);
  EXPECT_EQ(*d.TakeFrame(), "second");
}

TEST(FrameCodec, RejectsEmptyAndOversizedFramesBeforeAllocating) {
  FrameDecoder empty;
  auto r = empty.Feed(std::string("\0\0\0\0", 4));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "empty frame");

  for (uint32_t len : {kMaxFrameBytes + 1, 0x80000000u, 0xFFFFFFFFu}) {
    FrameDecoder d;
    std::string header = {static_cast<char>(len >> 24), static_cast<char>(len >> 16),
                          static_cast<char>(len >> 8), static_cast<char>(len)};
    auto err = d.Feed(header);
    ASSERT_FALSE(err.has_value()) << len;
    EXPECT_NE(err.error().message().find("exceeds the 65536-byte limit"), std::string::npos);
    EXPECT_FALSE(d.Feed("more").has_value()) << "stays failed";
  }
  FrameDecoder max;
  std::string at_limit = EncodeFrame(std::string(kMaxFrameBytes, 'x'));
  EXPECT_EQ(*max.Feed(at_limit), at_limit.size());
  EXPECT_EQ(max.TakeFrame()->size(), kMaxFrameBytes);
}

}  // namespace
}  // namespace llmd::proto
