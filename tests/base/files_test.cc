// Atomic writes of one file and of a batch (render --out's tree): a reader sees each target old
// or new, and a batch that cannot be written whole changes no target (#28 item 19 made the
// batch one syncfs instead of an fsync per file; these hold what that must not lose).

#include "gpuforge/base/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpuforge::base {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("gpuforge-files-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find(".gpuforge-") != std::string::npos) ++n;
  }
  return n;
}

TEST(WriteFilesAtomically, WritesEveryFileWithItsModeAndReplacesOldContent) {
  fs::path d = FreshDir("batch");
  fs::create_directories(d / "a/etc");
  std::ofstream(d / "a/etc/one.conf") << "old\n";
  std::string one = "one\n", two = "two\n", empty;
  Status s = WriteFilesAtomically({{d / "a/etc/one.conf", &one, 0644},
                                   {d / "b/deep/er/two.sh", &two, 0755},
                                   {d / "b/empty", &empty, 0600}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Slurp(d / "a/etc/one.conf"), "one\n");
  EXPECT_EQ(Slurp(d / "b/deep/er/two.sh"), "two\n");
  EXPECT_EQ(Slurp(d / "b/empty"), "");
  struct stat st {};
  ASSERT_EQ(::stat((d / "b/deep/er/two.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat((d / "b/empty").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Temporaries(d), 0);
}

// The third file's directory cannot be made (a regular file stands where it would go): the
// first two targets, one old and one new, are exactly as before, and no temporary is left.
// Before the batch, render --out wrote file by file and left the first ones replaced.
TEST(WriteFilesAtomically, AFileThatCannotBeWrittenChangesNoTarget) {
  fs::path d = FreshDir("refused");
  std::ofstream(d / "kept") << "old\n";
  std::ofstream(d / "blocker") << "a file, not a directory\n";
  std::string x = "new\n";
  Status s = WriteFilesAtomically({{d / "kept", &x, 0644}, {d / "fresh", &x, 0644}, {d / "blocker/etc/c.conf", &x, 0644}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find((d / "blocker/etc").string() + ": cannot create directory:"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("Nothing was written"), std::string::npos) << s.error().message;
  EXPECT_EQ(Slurp(d / "kept"), "old\n");
  EXPECT_FALSE(fs::exists(d / "fresh"));
  EXPECT_EQ(Temporaries(d), 0);
}

// A rename that fails (the target is a non-empty directory) after others succeeded says how
// many were replaced; the ones after it are unchanged and no temporary is left.
TEST(WriteFilesAtomically, ARenameThatFailsSaysHowManyWereReplacedAndLeavesNoTemporary) {
  fs::path d = FreshDir("rename");
  fs::create_directories(d / "2-occupied/inside");
  std::ofstream(d / "3-after") << "old\n";
  std::string x = "new\n";
  Status s = WriteFilesAtomically({{d / "1-first", &x, 0644}, {d / "2-occupied", &x, 0644}, {d / "3-after", &x, 0644}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find((d / "2-occupied").string() + ": rename failed: "), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("1 of 3 files were replaced"), std::string::npos) << s.error().message;
  EXPECT_EQ(Slurp(d / "1-first"), "new\n");
  EXPECT_EQ(Slurp(d / "3-after"), "old\n");
  EXPECT_EQ(Temporaries(d), 0);
}

TEST(WriteFileAtomically, ABareNameGoesInTheWorkingDirectory) {
  fs::path d = FreshDir("bare");
  fs::path was = fs::current_path();
  fs::current_path(d);
  std::string body = "x\n";
  Status s = WriteFileAtomically("out.xml", body);
  fs::current_path(was);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Slurp(d / "out.xml"), "x\n");
}

}  // namespace
}  // namespace gpuforge::base
