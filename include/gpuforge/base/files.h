#pragma once

// Local files written so that a reader sees the old content or the new, never a part: a
// temporary sibling, fsync, rename.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"

namespace gpuforge::base {

// Creates the parent directories; the file gets `mode`.
Status WriteFileAtomically(const std::filesystem::path& target, const std::string& content, mode_t mode = 0644);

// One file of a batch: `content` is borrowed and must outlive the call.
struct FileToWrite {
  std::filesystem::path target;
  const std::string* content;
  mode_t mode = 0644;
};

// A tree of many files written as one step: every file goes to a temporary sibling first; if
// any of them cannot be written, every temporary is removed and no target has changed. Then
// one syncfs(2) per file system makes them all durable at once and each is renamed over its
// target; a second syncfs makes the renames durable. A file-by-file fsync costs about 1 ms per
// file on ext4, which was most of render's time at 16,384 nodes (180,000 files; #28 item 19).
// A rename that fails after the first (the disk failing under us) is reported with how many
// targets were already replaced; each target is still whole, old or new.
Status WriteFilesAtomically(const std::vector<FileToWrite>& files);

}  // namespace gpuforge::base
