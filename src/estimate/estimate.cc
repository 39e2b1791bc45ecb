#include "gpuforge/estimate/estimate.h"

#include "estimate/sections.h"

namespace gpuforge::estimate {

namespace {

using SectionFn = Section (*)(const model::Cluster&, const Estimates&);

// Why this order: each builder may read the figures of those above it (energy needs power,
// cooling needs the rack loads, cost needs the energy bill).
constexpr SectionFn kSections[] = {
    internal::PowerSection,   internal::EnergySection,     internal::CoolingSection,
    internal::AllreduceSection, internal::StorageSection, internal::CheckpointSection,
    internal::CostSection,
};

}  // namespace

const Figure* Estimates::Find(std::string_view key) const {
  for (const Section& s : sections) {
    for (const Figure& f : s.figures) {
      if (f.key == key) return &f;
    }
  }
  return nullptr;
}

Estimates Estimate(const model::Cluster& cluster) {
  Estimates out;
  for (SectionFn build : kSections) out.sections.push_back(build(cluster, out));
  return out;
}

}  // namespace gpuforge::estimate
