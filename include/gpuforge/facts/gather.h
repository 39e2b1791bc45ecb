#pragma once

// The node side of `gpuforge facts`: one POSIX sh script that prints every fact source in
// marked sections, and the parser that turns its output into NodeFacts.
//
// Output format (format=1):
//   @@gpuforge-facts begin format=1@@
//   @@gpuforge-facts section=<name> rc=<exit status>|absent|toolarge[ note=<token>]@@
//   <the section's stdout; for rc=toolarge, its size in bytes instead>
//   ...
//   @@gpuforge-facts end@@
// Anything before the begin marker (a login banner) and after the end marker is ignored.
// The script never prints more than a section's max_bytes of one section's output: it prints
// rc=toolarge and the size instead, so a node's whole output is bounded by kMaxGatherBytes.

#include <cstddef>
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
    "pcie.link.width.current,pcie.link.width.max,clocks.max.sm,persistence_mode,pci.device_id";

// The same query with the names drivers before R535 know: nvidia-smi rejects a whole query for
// one field it does not know ('Field "clocks_event_reasons.active" is not a valid field to
// query.'), and the script then asks again with these (note=pre-r535-fields on the section).
inline constexpr std::string_view kQueryGpuFieldsPreR535 =
    "index,name,uuid,pci.bus_id,driver_version,vbios_version,memory.total,power.limit,"
    "power.draw,temperature.gpu,clocks_throttle_reasons.active,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,pcie.link.gen.current,pcie.link.gen.max,"
    "pcie.link.width.current,pcie.link.width.max,clocks.max.sm,persistence_mode,pci.device_id";

// One section the script prints: its name in the marker, the command it runs (for messages),
// whether a failure of it makes the whole node's facts an error, and the most output of it the
// script sends (more reads as Outcome::kTooLarge). A failed, unparsable or oversized optional
// section is recorded in NodeFacts::sections and the other sections still count.
struct SectionSpec {
  std::string_view name;
  std::string_view command;
  bool required;
  std::size_t max_bytes;
};
std::span<const SectionSpec> GatherSections();

// The script. Run it as `sh -s` (script on stdin) or `sh -c '<script>'` as any user; it needs
// no root, no bash and no tool beyond sh, cat, grep, sed and head. Tools it finds missing are
// reported absent. Every command runs under `timeout 120` where timeout(1) exists.
std::string GatherScript();

// Splits the script's output and parses every section. Errors name the node and the command:
// "node gpu01: nvidia-smi --query-gpu=... --format=csv: line 2: expected 19 fields, got 4".
// A failed, absent, unparsable or oversized optional section is recorded in
// NodeFacts::sections (with the parser's message), not an error.
Result<NodeFacts> ParseGather(std::string_view node, std::string_view output);

// Whole output of one node: the sum of the sections' max_bytes (gather.cc asserts it fits)
// plus markers and a banner. This, not a per-node guess, is what the SSH layer buffers.
inline constexpr std::size_t kMaxGatherBytes = 16u << 20;

}  // namespace gpuforge::facts
