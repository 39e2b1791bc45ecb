#include "cli/app.h"
#include "gpuforge/remote/session.h"

int main(int argc, char** argv) {
  gpuforge::remote::IgnoreSigpipe();
  return gpuforge::cli::Run(argc, argv);
}
