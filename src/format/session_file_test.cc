#include "format/session_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

namespace llmd::format {
namespace {

const SessionData kSession{"Be brief.", {1, 2, 3, 151645}};

// CRC-32 (IEEE), little-endian, as the file stores it.
std::string Crc32ForTest(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
  }
  crc ^= 0xFFFFFFFFu;
  return {static_cast<char>(crc), static_cast<char>(crc >> 8), static_cast<char>(crc >> 16),
          static_cast<char>(crc >> 24)};
}

TEST(SessionFile, RoundTrips) {
  auto back = DecodeSession(EncodeSession(kSession, 42), 42, 151936);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->system, kSession.system);
  EXPECT_EQ(back->tokens, kSession.tokens);
}

// A version 1 file (its fingerprint hashed the vocabulary size as 0) is refused by name, with
// what to do, never misread; its checksum is valid so only the version can be the reason.
TEST(SessionFile, RefusesAFileOfAnOlderFormatVersion) {
  std::string old = EncodeSession(kSession, 42);
  old[8] = 1;
  old.replace(old.size() - 4, 4, Crc32ForTest(old.substr(0, old.size() - 4)));
  auto r = DecodeSession(old, 42, 151936);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "session file was saved by an older llmd (session format 1); start a new session");
  EXPECT_EQ(r.error().reason(), ErrorReason::kBadSessionFile);
}

TEST(SessionFile, RejectsForeignCraftedAndTruncatedFiles) {
  const std::string good = EncodeSession(kSession, 42);
  auto err = [](Result<SessionData> r) { return r.has_value() ? std::string() : r.error().message(); };
  EXPECT_NE(err(DecodeSession(good, 43, 151936)).find("another model"), std::string::npos);
  EXPECT_NE(err(DecodeSession(good, 42, 100)).find("outside the vocabulary"), std::string::npos);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(DecodeSession(good.substr(0, cut), 42, 151936).has_value()) << cut;
  }
  std::string flipped = good;
  flipped[30] ^= 1;
  EXPECT_NE(err(DecodeSession(flipped, 42, 151936)).find("checksum"), std::string::npos);
  std::string longer = good + "x";
  EXPECT_NE(err(DecodeSession(longer, 42, 151936)).find("bytes but has"), std::string::npos);
  // A huge token count under a checksum that matches: refused by the size check.
  std::string crafted = EncodeSession(SessionData{"", {}}, 42);
  crafted.resize(crafted.size() - 4);                          // drop the crc
  crafted.replace(32, 4, std::string("\xff\xff\xff\x7f", 4));  // token count 2^31-1 (after the empty system)
  crafted += Crc32ForTest(crafted);
  EXPECT_NE(err(DecodeSession(crafted, 42, 151936)).find("token count"), std::string::npos);
  EXPECT_NE(err(DecodeSession("not a session", 42, 10)).find("truncated"), std::string::npos);
}

// Re-seals `file` after an edit: its length field and checksum.
std::string Reseal(std::string file) {
  file.resize(file.size() - 4);
  const uint64_t length = file.size() + 4;
  for (int i = 0; i < 8; ++i) file[12 + i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return file + Crc32ForTest(file);
}

TEST(SessionFile, TurnStartsRoundTrip) {
  const SessionData with_turns{"Be brief.", {1, 2, 3, 4, 5, 6}, {1, 4}};
  auto back = DecodeSession(EncodeSession(with_turns, 42), 42, 151936);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->tokens, with_turns.tokens);
  EXPECT_EQ(back->turn_starts, with_turns.turn_starts);
}

// A version 2 file (before the turn starts) still loads: its history has no turns to drop.
TEST(SessionFile, AVersion2FileLoadsWithoutTurnStarts) {
  std::string v2 = EncodeSession(kSession, 42);
  v2.erase(v2.size() - 8, 4);  // the turn count (0), just before the crc
  v2[8] = 2;
  auto back = DecodeSession(Reseal(v2), 42, 151936);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->tokens, kSession.tokens);
  EXPECT_TRUE(back->turn_starts.empty());
}

TEST(SessionFile, RefusesTurnStartsOutsideOrOutOfOrder) {
  auto err = [](Result<SessionData> r) { return r.has_value() ? std::string() : r.error().message(); };
  for (std::vector<uint32_t> bad : {std::vector<uint32_t>{4}, std::vector<uint32_t>{2, 2}, std::vector<uint32_t>{3, 1}}) {
    const SessionData s{"", {1, 2, 3, 4}, bad};
    EXPECT_NE(err(DecodeSession(EncodeSession(s, 42), 42, 100)).find("not ascending inside its 4 tokens"),
              std::string::npos);
  }
}

TEST(SessionFile, SessionIdsAreSafeFileNames) {
  EXPECT_TRUE(IsValidSessionId("user-42_chat.1"));
  for (const char* bad : {"", ".hidden", "../etc/passwd", "a/b", "with space", "x\n"}) {
    EXPECT_FALSE(IsValidSessionId(bad)) << bad;
  }
  EXPECT_FALSE(IsValidSessionId(std::string(65, 'a')));
}

TEST(SessionFile, AtomicWriteKeepsTheOldFileOnFailure) {
  std::string dir = "/tmp/llmd_session_file_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string path = dir + "/s.llmds";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(*ReadSmallFile(path, 100), "new");
  // Item 48c: a directory the daemon may not write. The save fails with a clear message and
  // the old file stays. Run as nobody, since root writes anywhere.
  ::chmod(dir.c_str(), 0755);
  pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    Status s = WriteFileAtomically(path, "newer");
    ::_exit(!s.ok() && s.message().find("session not saved") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(*ReadSmallFile(path, 100), "new");
  EXPECT_EQ(ReadSmallFile(dir + "/missing", 100).error().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ReadSmallFile(path, 2).has_value()) << "larger than allowed";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmd::format
