#pragma once

// The one gate between gpuforge's text output and a terminal (#12 item 6): node and server
// text (SSH banners and disconnect text, GPU names, handler stderr) can hold escape sequences
// that retitle the window, clear the screen or rewrite what was printed.

#include <span>
#include <string>
#include <string_view>

namespace gpuforge::text {

// Kept: '\n', '\t', printable ASCII, well-formed UTF-8 outside C0/C1 controls, and exactly the
// escape sequences in `allowed` (gpuforge's own colours). Every other byte (ESC, '\r', BEL,
// U+0080..U+009F, broken UTF-8) becomes '?'.
std::string ForTerminal(std::string_view s, std::span<const std::string_view> allowed = {});

}  // namespace gpuforge::text
