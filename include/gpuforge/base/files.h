#pragma once

// Local files written so that a reader sees the old content or the new, never a part: a
// temporary sibling, fsync, rename.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"

namespace gpuforge::base {

// Creates the parent directories; the file gets `mode`. With `replace` false, a target that
// exists (a file, a link, a directory) is an error and stays as it was, decided by the kernel
// at the last step (renameat2 RENAME_NOREPLACE, else link(2)), so a file another process
// creates meanwhile is not overwritten either: `init --out` (#33, Terraform's rule).
Status WriteFileAtomically(const std::filesystem::path& target, const std::string& content, mode_t mode = 0644,
                           bool replace = true);

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

// WriteFilesAtomically for a tree below `root` (every target lies below it; render --out's
// DIR/<node>/...), with two things more for trees of 100,000 files (#28 item 19):
// - an entry of `root` that does not exist yet (DIR/gpu00042 on a first render) is built whole
//   in a temporary sibling (DIR/.gpu00042.gpuforge-XXXXXX), its files written in place without
//   a temporary each, and renamed into place after the syncfs: a reader sees the node's tree
//   whole or not at all, and the per-file temporary and rename are saved;
// - entries of `root` that exist get the per-file temporary and rename as above;
// - the entries are written by up to `threads` threads (0: one per core, at most 8).
// The promise is WriteFilesAtomically's: if any file cannot be written, every temporary and
// staged tree is removed and nothing below `root` has changed ("Nothing was written"); a
// rename that fails after others succeeded says how many targets were already replaced.
Status WriteTreeAtomically(const std::filesystem::path& root, const std::vector<FileToWrite>& files,
                           unsigned threads = 0);

}  // namespace gpuforge::base
