#pragma once

// Capacity estimates: the numbers behind a cluster design (power, cost, cooling, all-reduce
// time, storage, checkpoints, build vs rent), each with the formula that produced it.
// docs/estimates.md lists every figure key, its formula, its inputs and its source.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::estimate {

// One computed number. `value` is absent when the inventory lacks an input (`missing` then
// says which) or when the figure has no meaning for this cluster (`note` then says why, e.g.
// no inter-node all-reduce with one node). A present value is always finite.
struct Figure {
  std::string key;    // stable: "power.cluster_w", "power.rack_w.<rack>", "allreduce.ring_inter_s"
  std::string label;  // human: "Cluster power at full load"
  std::optional<double> value;
  std::string unit;     // "W", "kWh", "s", "bytes", "bytes/s", "ratio", "months", "currency",
                        // "currency/month" (the inventory's currency, unnamed)
  std::string display;  // value formatted for people ("32 kW", "2.8 s"); "unknown" when inputs
                        // are missing, "n/a" when the figure does not apply
  std::string formula;  // the arithmetic with this inventory's numbers substituted
  std::string note;     // e.g. where the guide's own figure differs and why
  std::string verdict;  // "" or "ok" / "over limit" / "liquid cooling needed" / "short" /
                        // "below 5x" / "over 2 min"; only on figures with a value
  std::string missing;  // when value is absent: the inventory keys that would provide it
};

struct Section {
  std::string key;    // "power", "energy", "cooling", "allreduce", "storage", "checkpoint", "cost"
  std::string title;  // "Power"
  std::vector<Figure> figures;
};

struct Estimates {
  std::vector<Section> sections;
  // The figure with this exact key; nullptr when there is none.
  const Figure* Find(std::string_view key) const;
};

// Every section, in the order above. Pure: reads the model only, never fails.
Estimates Estimate(const model::Cluster& cluster);

}  // namespace gpuforge::estimate
