// Where the tests find the source tree, their data and the built binary. Force-included into
// every test file (tests/CMakeLists.txt), so the paths are compiled into one file
// (gpuforge_test_paths.cc) and not into every object's command line: the other objects are the
// same in every checkout, which lets a compiler cache share them between work trees.
#pragma once

namespace gpuforge::testing {
const char* SourceDir();
const char* TestDataDir();
const char* Binary();
}  // namespace gpuforge::testing

#define GPUFORGE_SOURCE_DIR (::gpuforge::testing::SourceDir())
#define GPUFORGE_TEST_DATA_DIR (::gpuforge::testing::TestDataDir())
#define GPUFORGE_BINARY (::gpuforge::testing::Binary())
