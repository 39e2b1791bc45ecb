#pragma once

// Small text tools shared by the facts parsers. Everything works on views of hostile input:
// no allocation proportional to garbage beyond the input itself, no exceptions, no UB.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/base/text.h"

namespace gpuforge::facts::text {

// Lines without their terminators; "\r\n" and "\n" both end a line. A final line without a
// newline is kept; a trailing newline does not add an empty line.
std::vector<std::string_view> Lines(std::string_view s);

std::string_view Trim(std::string_view s);

// Split on one character; empty fields are kept.
std::vector<std::string_view> Split(std::string_view s, char sep);

// Removes ANSI CSI escapes ("\x1b[4m") and other control characters except tab and newline.
std::string StripAnsi(std::string_view s);

// Hostile text in error messages, quoted and bounded (base/text.h).
using gpuforge::text::Quote;

std::optional<std::int64_t> ToInt(std::string_view s);    // whole string, decimal
std::optional<std::uint64_t> ToUint(std::string_view s);  // whole string, decimal
std::optional<std::uint64_t> ToHex(std::string_view s);   // whole string, optional 0x
std::optional<double> ToDouble(std::string_view s);       // whole string, finite

// An int in [lo, hi], or nullopt.
std::optional<int> ToIntIn(std::string_view s, int lo, int hi);

// Cells that mean "no value": N/A, [N/A], [Not Supported], Not Supported, [Unknown Error],
// [Insufficient Permissions], [GPU requires reset], Unknown, "".
bool IsNotAvailable(std::string_view cell);

// A bracketed cell that is an NVML error rather than "no value": "[GPU requires reset]",
// "[Unknown Error]", "[GPU is lost]", any bracketed text but [N/A], [Not Supported],
// [Insufficient Permissions] and [Requested functionality has been deprecated].
bool IsErrorCell(std::string_view cell);

// Refuses input over the size cap or with NUL bytes (binary garbage), saying which.
Status CheckInput(std::string_view s, std::size_t max_bytes);

// The first "key" token and the rest of a line, split at the first run of spaces.
std::pair<std::string_view, std::string_view> HeadTail(std::string_view line);

// "line N: <message>"
Error LineError(std::size_t line_index, std::string_view message);

// Printable ASCII, no spaces, 1..max chars: names coming from the node (devices, modules).
bool IsToken(std::string_view s, std::size_t max = 64);

}  // namespace gpuforge::facts::text
