#pragma once

// SHA-256 digests as sha256sum prints them (lowercase hex), for comparing file content on a
// node with what gpuforge would write, and for naming the pushed agent by its content.

#include <string>
#include <string_view>

namespace gpuforge::base {

std::string Sha256Hex(std::string_view data);

}  // namespace gpuforge::base
