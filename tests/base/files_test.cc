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
#include <string>
#include <vector>

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

// Per-file temporaries and staged trees (DIR/.gpu01.gpuforge-XXXXXX) alike.
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

mode_t ModeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// A first render: each node's directory is new, built whole beside its name and renamed in.
TEST(WriteTreeAtomically, NewEntriesAreWrittenWholeWithTheirModes) {
  fs::path d = FreshDir("tree-new");
  std::string a = "a\n", b = "b\n", c = "c\n";
  Status s = WriteTreeAtomically(d / "out", {{d / "out/gpu01/etc/nccl.conf", &a, 0644},
                                             {d / "out/gpu01/etc/slurm/prolog.d/map.sh", &b, 0755},
                                             {d / "out/gpu02/etc/secret", &c, 0600},
                                             {d / "out/top-level", &a, 0644}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Slurp(d / "out/gpu01/etc/nccl.conf"), "a\n");
  EXPECT_EQ(Slurp(d / "out/gpu01/etc/slurm/prolog.d/map.sh"), "b\n");
  EXPECT_EQ(Slurp(d / "out/gpu02/etc/secret"), "c\n");
  EXPECT_EQ(Slurp(d / "out/top-level"), "a\n");
  EXPECT_EQ(ModeOf(d / "out/gpu01/etc/slurm/prolog.d/map.sh"), 0755u);
  EXPECT_EQ(ModeOf(d / "out/gpu02/etc/secret"), 0600u);
  // The staged directory was made 0700 by mkdtemp; in place it is what mkdir would have made.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(ModeOf(d / "out/gpu01"), 0777u & ~mask);
  EXPECT_EQ(Temporaries(d), 0);
}

// A render run again: a file already right is not touched (same inode, so rsync and make see
// no change), a changed one is replaced, a new one is added, and a file gpuforge does not
// write stays.
TEST(WriteTreeAtomically, AnExistingEntryKeepsFilesThatAreAlreadyRight) {
  fs::path d = FreshDir("tree-again");
  fs::create_directories(d / "gpu01/etc");
  std::ofstream(d / "gpu01/etc/same.conf") << "same\n";
  std::ofstream(d / "gpu01/etc/changed.conf") << "old\n";
  std::ofstream(d / "gpu01/etc/mine.conf") << "the operator's\n";
  ::chmod((d / "gpu01/etc/same.conf").c_str(), 0644);
  struct stat before {};
  ASSERT_EQ(::stat((d / "gpu01/etc/same.conf").c_str(), &before), 0);
  std::string same = "same\n", changed = "new\n", added = "added\n";
  Status s = WriteTreeAtomically(d, {{d / "gpu01/etc/same.conf", &same, 0644},
                                     {d / "gpu01/etc/changed.conf", &changed, 0644},
                                     {d / "gpu01/etc/sub/added.conf", &added, 0640}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  struct stat after {};
  ASSERT_EQ(::stat((d / "gpu01/etc/same.conf").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(Slurp(d / "gpu01/etc/changed.conf"), "new\n");
  EXPECT_EQ(Slurp(d / "gpu01/etc/sub/added.conf"), "added\n");
  EXPECT_EQ(ModeOf(d / "gpu01/etc/sub/added.conf"), 0640u);
  EXPECT_EQ(Slurp(d / "gpu01/etc/mine.conf"), "the operator's\n");
  // Same bytes, other mode: rewritten with the mode asked for.
  ::chmod((d / "gpu01/etc/same.conf").c_str(), 0600);
  ASSERT_TRUE(WriteTreeAtomically(d, {{d / "gpu01/etc/same.conf", &same, 0644}}).ok());
  EXPECT_EQ(ModeOf(d / "gpu01/etc/same.conf"), 0644u);
  EXPECT_EQ(Temporaries(d), 0);
}

// A symbolic link at a target is never "already right", even to a file with the same bytes:
// it is replaced by a regular file and the file it pointed at is untouched.
TEST(WriteTreeAtomically, ALinkAtATargetIsReplacedNotFollowed) {
  fs::path d = FreshDir("tree-link");
  fs::create_directories(d / "gpu01/etc");
  std::ofstream(d / "elsewhere") << "same\n";
  ::chmod((d / "elsewhere").c_str(), 0644);
  fs::create_symlink(d / "elsewhere", d / "gpu01/etc/a.conf");
  std::string same = "same\n";
  ASSERT_TRUE(WriteTreeAtomically(d, {{d / "gpu01/etc/a.conf", &same, 0644}}).ok());
  EXPECT_FALSE(fs::is_symlink(d / "gpu01/etc/a.conf"));
  EXPECT_EQ(Slurp(d / "gpu01/etc/a.conf"), "same\n");
  EXPECT_EQ(Slurp(d / "elsewhere"), "same\n");
  EXPECT_EQ(Temporaries(d), 0);
}

// One file of a new entry cannot be written (its directory would be a file of the same
// batch), among 40 entries written by four threads: no entry appears, the existing one is
// unchanged, and no staged tree or temporary is left.
TEST(WriteTreeAtomically, AFailureAnywhereLeavesNoEntryAndNoStagedTree) {
  fs::path d = FreshDir("tree-fail");
  fs::create_directories(d / "old/etc");
  std::ofstream(d / "old/etc/kept") << "old\n";
  std::string x = "new\n";
  std::vector<FileToWrite> files{{d / "old/etc/kept", &x, 0644}};
  for (int i = 0; i < 40; ++i) files.push_back({d / ("n" + std::to_string(i)) / "etc/x.conf", &x, 0644});
  files.push_back({d / "n17/etc/x.conf/under-a-file", &x, 0644});
  Status s = WriteTreeAtomically(d, files, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find((d / "n17/etc/x.conf").string()), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("Nothing was written"), std::string::npos) << s.error().message;
  EXPECT_EQ(Slurp(d / "old/etc/kept"), "old\n");
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(fs::exists(d / ("n" + std::to_string(i)))) << i;
  EXPECT_EQ(Temporaries(d), 0);
}

TEST(WriteTreeAtomically, ManyEntriesOnSeveralThreadsAreAllWritten) {
  fs::path d = FreshDir("tree-threads");
  std::vector<std::string> bodies;
  for (int i = 0; i < 300; ++i) bodies.push_back("node " + std::to_string(i) + "\n");
  std::vector<FileToWrite> files;
  for (int i = 0; i < 300; ++i) {
    files.push_back({d / ("n" + std::to_string(i)) / "etc/a.conf", &bodies[i], 0644});
    files.push_back({d / ("n" + std::to_string(i)) / "etc/b/c.conf", &bodies[i], 0600});
  }
  ASSERT_TRUE(WriteTreeAtomically(d, files, 8).ok());
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(Slurp(d / ("n" + std::to_string(i)) / "etc/a.conf"), bodies[i]);
    EXPECT_EQ(Slurp(d / ("n" + std::to_string(i)) / "etc/b/c.conf"), bodies[i]);
  }
  EXPECT_EQ(Temporaries(d), 0);
}

TEST(WriteTreeAtomically, ATargetOutsideTheRootIsRefused) {
  fs::path d = FreshDir("tree-outside");
  std::string x = "x\n";
  Status s = WriteTreeAtomically(d / "out", {{d / "elsewhere/file", &x, 0644}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not below"), std::string::npos) << s.error().message;
  EXPECT_FALSE(fs::exists(d / "elsewhere"));
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
