#include "transport/unix_listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>

namespace llmd::transport {
namespace {

namespace fs = std::filesystem;

class UnixListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("LISTEN_FDS");
    dir_ = fs::temp_directory_path() / ("llmd_listener_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "s.sock").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  ListenOptions Options(unsigned mode = 0600) {
    ListenOptions o;
    o.path = path_;
    o.mode = mode;
    return o;
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(UnixListenerTest, CreatesASocketWithTheRequestedMode) {
  auto l = UnixListener::Open(Options(0660));
  ASSERT_TRUE(l.has_value()) << l.error().ToString();
  struct stat st;
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  l->reset();
  EXPECT_FALSE(fs::exists(path_)) << "removed on close";
}

TEST_F(UnixListenerTest, SecondInstanceRefusesAndLeavesTheLiveSocket) {
  auto first = UnixListener::Open(Options());
  ASSERT_TRUE(first.has_value());
  auto second = UnixListener::Open(Options());
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message().find("another llmd is already serving"), std::string::npos);
  EXPECT_TRUE(fs::exists(path_));
  struct stat st;
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

TEST_F(UnixListenerTest, ReplacesAStaleSocketNode) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path_.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);  // like a daemon killed with -9: the node stays
  auto l = UnixListener::Open(Options());
  ASSERT_TRUE(l.has_value()) << l.error().ToString();
}

TEST_F(UnixListenerTest, RefusesSymlinksAndRegularFiles) {
  std::string target = (dir_ / "target").string();
  std::ofstream(target) << "precious";
  fs::create_symlink(target, path_);
  auto l = UnixListener::Open(Options());
  ASSERT_FALSE(l.has_value());
  EXPECT_NE(l.error().message().find("a symlink"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(path_)) << "never unlinked";
  fs::remove(path_);
  std::ofstream(path_) << "data";
  l = UnixListener::Open(Options());
  ASSERT_FALSE(l.has_value());
  EXPECT_NE(l.error().message().find("a regular file"), std::string::npos);
  EXPECT_TRUE(fs::exists(path_));
}

TEST_F(UnixListenerTest, RejectsOverlongPathsAndUnknownGroups) {
  ListenOptions o = Options();
  o.path = "/tmp/" + std::string(120, 'x');
  EXPECT_FALSE(UnixListener::Open(o).has_value());
  o = Options();
  o.group = "no-such-group-llmd";
  auto l = UnixListener::Open(o);
  ASSERT_FALSE(l.has_value());
  EXPECT_NE(l.error().message().find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace llmd::transport
