#pragma once

// Reads the facts fixtures under tests/data/facts/.

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace gpuforge::facts::testing {

inline std::string FixturePath(std::string_view name) {
  return std::string(GPUFORGE_TEST_DATA_DIR) + "/facts/" + std::string(name);
}

inline std::string ReadFixture(std::string_view name) {
  std::ifstream in(FixturePath(name), std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline constexpr std::string_view kH200 = "nvidia-h200-1gpu/";

}  // namespace gpuforge::facts::testing
