#include "cli/app.h"

int main(int argc, char** argv) { return gpuforge::cli::Run(argc, argv); }
