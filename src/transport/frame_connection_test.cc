#include "transport/frame_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "proto/frame_codec.h"

namespace llmd::transport {
namespace {

struct Pair {
  Pair() { ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds); }
  ~Pair() {
    if (fds[1] >= 0) ::close(fds[1]);
  }
  int fds[2];
};

TEST(FrameConnection, ReadsAFrameSentOneByteAtATime) {
  Pair p;
  FrameConnection conn(p.fds[0]);
  std::string wire = proto::EncodeFrame("hello");
  std::thread writer([&] {
    for (char c : wire) {
      ASSERT_EQ(::write(p.fds[1], &c, 1), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  auto r = conn.ReadFrame(60000, 60000, nullptr);  // liveness only: the pieces come however slowly
  writer.join();
  ASSERT_EQ(r.outcome, FrameConnection::Outcome::kFrame);
  EXPECT_EQ(r.payload, "hello");
}

TEST(FrameConnection, IdleAndFrameDeadlines) {
  Pair p;
  FrameConnection conn(p.fds[0]);
  EXPECT_EQ(conn.ReadFrame(50, 1000, nullptr).outcome, FrameConnection::Outcome::kIdleTimeout);
  ASSERT_EQ(::write(p.fds[1], "\0\0\0\x05" "ab", 6), 6);  // a frame that never finishes
  EXPECT_EQ(conn.ReadFrame(1000, 50, nullptr).outcome, FrameConnection::Outcome::kFrameTimeout);
}

TEST(FrameConnection, TruncatedFrameAndCleanClose) {
  {
    Pair p;
    FrameConnection conn(p.fds[0]);
    ASSERT_EQ(::write(p.fds[1], "\0\0\x03\xe8" "0123456789", 14), 14);  // says 1000, sends 10
    ::close(p.fds[1]);
    p.fds[1] = -1;
    EXPECT_EQ(conn.ReadFrame(1000, 1000, nullptr).outcome, FrameConnection::Outcome::kTruncated);
  }
  {
    Pair p;
    FrameConnection conn(p.fds[0]);
    ::close(p.fds[1]);
    p.fds[1] = -1;
    EXPECT_EQ(conn.ReadFrame(1000, 1000, nullptr).outcome, FrameConnection::Outcome::kClosed);
  }
}

TEST(FrameConnection, OversizedLengthIsAProtocolError) {
  Pair p;
  FrameConnection conn(p.fds[0]);
  ASSERT_EQ(::write(p.fds[1], "\xff\xff\xff\xff", 4), 4);
  auto r = conn.ReadFrame(1000, 1000, nullptr);
  EXPECT_EQ(r.outcome, FrameConnection::Outcome::kProtocolError);
  EXPECT_NE(r.error.message().find("exceeds"), std::string::npos);
}

TEST(FrameConnection, WriteDeadlineFiresWhenThePeerNeverReads) {
  Pair p;
  FrameConnection conn(p.fds[0]);
  std::string big(60000, 'x');
  Status s;
  for (int i = 0; i < 100 && s.ok(); ++i) s = conn.WriteFrame(big, 100);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
}

TEST(FrameConnection, HalfCloseIsNotGoneButCloseIs) {
  Pair p;
  FrameConnection conn(p.fds[0]);
  ::shutdown(p.fds[1], SHUT_WR);
  EXPECT_FALSE(conn.PeerGone());
  ::close(p.fds[1]);
  p.fds[1] = -1;
  EXPECT_TRUE(conn.PeerGone());
}

}  // namespace
}  // namespace llmd::transport
