// The bounded reader every user-given file goes through (issue #12, item 9): the hostile cases
// are real files of those kinds, made here.

#include "gpuforge/base/read_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpuforge::base {
namespace {

namespace fs = std::filesystem;

fs::path Dir() {
  fs::path d = fs::temp_directory_path() / ("gpuforge-read-file-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

TEST(ReadInputFile, ReadsARegularFileWhole) {
  fs::path p = Dir() / "inventory.yaml";
  std::ofstream(p) << "cluster: {}\n";
  Result<std::string> r = ReadInputFile({p.string(), "inventory"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "cluster: {}\n");
}

// For files libssh reads by path (ssh config, identity file): the same refusals, nothing read.
TEST(CheckInputFile, PassesARegularFileAndRefusesAFifoADeviceAndOneOverTheCap) {
  fs::path p = Dir() / "config";
  std::ofstream(p) << "Host *\n  User ops\n";
  EXPECT_TRUE(CheckInputFile({p.string(), "ssh config"}).ok());
  Status big = CheckInputFile({p.string(), "ssh config", 8});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, "cannot read ssh config " + p.string() + ": it is larger than 8 bytes; refusing to read it");
  fs::path fifo = Dir() / "config-fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status f = CheckInputFile({fifo.string(), "ssh config"});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message, "cannot read ssh config " + fifo.string() + ": it is a FIFO, not a regular file");
  Status dev = CheckInputFile({"/dev/zero", "identity file"});
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().message, "cannot read identity file /dev/zero: it is a character device, not a regular file");
  Status missing = CheckInputFile({(Dir() / "nope").string(), "identity file"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos);
}

TEST(ReadInputFile, RefusesWhatIsNotARegularFileWithoutReadingIt) {
  fs::path fifo = Dir() / "fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading waits for a writer unless asked not to: this returns at once.
  Result<std::string> r = ReadInputFile({fifo.string(), "inventory"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot read inventory " + fifo.string() + ": it is a FIFO, not a regular file");

  r = ReadInputFile({"/dev/zero", "inventory"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot read inventory /dev/zero: it is a character device, not a regular file");

  r = ReadInputFile({Dir().string(), "saved plan"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot read saved plan " + Dir().string() + ": it is a directory, not a regular file");

  r = ReadInputFile({(Dir() / "missing").string(), "GPU model table"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot read GPU model table " + (Dir() / "missing").string() + ": No such file or directory");
}

TEST(ReadInputFile, StopsAtTheCapWhateverStatSays) {
  fs::path p = Dir() / "big";
  std::ofstream(p) << std::string(5000, 'x');
  Result<std::string> r = ReadInputFile({p.string(), "inventory", 4096});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot read inventory " + p.string() + ": it is larger than 4 KiB; refusing to read it");
  EXPECT_TRUE(ReadInputFile({p.string(), "inventory", 5000}).ok());
  // /proc files report size 0 and still have content: the read itself is bounded.
  r = ReadInputFile({"/proc/self/maps", "recorded output", 16});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("larger than 16 bytes"), std::string::npos) << r.error().message;
}

TEST(ReadInputFile, DescribesSizes) {
  EXPECT_EQ(DescribeBytes(64u << 20), "64 MiB");
  EXPECT_EQ(DescribeBytes(512u << 10), "512 KiB");
  EXPECT_EQ(DescribeBytes(100), "100 bytes");
}

}  // namespace
}  // namespace gpuforge::base
