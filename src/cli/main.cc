#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/app.h"
#include "gpuforge/remote/session.h"

int main(int argc, char** argv) {
  // A reader that dies (a pipe into `head`, a full disk under a local upload) must not kill a
  // run mid-apply with SIGPIPE (issue #12, item 8): every write error is a value instead.
  gpuforge::remote::IgnoreSigpipe();
  int code = gpuforge::cli::Run(argc, argv);
  // With SIGPIPE ignored, output lost to a closed or failing stdout shows here: say so, and do
  // not exit 0 for a result nobody received.
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed || std::ferror(stdout) != 0) {
    const int e = gpuforge::cli::FirstOutputError() != 0 ? gpuforge::cli::FirstOutputError() : errno;
    std::fprintf(stderr, "gpuforge: error: cannot write the output: %s\n", e != 0 ? std::strerror(e) : "write error");
    if (code == gpuforge::cli::kExitOk) code = gpuforge::cli::kExitFindings;
  }
  return code;
}
