#pragma once

// Builds model::Cluster values in code for the estimate tests. The default is guide 000's
// example ("Cooling and Power", "Networking"): 4 nodes of 8 x H200 at 700 W plus 2.4 kW of
// everything else (8 kW per node, 32 kW in all), each with 8 NDR400 compute NICs and one
// 100GbE storage NIC, two air-cooled racks of two nodes under a 20 kW limit, power at
// 0.12 per kWh, a 70B bf16 Adam workload, local NVMe + BeeGFS + object storage. Each test
// changes what it is about.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "gpuforge/estimate/estimate.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::estimate::testing {

inline constexpr double kGbps = 1e9 / 8;  // bytes/s in one Gb/s

inline model::GpuSpec Gpus(std::string model, std::string generation, int count, double tdp_w,
                           double nvlink_bytes_per_s) {
  model::GpuSpec g;
  g.model = std::move(model);
  g.generation = std::move(generation);
  g.count = count;
  g.tdp_w = tdp_w;
  g.nvlink_bytes_per_s = nvlink_bytes_per_s;
  g.nvswitch = nvlink_bytes_per_s > 0;
  return g;
}

inline model::NicSpec Nic(std::string name, double rate, std::string network) {
  model::NicSpec n;
  n.name = std::move(name);
  n.kind = network == "compute" ? model::NetKind::kInfiniband : model::NetKind::kEthernet;
  n.rate_bytes_per_s = rate;
  n.network = std::move(network);
  return n;
}

// 8 x H200, 2.4 kW other, `compute_nics` NDR400 NICs on "compute" and eth0 on "storage".
inline model::Profile H200Profile(std::string name = "hgx-h200", int compute_nics = 8) {
  model::Profile p;
  p.name = std::move(name);
  p.gpus.push_back(Gpus("H200", "hopper", 8, 700, 900e9));
  p.other_power_w = 2400;
  for (int i = 0; i < compute_nics; ++i) {
    p.nics.push_back(Nic(fmt::format("mlx5_{}", i), 400 * kGbps, "compute"));
  }
  p.nics.push_back(Nic("eth0", 100 * kGbps, "storage"));
  return p;
}

inline model::Node MakeNode(std::string name, std::string profile, std::string rack) {
  model::Node n;
  n.name = name;
  n.address = std::move(name);
  n.profile = std::move(profile);
  n.rack = std::move(rack);
  return n;
}

inline model::StorageTier Tier(std::string name, model::StorageRole role, model::StorageScope scope,
                               double read, double write, double capacity) {
  model::StorageTier t;
  t.name = std::move(name);
  t.role = role;
  t.scope = scope;
  t.kind = scope == model::StorageScope::kNode ? model::StorageKind::kLocalNvme
                                               : model::StorageKind::kBeegfs;
  t.read_bytes_per_s = read;
  t.write_bytes_per_s = write;
  t.capacity_bytes = capacity;
  return t;
}

inline model::Cluster GuideCluster(int nodes = 4) {
  using model::StorageRole;
  using model::StorageScope;
  model::Cluster c;
  c.name = "guide-000";
  c.site.rack_power_limit_w = 20e3;
  c.site.cooling = model::Cooling::kAir;
  c.site.power_price_per_kwh = 0.12;
  c.site.pue = 1.0;
  c.profiles.push_back(H200Profile());
  c.networks.push_back({"compute", model::NetRole::kCompute, model::NetKind::kInfiniband,
                        400 * kGbps, model::Topology::kFatTree, {}, std::nullopt});
  c.networks.push_back({"storage", model::NetRole::kStorage, model::NetKind::kEthernet,
                        100 * kGbps, model::Topology::kL2, {}, std::nullopt});
  for (int r = 0; r < (nodes + 1) / 2; ++r) {
    c.racks.push_back({fmt::format("r{}", r + 1), std::nullopt, std::nullopt, {}});
  }
  for (int i = 0; i < nodes; ++i) {
    c.nodes.push_back(
        MakeNode(fmt::format("gpu{:03}", i + 1), "hgx-h200", fmt::format("r{}", i / 2 + 1)));
  }
  c.workload.present = true;
  c.workload.params = 70e9;
  c.workload.precision = "bf16";
  c.workload.optimizer = "adam";
  c.storage.dataset_bytes = 20e12;
  c.storage.tiers.push_back(
      Tier("nvme", StorageRole::kHot, StorageScope::kNode, 25e9, 5e9, 15.36e12));
  c.storage.tiers.push_back(
      Tier("beegfs", StorageRole::kWarm, StorageScope::kCluster, 60e9, 40e9, 128e12));
  c.storage.tiers.back().checkpoints = true;
  c.storage.tiers.push_back(
      Tier("s3", StorageRole::kCold, StorageScope::kCluster, 5e9, 5e9, 1e15));
  return c;
}

// The figure with `key`; a test failure and an empty figure when there is none, so a test
// reads on without dereferencing null.
inline Figure FigureOf(const Estimates& e, std::string_view key) {
  const Figure* f = e.Find(key);
  if (f == nullptr) {
    ADD_FAILURE() << "no figure " << key;
    return Figure{};
  }
  return *f;
}

inline Figure EstimateOf(const model::Cluster& c, std::string_view key) {
  return FigureOf(Estimate(c), key);
}

}  // namespace gpuforge::estimate::testing
