// The gather script's other text sections from a node, every input to each parser:
// os-release, uname -r, lscpu, /proc/meminfo, /proc/driver/nvidia/version, the version lines,
// /proc/modules, the service lines and ulimit -l. What parses shows.

#include <algorithm>

#include "facts_check.h"
#include "gpuforge/facts/parse.h"

namespace facts = gpuforge::facts;
using gpuforge::fuzz::CheckError;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  facts::NodeFacts f;
  if (auto v = facts::ParseOsRelease(text); CheckError(v), v.ok()) {
    FUZZ_CHECK(!v->id.empty(), "os-release without an ID");
    f.os = *v;
  }
  if (auto v = facts::ParseUname(text); CheckError(v), v.ok()) f.kernel = *v;
  if (auto v = facts::ParseLscpu(text); CheckError(v), v.ok()) f.cpu = *v;
  if (auto v = facts::ParseMeminfo(text); CheckError(v), v.ok()) f.memory_bytes = *v;
  if (auto v = facts::ParseDriverVersion(text); CheckError(v), v.ok()) {
    FUZZ_CHECK(!v->version.empty(), "a driver without a version");
    f.driver = *v;
  }
  if (auto v = facts::ParseVersions(text); CheckError(v), v.ok()) f.versions = *v;
  if (auto v = facts::ParseModules(text); CheckError(v), v.ok()) {
    FUZZ_CHECK(std::is_sorted(v->begin(), v->end()), "modules not sorted");
    f.modules = *v;
    for (const std::string& m : *v) FUZZ_CHECK(f.HasModule(m), "HasModule(%s) is false", m.c_str());
  }
  if (auto v = facts::ParseServices(text); CheckError(v), v.ok()) {
    f.services = *v;
    for (const facts::Service& s : *v) FUZZ_CHECK(f.FindService(s.name) != nullptr, "FindService(%s)", s.name.c_str());
  }
  if (auto v = facts::ParseMemlock(text); CheckError(v), v.ok()) f.memlock = *v;
  (void)f.DriverVersion();
  gpuforge::fuzz::CheckShowable(f);
  return 0;
}
