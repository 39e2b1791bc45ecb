#pragma once

// Local files written so that a reader sees the old content or the new, never a part: a
// temporary sibling, fsync, rename.

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "gpuforge/base/result.h"

namespace gpuforge::base {

// Creates the parent directories; the file gets `mode`.
Status WriteFileAtomically(const std::filesystem::path& target, const std::string& content, mode_t mode = 0644);

}  // namespace gpuforge::base
