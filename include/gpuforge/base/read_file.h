#pragma once

// The one reader for every file a user hands gpuforge (inventory, saved plan, GPU model table,
// recorded node outputs): a regular file only, read to a cap and no further. `lint /dev/zero`
// grew past 2 GB and a FIFO hung forever while the cap was checked against the reported size
// alone (issue #12, item 9).

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"

namespace gpuforge::base {

// What the input is, for messages: "inventory", "saved plan", "GPU model table".
struct InputFile {
  std::string path;
  std::string_view what;
  std::size_t cap = 64u << 20;
  // false: the message leaves the path out, for callers whose diagnostics name it already
  // ("FILE: error: cannot read inventory: No such file or directory").
  bool name_path = true;
  // true: a pipe or a FIFO is read too (to the same cap), and the path "-" is standard input, so
  // `lint - < x.yaml`, `lint /dev/stdin` and `lint <(gen)` work (#28 item 24). A FIFO with no
  // writer reads as empty at once; a terminal on standard input is refused, never waited on.
  bool allow_pipe = false;
};

// How a file that allows pipes names standard input in messages: "<stdin>".
inline constexpr std::string_view kStdinLabel = "<stdin>";

// The whole content, or an error that names the path and says why: not there, a directory,
// a FIFO, socket or device (opened without blocking, never read), or larger than the cap
// (read up to the cap + 1 byte, whatever stat says).
Result<std::string> ReadInputFile(const InputFile& in);

// The same checks without reading, for files another library reads by path (libssh's ssh
// config and identity files): there, a regular file no larger than the cap; else the error
// ReadInputFile would give.
Status CheckInputFile(const InputFile& in);

// "64 MiB", "512 KiB", "100 bytes".
std::string DescribeBytes(std::size_t n);

}  // namespace gpuforge::base
