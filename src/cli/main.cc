#include "cli/app.h"
#include "gpuforge/remote/session.h"

int main(int argc, char** argv) {
  // A reader that dies (a pipe into `head`, a full disk under a local upload) must not kill a
  // run mid-apply with SIGPIPE (issue #12, item 8): every write error is a value instead, and
  // cli::Run reports output it could not write.
  gpuforge::remote::IgnoreSigpipe();
  return gpuforge::cli::Run(argc, argv);
}
