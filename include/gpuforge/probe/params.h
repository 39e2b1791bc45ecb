#pragma once

// A probe's parameters: one row each, what `gpuforge agent list` shows (name, default, doc)
// and what a read checks (kind, range). Every probe reads its parameters through the readers
// below, so a bad value is refused the same way, in the same words, whichever probe it is.

#include <cstdint>
#include <string>

#include "gpuforge/base/result.h"

namespace gpuforge::probe {

struct Context;

enum class ParamKind {
  kText,       // the safe alphabet (ResolveParams); the probe checks what it means
  kWhole,      // a whole number in [min, max]
  kBytes,      // a byte size with its unit ("8MiB", "4096B"), whole, in [min, max]
  kByteCount,  // kBytes, or a plain count of bytes ("8"), as nccl-tests takes them
  kWords,      // kBytes, a multiple of 4 (buffers of 32-bit words)
  kSeconds,    // a number of seconds above 0 and at most max
};

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kText;
  std::string default_value;
  std::int64_t min = 0;
  std::int64_t max = 0;
  std::string doc;  // one line for `agent list`

  // The same parameter with a range that depends on another one (a size of at least `block`).
  ParamSpec Within(std::int64_t lo, std::int64_t hi) const;
  // A row several probes share, with the doc one of them gives it.
  ParamSpec Documented(std::string text) const;
};

// The readers. Each takes the value from ctx.params, checks it against the row and names the
// parameter, the range and the value it got when it refuses:
//   parameter iters must be a whole number from 1 to 10000, not '0'
gpuforge::Result<std::int64_t> Whole(const Context& ctx, const ParamSpec& spec);          // kWhole
gpuforge::Result<std::uint64_t> Bytes(const Context& ctx, const ParamSpec& spec);         // kBytes, kByteCount, kWords
gpuforge::Result<double> Seconds(const Context& ctx, const ParamSpec& spec);              // kSeconds
gpuforge::Result<std::string> Text(const Context& ctx, const ParamSpec& spec);            // any kind, unchecked

}  // namespace gpuforge::probe
