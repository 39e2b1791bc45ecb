// The whole output of the gather script from a node: the section markers, then every section's
// parser. NodeFacts that come back list every section of the script once, and show; errors
// name the node.

#include <set>
#include <string>

#include "facts_check.h"
#include "gpuforge/facts/gather.h"

namespace facts = gpuforge::facts;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto f = facts::ParseGather("gpu01", gpuforge::fuzz::AsText(data, size));
  if (!f.ok()) {
    FUZZ_CHECK(f.error().message.starts_with("node gpu01"), "an error without the node: %s",
               f.error().message.c_str());
    return 0;
  }
  FUZZ_CHECK(f->node == "gpu01", "facts for node '%s'", f->node.c_str());
  std::set<std::string> seen;
  for (const facts::Section& s : f->sections) {
    FUZZ_CHECK(seen.insert(s.name).second, "section %s twice", s.name.c_str());
    FUZZ_CHECK(f->FindSection(s.name) == &s, "FindSection(%s) finds another section", s.name.c_str());
  }
  for (const facts::SectionSpec& spec : facts::GatherSections()) {
    FUZZ_CHECK(f->FindSection(spec.name) != nullptr, "no section %s", std::string(spec.name).c_str());
  }
  gpuforge::fuzz::CheckShowable(*f);
  (void)f->HasNvidiaDriver();
  (void)f->DriverVersion();
  (void)f->PciGpuCount();
  return 0;
}
