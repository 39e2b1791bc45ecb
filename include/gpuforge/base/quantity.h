#pragma once

#include <string>
#include <string_view>

#include "gpuforge/base/result.h"

namespace gpuforge::quantity {

// Physical quantities in the inventory are written with their unit ("400Gb/s", "141GB",
// "700W", "100us"), so a reader never has to guess whether a bare 400 meant bits or bytes.
// Values are stored in base units: bytes/s, bytes, watts, seconds, plain count.
enum class Dimension {
  kBandwidth,  // b/s, bps, B/s with k/K M G T P prefixes (decimal): "400Gb/s", "50GB/s"
  kSize,       // B with decimal (KB MB GB TB PB) or binary (KiB MiB GiB TiB PiB) prefixes
  kPower,      // W, kW, MW
  kDuration,   // ns, us, ms, s, min, h, d
  kCount,      // plain number with optional K M B T suffix (thousand, million, billion...)
};

std::string_view DimensionName(Dimension d);  // "bandwidth", "size", ...
std::string_view DimensionExample(Dimension d);  // "400Gb/s", "141GB", ...

// Parses "400Gb/s" etc. A number without a unit is an error for every dimension except
// kCount, and so is a unit of another dimension. Negative values are refused.
Result<double> Parse(std::string_view text, Dimension d);

// A threshold override written in an inventory, for a threshold kept in `unit` ("bytes/s",
// "GB/s", "s", "ms", "us", "bytes", "W"; anything else is a count or ratio: "GPUs", "ratio",
// "of line rate"). A plain number is taken in `unit` itself; a quantity must be of `unit`'s
// dimension and is converted to it ("2GB/s" for a GB/s threshold is 2, "10ms" for an ms
// threshold is 10). "400GB" for a bytes/s threshold, or "2GB" for a ratio, is an error that
// says what was written and what the threshold wants (issue #28 item 1).
Result<double> ParseInUnit(std::string_view text, std::string_view unit);

// Human formatting with a sensible prefix, for reports: "400 Gb/s", "50 GB/s", "1.5 TB".
std::string FormatBandwidthBits(double bytes_per_s);   // in b/s (networks)
std::string FormatBandwidthBytes(double bytes_per_s);  // in B/s (memory, storage, NVLink)
std::string FormatSize(double bytes);
std::string FormatPower(double watts);
std::string FormatDuration(double seconds);
std::string FormatCount(double n);  // 70B, 1.3T, 512

}  // namespace gpuforge::quantity
