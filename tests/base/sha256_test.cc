#include "gpuforge/base/sha256.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuforge::base {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks: the padding crosses a block boundary.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

class Sha256File : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuforge-sha256-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(Sha256File, SameDigestAsTheStringOnEitherSideOfAChunk) {
  // Bytes that differ by position, so a chunk read twice or skipped changes the digest.
  std::string data;
  for (std::size_t i = 0; i < 3 * kSha256FileChunk + 17; ++i)
    data.push_back(static_cast<char>(i * 131 % 251));
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, kSha256FileChunk - 1, kSha256FileChunk,
                           kSha256FileChunk + 1, 2 * kSha256FileChunk, data.size()}) {
    const std::string content = data.substr(0, size);
    Result<std::string> got = Sha256FileHex(Write("f" + std::to_string(size), content));
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(*got, Sha256Hex(content)) << size << " bytes";
  }
}

TEST_F(Sha256File, KnownVectorAcrossManyChunks) {
  Result<std::string> got = Sha256FileHex(Write("a", std::string(1000000, 'a')));
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_F(Sha256File, ErrorsNameThePathAndTheReason) {
  const std::string missing = (dir_ / "missing").string();
  Result<std::string> got = Sha256FileHex(missing);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message, missing + ": No such file or directory");
  Result<std::string> dir = Sha256FileHex(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().message, dir_.string() + ": Is a directory");
}

}  // namespace
}  // namespace gpuforge::base
