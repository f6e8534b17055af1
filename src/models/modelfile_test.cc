// Manifests in Modelfile syntax: every instruction, quoting, errors that name the file and
// the line, and rendering that reads back to the same manifest.
#include "models/modelfile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "models/models_test_util.h"

namespace llmd::models {
namespace {

Manifest Parse(std::string_view text) {
  auto m = ParseModelfile(text, "m.modelfile");
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  return m.has_value() ? *m : Manifest{};
}

std::string ParseError(std::string_view text) {
  auto m = ParseModelfile(text, "m.modelfile");
  EXPECT_FALSE(m.has_value()) << "parsed:\n" << text;
  if (m.has_value()) return "";
  EXPECT_EQ(m.error().code(), StatusCode::kInvalidArgument);
  return m.error().message();
}

TEST(Modelfile, EveryInstruction) {
  Manifest m = Parse(
      "# a comment\n"
      "FROM qwen3-8b-q4_k_m.gguf\n"
      "\n"
      "SYSTEM You are a terse assistant.\n"
      "TEMPLATE {{ messages[0]['content'] }}\n"
      "PARAMETER temperature 0.2\n"
      "PARAMETER num_ctx 8192\n"
      "PARAMETER stop <|im_end|>\n"
      "PARAMETER stop \"<|endoftext|>\"\n"
      "  # an indented comment\n"
      "EMBEDDING false\n");
  EXPECT_EQ(m.from, "qwen3-8b-q4_k_m.gguf");
  EXPECT_EQ(m.defaults.system, "You are a terse assistant.");
  EXPECT_EQ(m.defaults.chat_template, "{{ messages[0]['content'] }}");
  EXPECT_EQ(m.defaults.parameters.Number("temperature"), 0.2);
  EXPECT_EQ(m.defaults.parameters.Integer("num_ctx"), 8192);
  EXPECT_EQ(m.defaults.parameters.Strings("stop"),
            (std::vector<std::string>{"<|im_end|>", "<|endoftext|>"}));
  EXPECT_EQ(m.defaults.embedding, false);
}

TEST(Modelfile, UnsetFieldsStayUnset) {
  Manifest m = Parse("FROM base\n");
  EXPECT_EQ(m.from, "base");
  EXPECT_FALSE(m.defaults.system.has_value());
  EXPECT_FALSE(m.defaults.chat_template.has_value());
  EXPECT_FALSE(m.defaults.embedding.has_value());
  EXPECT_TRUE(m.defaults.parameters.empty());
}

TEST(Modelfile, InstructionsInAnyCaseAndOllamaHabits) {
  Manifest m = Parse(
      "\xEF\xBB\xBF"
      "from ./model.gguf\r\nsystem   spaced out   \r\nEmbedding TRUE\r\n");
  EXPECT_EQ(m.from, "model.gguf");  // "./" dropped
  EXPECT_EQ(m.defaults.system, "spaced out");
  EXPECT_EQ(m.defaults.embedding, true);
}

TEST(Modelfile, MultiLineValues) {
  Manifest m = Parse(
      "FROM base\n"
      "SYSTEM \"\"\"\n"
      "You are Mario.\n"
      "  Say \"wahoo\" often.\n"
      "\"\"\"\n"
      "TEMPLATE \"\"\"{% for m in messages %}<|im_start|>{{ m.role }}\n"
      "{{ m.content }}<|im_end|>{% endfor %}\"\"\"\n"
      "PARAMETER stop \"\"\"\n"
      "\"\"\"\n");
  EXPECT_EQ(m.defaults.system, "\nYou are Mario.\n  Say \"wahoo\" often.\n");  // byte for byte
  EXPECT_EQ(m.defaults.chat_template,
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}");
  EXPECT_EQ(m.defaults.parameters.Strings("stop"), std::vector<std::string>{"\n"});
}

// Ollama's TEMPLATE is a Go template; llmd renders Jinja: refused at its line, saying why.
TEST(Modelfile, AGoTemplateIsRefusedAtItsLine) {
  const std::string message = ParseError("FROM b\nSYSTEM s\nTEMPLATE \"\"\"{{ if .System }}{{ .System }}\n{{ end }}\"\"\"\n");
  EXPECT_EQ(message.rfind("m.modelfile:3: TEMPLATE is a Go template", 0), 0u) << message;
  EXPECT_NE(message.find("give a Jinja template"), std::string::npos) << message;
  EXPECT_EQ(ParseError("FROM b\nTEMPLATE \"\"\n"), "m.modelfile:2: TEMPLATE is empty; leave it out to use the chat template in the GGUF");
}

TEST(Modelfile, QuotedValues) {
  Manifest m = Parse(
      "FROM \"base\"\n"
      "SYSTEM \"one\n"
      "two\"\n"
      "TEMPLATE \"\"\"\"quoted\" \"\"\"\n"
      "PARAMETER stop \"  padded  \"\n");
  EXPECT_EQ(m.from, "base");
  EXPECT_EQ(m.defaults.system, "one\ntwo");
  EXPECT_EQ(m.defaults.chat_template, "\"quoted\" ");
  EXPECT_EQ(m.defaults.parameters.Strings("stop"), std::vector<std::string>{"  padded  "});
  EXPECT_EQ(Parse("FROM b\nSYSTEM \"\"\n").defaults.system, "");  // an empty system prompt
}

TEST(Modelfile, FromTargets) {
  auto file = ParseFrom("qwen3.gguf");
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->kind, FromTarget::Kind::kFile);
  EXPECT_EQ(file->file, "qwen3.gguf");
  auto model = ParseFrom("library/qwen3:8b");
  ASSERT_TRUE(model.has_value());
  EXPECT_EQ(model->kind, FromTarget::Kind::kModel);
  EXPECT_EQ(model->model.ToString(), "library/qwen3:8b");

  EXPECT_EQ(ParseError("FROM /models/qwen3.gguf\n"),
            "m.modelfile:1: FROM '/models/qwen3.gguf' is a path; name a GGUF file in the "
            "manifest's own directory");
  EXPECT_NE(ParseError("FROM ../qwen3.gguf\n").find("is a path"), std::string::npos);
  EXPECT_NE(ParseError("FROM sub/qwen3.gguf\n").find("is a path"), std::string::npos);
  EXPECT_NE(ParseError("FROM .hidden.gguf\n").find("names a hidden file"), std::string::npos);
  EXPECT_EQ(ParseError("FROM ../base\n"),
            "m.modelfile:1: FROM names neither a .gguf file nor a model: model name '../base' "
            "contains '..'");
  EXPECT_NE(ParseError("FROM /etc/passwd\n").find("absolute path"), std::string::npos);
}

TEST(Modelfile, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(ParseError("FROM b\n\nFORM c\n"),
            "m.modelfile:3: unknown instruction 'FORM'; llmd reads FROM, SYSTEM, TEMPLATE, "
            "PARAMETER, EMBEDDING");
  EXPECT_EQ(ParseError("FROM b\nADAPTER lora.gguf\n"),
            "m.modelfile:2: ADAPTER is not supported by llmd; llmd reads FROM, SYSTEM, TEMPLATE, "
            "PARAMETER, EMBEDDING");
  EXPECT_NE(ParseError("FROM b\nMESSAGE user hi\n").find(":2: MESSAGE is not supported"),
            std::string::npos);
  EXPECT_EQ(ParseError("FROM b\nPARAMETER mirostat 1\n")
                .find("m.modelfile:2: unknown PARAMETER 'mirostat'"),
            0u);
  EXPECT_EQ(ParseError("FROM b\nPARAMETER temperature 9\n"),
            "m.modelfile:2: PARAMETER temperature must be in 0..2, not 9");
  EXPECT_EQ(ParseError("FROM b\nSYSTEM a\nSYSTEM b\n"),
            "m.modelfile:3: SYSTEM is given twice (first on line 2)");
  EXPECT_EQ(ParseError("FROM a\nFROM b\n"), "m.modelfile:2: FROM is given twice (first on line 1)");
  EXPECT_EQ(ParseError("FROM b\nSYSTEM \"\"\"never\nclosed\n"),
            "m.modelfile:2: SYSTEM: \"\"\" is never closed (a quoted value ends on a line that "
            "ends with \"\"\")");
  EXPECT_EQ(ParseError("FROM b\nSYSTEM\n"), "m.modelfile:2: SYSTEM needs a value");
  EXPECT_EQ(ParseError("FROM b\nSYSTEM   \n"), "m.modelfile:2: SYSTEM needs a value");
  EXPECT_EQ(ParseError("FROM b\nPARAMETER\n"), "m.modelfile:2: PARAMETER needs a value");
  EXPECT_EQ(ParseError("FROM b\nPARAMETER top_k\n"),
            "m.modelfile:2: PARAMETER top_k needs a value");
  EXPECT_EQ(ParseError("FROM b\nPARAMETER top-k 3\n"),
            "m.modelfile:2: PARAMETER key 'top-k 3' may hold only letters, digits and '_'");
  EXPECT_EQ(ParseError("FROM b\nEMBEDDING yes\n"),
            "m.modelfile:2: EMBEDDING must be true or false, not 'yes'");
  EXPECT_EQ(ParseError("SYSTEM hi\n"), "m.modelfile: no FROM line (a manifest names its weights)");
  EXPECT_EQ(ParseError(""), "m.modelfile: no FROM line (a manifest names its weights)");
  EXPECT_EQ(ParseError(std::string("FROM b\nSYSTEM a\0b\n", 17)),
            "m.modelfile:2: a NUL byte (a manifest is text)");
  // A value's lines count: the error after a multi-line value names its own line.
  EXPECT_EQ(ParseError("FROM b\nSYSTEM \"\"\"\n1\n2\n\"\"\"\nBOGUS x\n"),
            "m.modelfile:6: unknown instruction 'BOGUS'; llmd reads FROM, SYSTEM, TEMPLATE, "
            "PARAMETER, EMBEDDING");
}

Manifest Tricky() {
  Manifest m;
  m.from = "library/base:8b";
  m.defaults.system = "  leading spaces, trailing newline\n\"quoted\"\nand a last line  ";
  m.defaults.chat_template = "{{ bos_token }}\n\n{% for m in messages %}{{ m.content }}{% endfor %}\n";
  EXPECT_TRUE(m.defaults.parameters.Add("temperature", "0.3").ok());
  EXPECT_TRUE(m.defaults.parameters.Add("num_predict", "-2").ok());
  EXPECT_TRUE(m.defaults.parameters.Add("seed", "-9223372036854775808").ok());
  EXPECT_TRUE(m.defaults.parameters.Add("stop", "\n").ok());
  EXPECT_TRUE(m.defaults.parameters.Add("stop", "\"").ok());
  EXPECT_TRUE(m.defaults.parameters.Add("stop", " User:").ok());
  EXPECT_TRUE(m.defaults.parameters.Add("stop", "<|im_end|>").ok());
  m.defaults.embedding = true;
  return m;
}

TEST(Modelfile, RenderReadsBackTheSame) {
  for (Manifest m : {Tricky(), Manifest{"weights.gguf", {}}}) {
    auto text = RenderModelfile(m);
    ASSERT_TRUE(text.has_value()) << text.error().ToString();
    auto back = ParseModelfile(*text, "rendered");
    ASSERT_TRUE(back.has_value()) << back.error().ToString() << "\n" << *text;
    EXPECT_EQ(*back, m) << *text;
  }
  Manifest empty_system{"b", {}};
  empty_system.defaults.system = "";
  auto text = RenderModelfile(empty_system);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "FROM b\nSYSTEM \"\"\"\"\"\"\n");
  EXPECT_EQ(Parse(*text), empty_system);
}

TEST(Modelfile, RenderWritesPlainValuesBare) {
  auto text = RenderModelfile(
      Parse("from m.gguf\nsystem Be brief.\nparameter top_k 40\nparameter top_p 0.95\n"
            "parameter stop <|im_end|>\nembedding false\n"));
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text,
            "FROM m.gguf\nSYSTEM Be brief.\nPARAMETER top_k 40\nPARAMETER top_p 0.95\n"
            "PARAMETER stop <|im_end|>\nEMBEDDING false\n");
}

TEST(Modelfile, ParseRenderParseIsStable) {
  const std::string text =
      "FROM ./w.gguf\nSYSTEM \"\"\"\nHi \"there\"\n\"\"\"\nPARAMETER stop \"a b\"\nTEMPLATE x\n";
  Manifest first = Parse(text);
  auto rendered = RenderModelfile(first);
  ASSERT_TRUE(rendered.has_value());
  EXPECT_EQ(Parse(*rendered), first);
}

TEST(Modelfile, RenderRefusesWhatCannotReadBack) {
  Manifest m{"b", {}};
  m.defaults.system = "ends a line with \"\"\"\nthen more";
  EXPECT_EQ(RenderModelfile(m).error().message(),
            "SYSTEM has a line ending in \"\"\" before its last");
  m.defaults.system = "windows\r\nline";
  EXPECT_EQ(RenderModelfile(m).error().message(), "SYSTEM has a carriage return before a line end");
  m.defaults.system = std::string("nul\0", 4);
  EXPECT_EQ(RenderModelfile(m).error().message(), "SYSTEM holds a NUL byte");
  m.defaults.system.reset();
  m.from = "../escape.gguf";
  EXPECT_NE(RenderModelfile(m).error().message().find("is a path"), std::string::npos);
  m.from = "";
  EXPECT_EQ(RenderModelfile(m).error().message(), "FROM needs a value");
}

TEST(Modelfile, DefaultsOverride) {
  ModelDefaults base = Parse("FROM b\nSYSTEM base\nTEMPLATE t\nPARAMETER top_k 3\n").defaults;
  ModelDefaults over = Parse("FROM b\nSYSTEM mine\nPARAMETER top_k 9\nEMBEDDING true\n").defaults;
  ModelDefaults merged = base.OverriddenBy(over);
  EXPECT_EQ(merged.system, "mine");
  EXPECT_EQ(merged.chat_template, "t");
  EXPECT_EQ(merged.parameters.Integer("top_k"), 9);
  EXPECT_EQ(merged.embedding, true);
}

TEST(Modelfile, ReadsFiles) {
  testing::TempDir dir;
  testing::WriteFile(dir / "ok.modelfile", "FROM w.gguf\nSYSTEM hi\n");
  auto ok = ReadModelfile(dir / "ok.modelfile");
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(ok->defaults.system, "hi");

  testing::WriteFile(dir / "bad.modelfile", "FROM w.gguf\nNOPE\n");
  EXPECT_EQ(ReadModelfile(dir / "bad.modelfile").error().message(),
            (dir / "bad.modelfile") +
                ":2: unknown instruction 'NOPE'; llmd reads FROM, SYSTEM, "
                "TEMPLATE, PARAMETER, EMBEDDING");
  EXPECT_EQ(ReadModelfile(dir / "missing.modelfile").error().code(), StatusCode::kNotFound);
  ASSERT_EQ(::mkfifo((dir / "fifo.modelfile").c_str(), 0600), 0);
  EXPECT_NE(ReadModelfile(dir / "fifo.modelfile").error().message().find("not a regular file"),
            std::string::npos);  // and no hang
  testing::WriteFile(dir / "big.modelfile", std::string(kMaxModelfileBytes + 1, '#'));
  EXPECT_NE(ReadModelfile(dir / "big.modelfile").error().message().find("a manifest is at most"),
            std::string::npos);
}

}  // namespace
}  // namespace llmd::models
