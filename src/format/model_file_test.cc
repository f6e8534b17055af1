// The loader's front door on real files: robustness-tests.md items 42 and 47 (wrong magic,
// directories, devices, symlinks to /dev/zero, FIFOs, missing and unreadable files).
#include "format/model_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/gguf_builder.h"

namespace llmd::format {
namespace {

namespace fs = std::filesystem;

class ModelFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("llmd_model_file_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  Status ErrorFor(const std::string& path) {
    auto r = InspectModelFile(path);
    EXPECT_FALSE(r.has_value()) << path;
    return r.has_value() ? Status() : r.error();
  }

  fs::path dir_;
};

TEST_F(ModelFileTest, InspectsAValidGguf) {
  auto r = InspectModelFile(Write("ok.gguf", testing::MinimalValidGguf().bytes()));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->format, ModelFormat::kGguf);
  EXPECT_EQ(r->gguf.architecture, "llama");
}

TEST_F(ModelFileTest, ErrorsNameThePathAndTheFormat) {
  Status s = ErrorFor(Write("empty.gguf", ""));
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("empty.gguf: unsupported model format: an empty file"), std::string::npos);
  EXPECT_NE(ErrorFor(Write("x.gguf", "GGUX is not GGUF\n")).message().find("a text file"),
            std::string::npos);
  EXPECT_NE(ErrorFor(Write("elf.gguf", "\x7F" "ELF\x02\x01\x01")).message().find("ELF"), std::string::npos);
}

TEST_F(ModelFileTest, ExtensionNeverDecides) {
  // A .pte renamed .gguf is still an ExecuTorch program; a GGUF renamed .pte is still GGUF.
  Status pte = ErrorFor(Write("renamed.gguf", std::string("\x1c\0\0\0ET12\0\0\0\0", 12)));
  EXPECT_EQ(pte.code(), StatusCode::kUnimplemented);
  EXPECT_NE(pte.message().find("this build has no ExecuTorch support"), std::string::npos);
  EXPECT_TRUE(InspectModelFile(Write("renamed.pte", testing::MinimalValidGguf().bytes())).has_value());
}

TEST_F(ModelFileTest, CrashSafeOnTruncatedGguf) {
  std::string full = testing::MinimalValidGguf().bytes();
  Status s = ErrorFor(Write("cut.gguf", full.substr(0, full.size() - 10)));
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("runs past the end of the file"), std::string::npos) << s.message();
}

TEST_F(ModelFileTest, RefusesNonRegularFiles) {
  EXPECT_NE(ErrorFor(dir_.string()).message().find("is a directory"), std::string::npos);
  EXPECT_NE(ErrorFor("/dev/zero").message().find("character device"), std::string::npos);
  fs::create_symlink("/dev/zero", dir_ / "zero.gguf");
  EXPECT_NE(ErrorFor((dir_ / "zero.gguf").string()).message().find("character device"), std::string::npos);
  fs::create_symlink("/dev/random", dir_ / "random.gguf");
  EXPECT_NE(ErrorFor((dir_ / "random.gguf").string()).message().find("character device"), std::string::npos);
  std::string fifo = (dir_ / "fifo.gguf").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(ErrorFor(fifo).message().find("FIFO"), std::string::npos);  // and no hang
}

TEST_F(ModelFileTest, MissingAndUnreadableFiles) {
  Status missing = ErrorFor((dir_ / "nope.gguf").string());
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("No such file"), std::string::npos);
  std::string locked = Write("locked.gguf", testing::MinimalValidGguf().bytes());
  fs::permissions(locked, fs::perms::none);
  if (::geteuid() != 0) {
    EXPECT_NE(ErrorFor(locked).message().find("Permission denied"), std::string::npos);
    return;
  }
  // Root reads any file: check as an unprivileged user in a child process instead.
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_exec);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    auto r = InspectModelFile(locked);
    bool denied = !r.has_value() && r.error().message().find("Permission denied") != std::string::npos;
    ::_exit(denied ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not refused as permission denied; 2: setuid failed";
}

TEST_F(ModelFileTest, FileReplacedByRenameKeepsTheOpenInode) {
  // Item 47a: the checks read through one descriptor, so a rename() over the path mid-way
  // cannot mix two files.
  std::string path = Write("model.gguf", testing::MinimalValidGguf().bytes());
  auto file = OpenRandomAccessFile(path);
  ASSERT_TRUE(file.has_value());
  std::string replacement = Write("new.gguf", "not a model");
  fs::rename(replacement, path);
  EXPECT_TRUE(PrecheckGguf(**file).has_value());
}

TEST_F(ModelFileTest, FileTruncatedUnderAReaderGivesAnErrorNotSigbus) {
  // Item 47b: reads use pread, never mmap, so shrinking the file is an I/O error.
  std::string path = Write("shrink.gguf", testing::MinimalValidGguf().bytes());
  auto file = OpenRandomAccessFile(path);
  ASSERT_TRUE(file.has_value());
  fs::resize_file(path, 16);
  auto r = PrecheckGguf(**file);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace llmd::format
