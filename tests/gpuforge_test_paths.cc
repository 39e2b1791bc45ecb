#include "gpuforge_test_paths.h"

namespace gpuforge::testing {
const char* SourceDir() { return GPUFORGE_TEST_PATH_SOURCE; }
const char* TestDataDir() { return GPUFORGE_TEST_PATH_DATA; }
const char* Binary() { return GPUFORGE_TEST_PATH_BINARY; }
const char* StandinNvmlDir() { return GPUFORGE_TEST_PATH_STANDIN_NVML; }
}  // namespace gpuforge::testing
