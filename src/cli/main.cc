#include <cstdio>
#include <new>

#include "cli/app.h"
#include "gpuforge/remote/session.h"

int main(int argc, char** argv) {
  // A reader that dies (a pipe into `head`, a full disk under a local upload) must not kill a
  // run mid-apply with SIGPIPE (issue #12, item 8): every write error is a value instead, and
  // cli::Run reports output it could not write.
  gpuforge::remote::IgnoreSigpipe();
  // Every input is bounded before it is expanded (hostlists, inventories, node output), but an
  // allocation can still fail on a small machine: say so and exit 2, never abort with a core
  // (#28 item 16 was an uncaught bad_alloc, exit 134).
  try {
    return gpuforge::cli::Run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fputs("gpuforge: error: out of memory: the input asks for more memory than this machine can give\n", stderr);
    return 2;
  }
}
