#pragma once

// Drift: where a node's gathered facts differ from what the inventory says, or from the other
// nodes of its profile. Each finding carries a stable code (reports and CI key on it, never on
// the message), the entity it is about, and the expected and actual values it was judged on.
// docs/facts.md lists every code with its threshold and source.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/facts/facts.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::facts {

struct Drift {
  std::string code;      // "ib.link_width"
  std::string node;      // "gpu01"
  std::string subject;   // "gpu3", "mlx5_0 port 1", "0000:17:00.0", "driver"
  std::string expected;  // "4X"
  std::string actual;    // "2X"
  std::string message;   // one sentence for people
};

// One entry of the code catalogue.
struct DriftCode {
  std::string_view code;
  std::string_view meaning;
  std::string_view next_step;
  std::string_view source;  // guide section or anchors.md line the rule comes from
  // The node has more than the inventory says (CPUs, memory): `validate` WARNs instead of
  // failing it, since nothing refuses a node for that (slurmd drains only on less: Slurm
  // src/slurmctld/node_mgr.c, validate_node_specs). `facts --check` still reports it.
  bool only_warns = false;
};
std::span<const DriftCode> DriftCodes();

// What the lead's SSH layer got from one node: its facts, or why there are none.
struct Gathered {
  std::string node;
  Result<NodeFacts> facts;
};

// Compares every gathered node with its profile in the cluster, and the nodes of one profile
// with each other. Order: nodes as in `gathered`, then by code, then subjects in the order the
// node reports them (GPU index, NIC order of the profile, bus id).
std::vector<Drift> FindDrift(const model::Cluster& cluster, std::span<const Gathered> gathered);

}  // namespace gpuforge::facts
