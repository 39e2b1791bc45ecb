#include "gpuforge_test_paths.h"

namespace gpuforge::testing {
const char* SourceDir() { return GPUFORGE_TEST_PATH_SOURCE; }
const char* TestDataDir() { return GPUFORGE_TEST_PATH_DATA; }
const char* Binary() { return GPUFORGE_TEST_PATH_BINARY; }
}  // namespace gpuforge::testing
