#pragma once

// Capacity estimates: the numbers behind a cluster design (power, cost, cooling, all-reduce
// time, storage, checkpoints, build vs rent), each with the formula that produced it.

#include <optional>
#include <string>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::estimate {

// One computed number. `value` is absent when the inventory lacks an input; `missing` then
// says which.
struct Figure {
  std::string key;    // stable: "power.cluster_w", "allreduce.ring_inter_s", ...
  std::string label;  // human: "Cluster power at full load"
  std::optional<double> value;
  std::string unit;     // "W", "kW", "s", "bytes", "bytes/s", "currency/month", "ratio", "months"
  std::string display;  // value formatted for people ("32 kW", "2.8 s")
  std::string formula;  // the arithmetic with this inventory's numbers substituted
  std::string note;     // e.g. where the guide's own figure differs and why
  std::string verdict;  // "" or "ok" / "over" / "liquid cooling needed" ...
  std::string missing;  // when value is absent: the inventory keys that would provide it
};

struct Section {
  std::string key;    // "power", "energy", "cooling", "allreduce", "storage", "checkpoint", "cost"
  std::string title;  // "Power"
  std::vector<Figure> figures;
};

struct Estimates {
  std::vector<Section> sections;
  const Figure* Find(std::string_view key) const;
};

Estimates Estimate(const model::Cluster& cluster);

}  // namespace gpuforge::estimate
