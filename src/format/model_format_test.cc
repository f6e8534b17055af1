#include "format/model_format.h"

#include <gtest/gtest.h>

namespace llmd::format {
namespace {

std::string ErrorOf(std::string_view head) {
  auto r = SniffModelFormat(head);
  EXPECT_FALSE(r.has_value()) << "accepted: " << std::string(head.substr(0, 8));
  return r.has_value() ? "" : r.error().message();
}

TEST(SniffModelFormat, RecognizesGgufV2AndV3) {
  EXPECT_EQ(*SniffModelFormat(std::string("GGUF\x03\0\0\0", 8)), ModelFormat::kGguf);
  EXPECT_EQ(*SniffModelFormat(std::string("GGUF\x02\0\0\0", 8)), ModelFormat::kGguf);
}

TEST(SniffModelFormat, RejectsOtherGgufVersions) {
  EXPECT_NE(ErrorOf(std::string("GGUF\x01\0\0\0", 8)).find("version 1"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string("GGUF\0\0\0\x03", 8)).find("big-endian"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string("GGUF\x09\0\0\0", 8)).find("unknown GGUF version 9"), std::string::npos);
  EXPECT_NE(ErrorOf("GGUF").find("truncated"), std::string::npos);
}

TEST(SniffModelFormat, RecognizesExecuTorchByIdentifierNotName) {
  EXPECT_EQ(*SniffModelFormat(std::string("\x1c\0\0\0ET12\0\0", 10)),
            ModelFormat::kExecuTorchProgram);
  EXPECT_NE(ErrorOf(std::string("\x1c\0\0\0ET11\0\0", 10)).find("ET11 is incompatible"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string("\x1c\0\0\0" "FT01\0\0", 10)).find("load the matching .pte"),
            std::string::npos);
}

TEST(SniffModelFormat, NamesEachUnsupportedFormat) {
  EXPECT_EQ(ErrorOf(""), "unsupported model format: an empty file");
  EXPECT_NE(ErrorOf("PK\x03\x04rest-of-zip").find("ZIP archive"), std::string::npos);
  EXPECT_NE(ErrorOf("\x80\x02}q\x00(X").find("Python pickle"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string("\x7F" "ELF\x02\x01\x01\0", 8)).find("ELF"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string("\x40\0\0\0\0\0\0\0{\"__metadata__\":{}}", 27)).find("safetensors"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("# just a README\nwith text\n"), "unsupported model format: a text file");
  EXPECT_NE(ErrorOf(std::string("GGUX\x03\0\0\0", 8)).find("unrecognized binary data"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string("\x00\x01\x02\x03\xfe\xff", 6)).find("unrecognized binary"),
            std::string::npos);
}

}  // namespace
}  // namespace llmd::format
