#pragma once

// SHA-256 digests as sha256sum prints them (lowercase hex), for comparing file content on a
// node with what gpuforge would write, and for naming the pushed agent by its content. The
// digest is OpenSSL's (EVP); gpuforge carries no cryptography of its own.

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"

namespace gpuforge::base {

std::string Sha256Hex(std::string_view data);

// How much of a file Sha256FileHex holds at a time.
inline constexpr std::size_t kSha256FileChunk = 64 * 1024;

// The digest of a file's content, read in chunks of kSha256FileChunk, so hashing the agent
// binary (tens of MB under the sanitizers) does not copy it into memory. The error names the
// path and the reason ("x: No such file or directory").
Result<std::string> Sha256FileHex(const std::string& path);

}  // namespace gpuforge::base
