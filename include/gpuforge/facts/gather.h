#pragma once

// The node side of `gpuforge facts`: one POSIX sh script that prints every fact source in
// marked sections, and the parser that turns its output into NodeFacts.
//
// Output format (format=1):
//   @@gpuforge-facts begin format=1@@
//   @@gpuforge-facts section=<name> rc=<exit status>|absent@@
//   <the section's stdout>
//   ...
//   @@gpuforge-facts end@@
// Anything before the begin marker (a login banner) and after the end marker is ignored.

#include <span>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "gpuforge/facts/facts.h"

namespace gpuforge::facts {

// The fields the script asks nvidia-smi --query-gpu for (ParseQueryGpuCsv finds them by name).
inline constexpr std::string_view kQueryGpuFields =
    "index,name,uuid,pci.bus_id,driver_version,vbios_version,memory.total,power.limit,"
    "power.draw,temperature.gpu,clocks_event_reasons.active,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,pcie.link.gen.current,pcie.link.gen.max,"
    "pcie.link.width.current,pcie.link.width.max,clocks.max.sm,persistence_mode";

// One section the script prints: its name in the marker, the command it runs (for messages),
// and whether a failure of it makes the whole node's facts an error.
struct SectionSpec {
  std::string_view name;
  std::string_view command;
  bool required;
};
std::span<const SectionSpec> GatherSections();

// The script. Run it as `sh -s` (script on stdin) or `sh -c '<script>'` as any user; it needs
// no root, no bash and no tool beyond sh, cat, grep, sed and head. Tools it finds missing are
// reported absent. Every command runs under `timeout 120` where timeout(1) exists.
std::string GatherScript();

// Splits the script's output and parses every section. Errors name the node and the command:
// "node gpu01: nvidia-smi --query-gpu=... --format=csv: line 2: expected 19 fields, got 4".
// A failed or absent optional tool is recorded in NodeFacts::sections, not an error.
Result<NodeFacts> ParseGather(std::string_view node, std::string_view output);

inline constexpr std::size_t kMaxGatherBytes = 64u << 20;  // whole output, 64 MiB

}  // namespace gpuforge::facts
