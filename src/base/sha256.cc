#include "gpuforge/base/sha256.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace gpuforge::base {
namespace {

// Why std::bad_alloc: with the default provider SHA-256 in EVP fails only when it cannot
// allocate its context, which is the failure std::string reports the same way.
void Check(int rc) {
  if (rc != 1) throw std::bad_alloc();
}

class Digest {
 public:
  Digest() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    if (ctx_ == nullptr) throw std::bad_alloc();
    Check(EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr));
  }
  void Update(const void* data, std::size_t size) {
    Check(EVP_DigestUpdate(ctx_.get(), data, size));
  }
  std::string Hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned int size = 0;
    Check(EVP_DigestFinal_ex(ctx_.get(), md.data(), &size));
    std::string out;
    out.reserve(2 * size);
    for (unsigned int i = 0; i < size; ++i) out += fmt::format("{:02x}", md[i]);
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

}  // namespace

std::string Sha256Hex(std::string_view data) {
  Digest d;
  d.Update(data.data(), data.size());
  return d.Hex();
}

Result<std::string> Sha256FileHex(const std::string& path) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rbe"),
                                                       &std::fclose);
  if (f == nullptr) return Error{fmt::format("{}: {}", path, std::strerror(errno))};
  Digest d;
  std::vector<char> buf(kSha256FileChunk);
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) d.Update(buf.data(), n);
  if (std::ferror(f.get()) != 0) return Error{fmt::format("{}: {}", path, std::strerror(errno))};
  return d.Hex();
}

}  // namespace gpuforge::base
