// The catalog on real directories and real GGUF files: names from stems and manifests,
// precedence across directories, broken files and escaping symlinks listed as unusable, and
// rescans that read only what changed.
#include "models/catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "models/models_test_util.h"

namespace llmd::models {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::TinyGguf;
using testing::WriteFile;

std::vector<std::string> Names(const CatalogScan& scan) {
  std::vector<std::string> names;
  for (const CatalogEntry& e : scan.entries) names.push_back(e.name);
  return names;
}

const CatalogEntry& Entry(const CatalogScan& scan, const std::string& name) {
  const CatalogEntry* e = scan.Find(name);
  EXPECT_NE(e, nullptr) << name;
  static const CatalogEntry kNone;
  return e != nullptr ? *e : kNone;
}

std::string Real(const std::string& path) { return fs::canonical(path).string(); }

class CatalogTest : public ::testing::Test {
 protected:
  CatalogScan ScanOne(const std::string& dir) {
    catalog_ = std::make_unique<Catalog>(ModelDirectories(dir, {}));
    return catalog_->Scan();
  }

  TempDir dir_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, GgufFilesAreModelsNamedByTheirStems) {
  WriteFile(dir_ / "qwen3-8b.gguf", TinyGguf("qwen3", 2));   // Q4_0
  WriteFile(dir_ / "llama:8b.gguf", TinyGguf("llama", 15));  // Q4_K_M
  WriteFile(dir_ / "tagged:latest.gguf", TinyGguf());
  WriteFile(dir_ / "library/gemma.gguf", TinyGguf("gemma3"));
  WriteFile(dir_ / "README.md", "not a model");
  WriteFile(dir_ / ".partial.gguf", "being written");
  WriteFile(dir_ / "model.gguf.part", "being downloaded");
  WriteFile(dir_ / "not.a.namespace/x.gguf", TinyGguf());  // '.' in a folder: no namespace

  CatalogScan scan = ScanOne(dir_.path().string());
  EXPECT_TRUE(scan.directory_errors.empty());
  EXPECT_EQ(Names(scan),
            (std::vector<std::string>{"library/gemma", "llama:8b", "qwen3-8b", "tagged"}));
  const CatalogEntry& qwen = Entry(scan, "qwen3-8b:latest");
  EXPECT_TRUE(qwen.usable()) << qwen.error.ToString();
  EXPECT_EQ(qwen.architecture, "qwen3");
  EXPECT_EQ(qwen.quantization, "Q4_0");
  EXPECT_EQ(qwen.parameter_count, 32u);
  EXPECT_EQ(qwen.format, format::ModelFormat::kGguf);
  EXPECT_EQ(qwen.size_bytes, TinyGguf("qwen3", 2).size());
  EXPECT_EQ(qwen.source_path, dir_ / "qwen3-8b.gguf");
  EXPECT_EQ(qwen.gguf_path, Real(dir_ / "qwen3-8b.gguf"));
  EXPECT_EQ(qwen.directory, dir_.path().string());
  EXPECT_FALSE(qwen.read_only);
  EXPECT_FALSE(qwen.from.has_value());
  EXPECT_FALSE(qwen.embedding);
  EXPECT_EQ(qwen.modified,
            fs::file_time_type::clock::to_sys(fs::last_write_time(dir_ / "qwen3-8b.gguf")));
  EXPECT_EQ(Entry(scan, "llama:8b").quantization, "Q4_K_M");
  EXPECT_EQ(Entry(scan, "tagged").quantization, "unknown");
  EXPECT_EQ(Entry(scan, "library/gemma").architecture, "gemma3");
  EXPECT_EQ(scan.Find("llama"), nullptr);        // another tag
  EXPECT_EQ(scan.Find("../qwen3-8b"), nullptr);  // not a name
}

TEST_F(CatalogTest, ManifestsGiveDefaults) {
  WriteFile(dir_ / "weights.gguf", TinyGguf("qwen3", 7));
  WriteFile(dir_ / "terse.modelfile",
            "FROM weights.gguf\nSYSTEM Be terse.\nPARAMETER temperature 0.1\n"
            "PARAMETER stop <|im_end|>\n");
  WriteFile(dir_ / "terser.modelfile", "FROM terse\nPARAMETER temperature 0\nEMBEDDING false\n");
  CatalogScan scan = ScanOne(dir_.path().string());
  EXPECT_EQ(Names(scan), (std::vector<std::string>{"terse", "terser", "weights"}));

  const CatalogEntry& terse = Entry(scan, "terse");
  ASSERT_TRUE(terse.usable()) << terse.error.ToString();
  EXPECT_EQ(terse.source_path, dir_ / "terse.modelfile");
  EXPECT_EQ(terse.from, "weights.gguf");
  EXPECT_EQ(terse.gguf_path, Real(dir_ / "weights.gguf"));
  EXPECT_EQ(terse.quantization, "Q8_0");
  EXPECT_EQ(terse.defaults.system, "Be terse.");
  EXPECT_EQ(terse.defaults.parameters.Number("temperature"), 0.1);

  // Derived from another model: its weights, its defaults overridden key by key.
  const CatalogEntry& terser = Entry(scan, "terser");
  ASSERT_TRUE(terser.usable()) << terser.error.ToString();
  EXPECT_EQ(terser.from, "terse");
  EXPECT_EQ(terser.gguf_path, terse.gguf_path);
  EXPECT_EQ(terser.architecture, "qwen3");
  EXPECT_EQ(terser.defaults.system, "Be terse.");
  EXPECT_EQ(terser.defaults.parameters.Number("temperature"), 0.0);
  EXPECT_EQ(terser.defaults.parameters.Strings("stop"), std::vector<std::string>{"<|im_end|>"});
  EXPECT_EQ(terser.defaults.embedding, false);
}

TEST_F(CatalogTest, AManifestBeatsTheGgufOfItsName) {
  WriteFile(dir_ / "m.gguf", TinyGguf());
  WriteFile(dir_ / "m.modelfile", "FROM m.gguf\nSYSTEM hi\n");
  CatalogScan scan = ScanOne(dir_.path().string());
  ASSERT_EQ(Names(scan), std::vector<std::string>{"m"});
  EXPECT_EQ(scan.entries[0].source_path, dir_ / "m.modelfile");
  EXPECT_EQ(scan.entries[0].defaults.system, "hi");
}

TEST_F(CatalogTest, EmbeddingFlag) {
  WriteFile(dir_ / "embed.gguf", TinyGguf("qwen3", std::nullopt, 3));  // pools: last token
  WriteFile(dir_ / "unpooled.gguf", TinyGguf("bert", std::nullopt, 0));
  WriteFile(dir_ / "chat-on-embed.modelfile", "FROM embed.gguf\nEMBEDDING false\n");
  WriteFile(dir_ / "forced.modelfile", "FROM unpooled.gguf\nEMBEDDING true\n");
  WriteFile(dir_ / "inherits.modelfile", "FROM embed\n");
  CatalogScan scan = ScanOne(dir_.path().string());
  EXPECT_TRUE(Entry(scan, "embed").embedding);
  EXPECT_FALSE(Entry(scan, "unpooled").embedding);
  EXPECT_FALSE(Entry(scan, "chat-on-embed").embedding);
  EXPECT_TRUE(Entry(scan, "forced").embedding);
  EXPECT_TRUE(Entry(scan, "inherits").embedding);
}

TEST_F(CatalogTest, EarlierDirectoriesWin) {
  TempDir system;
  WriteFile(dir_ / "shared.gguf", TinyGguf("user"));
  WriteFile(system / "shared.gguf", TinyGguf("system"));
  WriteFile(system / "shared.modelfile", "FROM shared.gguf\n");  // still the system's name
  WriteFile(system / "base.gguf", TinyGguf("base"));
  WriteFile(dir_ / "mine.modelfile", "FROM base\nSYSTEM mine\n");  // from a system model
  Catalog catalog(ModelDirectories(dir_.path().string(), {system.path().string()}));
  ASSERT_EQ(catalog.directories().size(), 2u);
  CatalogScan scan = catalog.Scan();
  EXPECT_EQ(Names(scan), (std::vector<std::string>{"base", "mine", "shared"}));
  const CatalogEntry& shared = Entry(scan, "shared");
  EXPECT_EQ(shared.architecture, "user");
  EXPECT_FALSE(shared.read_only);
  EXPECT_TRUE(Entry(scan, "base").read_only);
  EXPECT_EQ(Entry(scan, "base").directory, system.path().string());
  const CatalogEntry& mine = Entry(scan, "mine");
  ASSERT_TRUE(mine.usable()) << mine.error.ToString();
  EXPECT_FALSE(mine.read_only);
  EXPECT_EQ(mine.gguf_path, Real(system / "base.gguf"));
}

TEST_F(CatalogTest, DirectoryList) {
  auto dirs = ModelDirectories("/var/lib/llmd/models",
                               {"/usr/share/llmd/models", "/var/lib/llmd/models", "/opt/m"});
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0].path, "/var/lib/llmd/models");
  EXPECT_FALSE(dirs[0].read_only);
  EXPECT_EQ(dirs[1].path, "/usr/share/llmd/models");
  EXPECT_TRUE(dirs[1].read_only);
  EXPECT_EQ(dirs[2].path, "/opt/m");
  EXPECT_EQ(ModelDirectories("", {"/usr/share/llmd/models"}).size(), 1u);
}

TEST_F(CatalogTest, BrokenFilesAreListedUnusable) {
  WriteFile(dir_ / "good.gguf", TinyGguf());
  WriteFile(dir_ / "garbage.gguf", "this is not a model at all");
  const std::string tiny = TinyGguf();
  WriteFile(dir_ / "cut.gguf", tiny.substr(0, tiny.size() - 10));
  WriteFile(dir_ / "empty.gguf", "");
  WriteFile(dir_ / "bad name.gguf", TinyGguf());
  WriteFile(dir_ / "bad-manifest.modelfile", "FROM good.gguf\nPARAMETER temperature hot\n");
  WriteFile(dir_ / "no-file.modelfile", "FROM missing.gguf\n");
  WriteFile(dir_ / "no-model.modelfile", "FROM nowhere\n");
  WriteFile(dir_ / "on-broken.modelfile", "FROM garbage\n");
  WriteFile(dir_ / "self.modelfile", "FROM self\n");
  WriteFile(dir_ / "loop-a.modelfile", "FROM loop-b\n");
  WriteFile(dir_ / "loop-b.modelfile", "FROM loop-a\n");
  fs::create_directory(dir_ / "folder.gguf");  // a directory is no model, nor a namespace
  CatalogScan scan = ScanOne(dir_.path().string());
  EXPECT_EQ(Names(scan), (std::vector<std::string>{"bad name", "bad-manifest", "cut", "empty",
                                                   "garbage", "good", "loop-a", "loop-b", "no-file",
                                                   "no-model", "on-broken", "self"}));
  EXPECT_TRUE(Entry(scan, "good").usable());
  auto error = [&](const std::string& name) {
    for (const CatalogEntry& e : scan.entries) {
      if (e.name == name) {
        EXPECT_FALSE(e.usable()) << name;
        return e.error.message();
      }
    }
    ADD_FAILURE() << name << " not listed";
    return std::string();
  };
  EXPECT_EQ(error("garbage"),
            Real(dir_ / "garbage.gguf") + ": unsupported model format: a text file");
  EXPECT_NE(error("cut").find("runs past the end of the file"), std::string::npos) << error("cut");
  EXPECT_NE(error("empty").find("an empty file"), std::string::npos);
  EXPECT_NE(
      error("bad name").find("the file name is not a model name: model name 'bad name' has ' '"),
      std::string::npos)
      << error("bad name");
  EXPECT_EQ(error("bad-manifest"), Real(dir_ / "bad-manifest.modelfile") +
                                       ":2: PARAMETER temperature must be a number, not 'hot'");
  EXPECT_NE(error("no-file").find("FROM missing.gguf: "), std::string::npos) << error("no-file");
  EXPECT_NE(error("no-file").find("No such file"), std::string::npos);
  EXPECT_EQ(error("no-model"), "FROM 'nowhere': no such model in the models directories");
  EXPECT_EQ(error("on-broken").find("FROM 'garbage': that model cannot be served: "), 0u);
  EXPECT_EQ(
      error("self"),
      "FROM 'self' is this model itself; a manifest that derives from a model takes another name");
  EXPECT_NE(error("loop-a").find("cycle"), std::string::npos) << error("loop-a");
  EXPECT_NE(error("loop-b").find("cycle"), std::string::npos) << error("loop-b");
}

TEST_F(CatalogTest, SymlinksMustStayInside) {
  TempDir outside;
  WriteFile(outside / "elsewhere.gguf", TinyGguf());
  WriteFile(dir_ / "blobs-real.gguf", TinyGguf("inside"));
  fs::create_symlink(outside / "elsewhere.gguf", dir_ / "escape.gguf");
  fs::create_symlink("blobs-real.gguf", dir_ / "alias.gguf");  // relative, inside: fine
  fs::create_symlink(dir_ / "gone.bin", dir_ / "dangling.gguf");
  fs::create_symlink("/dev/zero", dir_ / "zero.gguf");
  fs::create_symlink(dir_ / "escape.gguf", dir_ / "chain.gguf");  // a link to a link out

  CatalogScan scan = ScanOne(dir_.path().string());
  const CatalogEntry& alias = Entry(scan, "alias");
  ASSERT_TRUE(alias.usable()) << alias.error.ToString();
  EXPECT_EQ(alias.gguf_path, Real(dir_ / "blobs-real.gguf"));
  EXPECT_EQ(alias.architecture, "inside");

  const std::string root = Real(dir_.path().string());
  const CatalogEntry& escape = Entry(scan, "escape");
  EXPECT_EQ(escape.error.message(), (dir_ / "escape.gguf") + ": resolves to " +
                                        Real(outside / "elsewhere.gguf") + ", outside " + root +
                                        "; a model's file must be inside its models directory");
  EXPECT_TRUE(escape.gguf_path.empty());
  EXPECT_NE(Entry(scan, "chain").error.message().find(", outside "), std::string::npos);
  EXPECT_NE(Entry(scan, "zero").error.message().find("resolves to /dev/zero, outside"),
            std::string::npos);
  EXPECT_EQ(Entry(scan, "dangling").error.message(),
            (dir_ / "dangling.gguf") + ": a symlink to a missing file");
  EXPECT_EQ(Entry(scan, "dangling").error.code(), StatusCode::kNotFound);
}

TEST_F(CatalogTest, AManifestsFromFileIsHeldInsideToo) {
  TempDir outside;
  WriteFile(outside / "w.gguf", TinyGguf());
  fs::create_symlink(outside / "w.gguf", dir_ / "out.gguf");
  WriteFile(dir_ / "sneaky.modelfile", "FROM out.gguf\n");
  CatalogScan scan = ScanOne(dir_.path().string());
  const CatalogEntry& sneaky = Entry(scan, "sneaky");
  EXPECT_FALSE(sneaky.usable());
  EXPECT_EQ(sneaky.error.message().find("FROM out.gguf: " + (dir_ / "out.gguf") + ": resolves to "),
            0u)
      << sneaky.error.message();
}

TEST_F(CatalogTest, MissingAndUnreadableDirectories) {
  Catalog missing(ModelDirectories(dir_ / "not-yet", {dir_ / "nor-this"}));
  CatalogScan scan = missing.Scan();
  EXPECT_TRUE(scan.entries.empty());
  EXPECT_TRUE(scan.directory_errors.empty());

  WriteFile(dir_ / "a-file", "x");
  WriteFile(dir_ / "real/m.gguf", TinyGguf());
  Catalog mixed(ModelDirectories(dir_ / "a-file", {dir_ / "real"}));
  scan = mixed.Scan();
  ASSERT_EQ(scan.directory_errors.size(), 1u);
  EXPECT_EQ(scan.directory_errors[0].message(), (dir_ / "a-file") + ": not a directory");
  EXPECT_EQ(Names(scan), std::vector<std::string>{"m"});  // the other directory still counts
}

TEST_F(CatalogTest, RescansReadOnlyWhatChanged) {
  WriteFile(dir_ / "a.gguf", TinyGguf("first"));
  WriteFile(dir_ / "b.gguf", TinyGguf());
  WriteFile(dir_ / "broken.gguf", "not a model");
  WriteFile(dir_ / "c.modelfile", "FROM b.gguf\n");
  Catalog catalog(ModelDirectories(dir_.path().string(), {}));
  EXPECT_EQ(catalog.Scan().entries.size(), 4u);
  EXPECT_EQ(catalog.gguf_reads(), 3u);  // b.gguf once, for b and for c
  EXPECT_EQ(catalog.modelfile_reads(), 1u);

  CatalogScan again = catalog.Scan();  // nothing changed: nothing read, the same answers
  EXPECT_EQ(catalog.gguf_reads(), 3u);
  EXPECT_EQ(catalog.modelfile_reads(), 1u);
  EXPECT_EQ(Entry(again, "a").architecture, "first");
  EXPECT_FALSE(Entry(again, "broken").usable());  // the error is cached too

  WriteFile(dir_ / "a.gguf", TinyGguf("second-longer"));  // another size: another stamp
  WriteFile(dir_ / "d.gguf", TinyGguf());
  fs::remove(dir_ / "broken.gguf");
  CatalogScan changed = catalog.Scan();
  EXPECT_EQ(catalog.gguf_reads(), 5u);  // a and d
  EXPECT_EQ(catalog.modelfile_reads(), 1u);
  EXPECT_EQ(Entry(changed, "a").architecture, "second-longer");
  EXPECT_EQ(Names(changed), (std::vector<std::string>{"a", "b", "c", "d"}));

  WriteFile(dir_ / "c.modelfile", "FROM b.gguf\nSYSTEM now with a system prompt\n");
  CatalogScan edited = catalog.Scan();
  EXPECT_EQ(catalog.gguf_reads(), 5u);
  EXPECT_EQ(catalog.modelfile_reads(), 2u);
  EXPECT_EQ(Entry(edited, "c").defaults.system, "now with a system prompt");

  // A file put back after it was gone is read again (the cache forgot it).
  WriteFile(dir_ / "broken.gguf", "not a model");
  catalog.Scan();
  EXPECT_EQ(catalog.gguf_reads(), 6u);
}

}  // namespace
}  // namespace llmd::models
