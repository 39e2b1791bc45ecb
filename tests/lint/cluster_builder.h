#pragma once

// Builds model::Cluster values in code for the lint tests: a clean, consistent cluster
// (nodes, NICs, switches and cables agree with each other) that each test then breaks in
// exactly one place. The default is 4 x 8 H200 on a rail-optimized NDR400 InfiniBand fabric
// with a separate storage network, local NVMe + Lustre + object storage, Slurm, and a 70B
// workload; lint_test.cc pins that it produces no errors and no warnings.

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/lint/lint.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::lint::fixture {

inline constexpr double kGbps = 1e9 / 8;  // bytes/s in one Gb/s
inline constexpr std::string_view kFile = "cluster.yaml";

struct FixtureOptions {
  int nodes = 4;
  std::string gpu_model = "H200";
  std::string generation = "hopper";
  int gpus_per_node = 8;
  double gpu_tdp_w = 700;
  double nvlink_bytes_per_s = 900e9;
  model::NetKind net_kind = model::NetKind::kInfiniband;
  int nics_per_node = 4;  // compute NICs, one rail each
  double nic_rate = 400 * kGbps;
};

inline SourcePos At(int line) { return SourcePos{std::string(kFile), line, 3}; }

inline model::Cluster CleanCluster(const FixtureOptions& o = {}) {
  using namespace model;
  Cluster c;
  c.name = "fixture";
  c.source_file = std::string(kFile);
  // Air-cooled racks of two 8 kW nodes (16 kW), under both the 20 kW air limit and the
  // racks' own 20 kW budget.
  c.site.rack_power_limit_w = 20000;
  c.site.cooling = Cooling::kAir;
  c.site.where = At(2);

  const int racks = (o.nodes + 1) / 2;
  for (int r = 0; r < racks; ++r) {
    c.racks.push_back(Rack{fmt::format("r{:02}", r + 1), std::nullopt, std::nullopt, At(10 + r)});
  }

  Profile gpu;
  gpu.name = "hgx";
  GpuSpec g;
  g.model = o.gpu_model;
  g.generation = o.generation;
  g.count = o.gpus_per_node;
  g.memory_bytes = 141e9;
  g.tdp_w = o.gpu_tdp_w;
  g.nvswitch = o.nvlink_bytes_per_s > 0;
  g.nvlink_bytes_per_s = o.nvlink_bytes_per_s;
  for (int i = 0; i < o.gpus_per_node; ++i) g.numa_nodes.push_back(i * 2 / o.gpus_per_node);
  g.where = At(21);
  gpu.gpus.push_back(g);
  gpu.cpu = CpuSpec{"AMD EPYC 9654", 2, 96, 2, At(22)};
  gpu.memory_bytes = 2e12;
  gpu.nvme = NvmeSpec{4, 3.84e12, 7e9, 3e9};
  for (int i = 0; i < o.nics_per_node; ++i) {
    NicSpec nic;
    nic.name = fmt::format("mlx5_{}", i);
    nic.kind = o.net_kind;
    nic.rate_bytes_per_s = o.nic_rate;
    nic.numa_node = o.nics_per_node > 1 ? i * 2 / o.nics_per_node : 0;
    nic.rail = i;
    nic.network = "compute";
    nic.where = At(23 + i);
    gpu.nics.push_back(nic);
  }
  NicSpec eth;
  eth.name = "eth0";
  eth.kind = NetKind::kEthernet;
  eth.rate_bytes_per_s = 100 * kGbps;
  eth.numa_node = 0;
  eth.network = "storage";
  eth.where = At(29);
  gpu.nics.push_back(eth);
  gpu.other_power_w = 8000 - o.gpus_per_node * o.gpu_tdp_w;
  if (gpu.other_power_w < 1000) gpu.other_power_w = 1000;
  gpu.where = At(20);
  c.profiles.push_back(gpu);

  Profile head;
  head.name = "head";
  head.cpu = CpuSpec{"AMD EPYC 9124", 1, 16, 2, At(31)};
  head.memory_bytes = 256e9;
  NicSpec head_eth = eth;
  head_eth.where = At(32);
  head.nics.push_back(head_eth);
  head.other_power_w = 800;
  head.where = At(30);
  c.profiles.push_back(head);

  for (int i = 0; i < o.nodes; ++i) {
    Node n;
    n.name = fmt::format("gpu{:03}", i + 1);
    n.address = fmt::format("10.0.{}.{}", i / 200, 11 + i % 200);
    n.rack = fmt::format("r{:02}", i / 2 + 1);
    n.profile = "hgx";
    n.role = NodeRole::kCompute;
    n.where = At(40);
    c.nodes.push_back(n);
  }
  Node h;
  h.name = "head01";
  h.address = "10.0.9.1";
  h.profile = "head";
  h.role = NodeRole::kController;
  h.where = At(41);
  c.nodes.push_back(h);

  c.networks.push_back(Network{"compute", NetRole::kCompute, o.net_kind, o.nic_rate,
                               Topology::kRailOptimized, At(50), std::nullopt});
  c.networks.push_back(Network{"storage", NetRole::kStorage, NetKind::kEthernet, 100 * kGbps,
                               Topology::kSpineLeaf, At(51), std::nullopt});

  // One leaf per rail, every leaf with as many uplinks to the spine as nodes below it (1:1).
  const int leaf_ports = std::max(64, 2 * o.nodes);
  for (int r = 0; r < o.nics_per_node; ++r) {
    c.switches.push_back(Switch{fmt::format("leaf{}", r + 1), SwitchTier::kLeaf, "compute",
                                "QM9700", leaf_ports, o.nic_rate, {}, "", At(60 + r)});
  }
  c.switches.push_back(Switch{"spine1", SwitchTier::kSpine, "compute", "QM9700",
                              std::max(64, o.nics_per_node * o.nodes), o.nic_rate, {}, "", At(59)});
  auto nic_end = [](std::string node, std::string nic) {
    Endpoint e;
    e.kind = Endpoint::Kind::kNic;
    e.device = std::move(node);
    e.nic = std::move(nic);
    return e;
  };
  auto port_end = [](std::string sw, int port) {
    Endpoint e;
    e.kind = Endpoint::Kind::kSwitchPort;
    e.device = std::move(sw);
    e.port = port;
    return e;
  };
  for (int r = 0; r < o.nics_per_node; ++r) {
    std::string leaf = fmt::format("leaf{}", r + 1);
    for (int i = 0; i < o.nodes; ++i) {
      c.links.push_back(Link{nic_end(fmt::format("gpu{:03}", i + 1), fmt::format("mlx5_{}", r)),
                             port_end(leaf, i + 1), o.nic_rate, At(70)});
      c.links.push_back(Link{port_end(leaf, o.nodes + i + 1),
                             port_end("spine1", r * o.nodes + i + 1), o.nic_rate, At(71)});
    }
  }

  c.storage.dataset_bytes = 20e12;
  c.storage.where = At(80);
  {
    StorageTier t;
    t.name = "nvme";
    t.kind = StorageKind::kLocalNvme;
    t.role = StorageRole::kHot;
    t.scope = StorageScope::kNode;
    t.read_bytes_per_s = 28e9;
    t.write_bytes_per_s = 12e9;
    t.latency_s = 100e-6;
    t.capacity_bytes = 15.36e12;
    t.mount = "/scratch";
    t.where = At(81);
    c.storage.tiers.push_back(t);
    t = StorageTier{};
    t.name = "lustre";
    t.kind = StorageKind::kLustre;
    t.role = StorageRole::kWarm;
    t.scope = StorageScope::kCluster;
    t.read_bytes_per_s = 100e9;
    t.write_bytes_per_s = 60e9;
    t.latency_s = 200e-6;
    t.capacity_bytes = 2e15;
    t.network = "storage";
    t.mount = "/lustre";
    t.checkpoints = true;
    t.where = At(82);
    c.storage.tiers.push_back(t);
    t = StorageTier{};
    t.name = "s3";
    t.kind = StorageKind::kObject;
    t.role = StorageRole::kCold;
    t.scope = StorageScope::kCluster;
    t.read_bytes_per_s = 5e9;
    t.latency_s = 50e-3;
    t.capacity_bytes = 10e15;
    t.network = "storage";
    t.where = At(83);
    c.storage.tiers.push_back(t);
  }

  Software& s = c.software;
  s.os_distro = "ubuntu";
  s.os_version = "24.04";
  s.driver_branch = "560";
  s.driver_version = "560.35.03";
  s.cuda_version = "12.6";
  s.nccl_version = "2.21.5";
  std::string hca = "=";
  for (int i = 0; i < o.nics_per_node; ++i) hca += fmt::format("{}mlx5_{}:1", i ? "," : "", i);
  if (o.net_kind != NetKind::kEthernet) {
    s.nccl_env.push_back({"NCCL_IB_HCA", hca});
    s.nccl_env.push_back({"NCCL_IB_TIMEOUT", "22"});
    s.nccl_env.push_back({"NCCL_IB_RETRY_CNT", "7"});
  }
  if (o.net_kind == NetKind::kRoce) s.nccl_env.push_back({"NCCL_IB_GID_INDEX", "3"});
  s.nccl_topo_file = "/etc/nccl-topology.xml";
  s.scheduler.kind = SchedulerKind::kSlurm;
  s.scheduler.controller = "head01";
  s.scheduler.where = At(101);
  s.where = At(100);
  s.nccl_where = At(110);

  c.workload.present = true;
  c.workload.params = 70e9;
  c.workload.parallelism = Parallelism{std::max(1, o.nodes * o.gpus_per_node / 8), 8, 1};
  if (o.gpus_per_node < 8) c.workload.parallelism = Parallelism{o.nodes * o.gpus_per_node, 1, 1};
  c.workload.where = At(120);
  return c;
}

inline model::Profile& GpuProfile(model::Cluster& c) { return c.profiles.front(); }

inline void SetEnv(model::Cluster& c, const std::string& key, const std::string& value) {
  auto& env = c.software.nccl_env;
  auto it = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != env.end()) {
    it->second = value;
  } else {
    env.push_back({key, value});
  }
}

inline void UnsetEnv(model::Cluster& c, const std::string& key) {
  auto& env = c.software.nccl_env;
  env.erase(std::remove_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == key; }),
            env.end());
}

inline void Override(model::Cluster& c, const std::string& key, double value, int line = 200) {
  c.lint.thresholds.values[key] = value;
  c.lint.thresholds.where[key] = At(line);
}

// The findings of one rule, in result order.
inline std::vector<Finding> Of(const LintResult& r, std::string_view rule) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.rule == rule) out.push_back(f);
  }
  return out;
}

// Lints the whole cluster and keeps one rule's findings.
inline std::vector<Finding> LintRule(const model::Cluster& c, std::string_view rule) {
  return Of(Lint(c), rule);
}

// Every finding as "severity rule: message", for readable failure output.
inline std::string Dump(const LintResult& r) {
  std::string out;
  for (const Finding& f : r.findings) {
    out += fmt::format("{} {}: {}\n", ToString(f.severity), f.rule, f.message);
  }
  return out;
}

}  // namespace gpuforge::lint::fixture
