// The loader on good input: the shipped example resolves to the model its comments describe,
// and the layered settings (defaults < profile < groups < node, node `overrides`) resolve as
// docs/inventory.md says.

#include "gpuforge/inventory/loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::inventory {
namespace {

const model::Cluster& MustLoad(const LoadOutcome& out) {
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  EXPECT_FALSE(out.diags.has_errors());
  static const model::Cluster kEmpty;
  return out.ok() ? *out.cluster : kEmpty;
}

const model::NicSpec* FindNic(const model::Profile& p, std::string_view name) {
  for (const auto& n : p.nics) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::string ExamplePath() { return std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml"; }

class LoaderExample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { outcome_ = new LoadOutcome(LoadFile(ExamplePath())); }
  static void TearDownTestSuite() {
    delete outcome_;
    outcome_ = nullptr;
  }
  const model::Cluster& c() { return MustLoad(*outcome_); }
  static LoadOutcome* outcome_;
};
LoadOutcome* LoaderExample::outcome_ = nullptr;

TEST_F(LoaderExample, LoadsWithoutDiagnostics) {
  ASSERT_TRUE(outcome_->ok()) << outcome_->FormatDiagnostics();
  EXPECT_TRUE(outcome_->diags.items().empty());
  EXPECT_EQ(outcome_->FormatDiagnostics(), "");
  EXPECT_EQ(c().name, "sivaro-h200");
  EXPECT_EQ(c().source_file, ExamplePath());
}

TEST_F(LoaderExample, NodesAndGpus) {
  ASSERT_EQ(c().nodes.size(), 6u);
  EXPECT_EQ(c().TotalGpus(), 32);
  std::vector<std::string> names, addrs;
  for (const auto& n : c().nodes) {
    names.push_back(n.name);
    addrs.push_back(n.address);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"head01", "gpu001", "gpu002", "gpu003", "gpu004", "login01"}));
  EXPECT_EQ(addrs, (std::vector<std::string>{"198.18.0.10", "198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.14",
                                             "198.18.0.15"}));
  EXPECT_EQ(c().nodes[0].role, model::NodeRole::kController);
  EXPECT_EQ(c().nodes[0].profile, "head");
  EXPECT_EQ(c().nodes[1].role, model::NodeRole::kCompute);
  EXPECT_EQ(c().nodes[1].profile, "hgx-h200");
  EXPECT_EQ(c().nodes[1].groups, (std::vector<std::string>{"train"}));
  EXPECT_EQ(c().nodes[0].where.line, 65);
  EXPECT_EQ(c().nodes[4].where.line, 70);
  EXPECT_EQ(c().nodes[5].role, model::NodeRole::kLogin);
  EXPECT_EQ(c().nodes[5].where.line, 77);
  EXPECT_EQ(c().ComputeNodes().size(), 4u);
}

TEST_F(LoaderExample, GpuSpecFromCatalogueAndFile) {
  const model::Profile* p = c().FindProfile("hgx-h200");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->gpus.size(), 1u);
  const model::GpuSpec& g = p->gpus[0];
  EXPECT_EQ(g.model, "H200");
  EXPECT_EQ(g.generation, "hopper");
  EXPECT_EQ(g.count, 8);
  EXPECT_DOUBLE_EQ(g.memory_bytes, 141e9);
  EXPECT_DOUBLE_EQ(g.tdp_w, 700);
  EXPECT_DOUBLE_EQ(g.nvlink_bytes_per_s, 900e9);
  EXPECT_EQ(g.form_factor, model::FormFactor::kSxm);
  EXPECT_TRUE(g.nvswitch);
  ASSERT_EQ(g.pci_bus_ids.size(), 8u);
  EXPECT_EQ(g.pci_bus_ids.front(), "0000:18:00.0");
  EXPECT_EQ(g.pci_bus_ids.back(), "0000:db:00.0");
  EXPECT_EQ(g.numa_nodes, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(p->cpu.model, "Xeon Platinum 8480+");
  EXPECT_EQ(p->cpu.sockets, 2);
  EXPECT_EQ(p->cpu.cores_per_socket, 56);
  EXPECT_EQ(p->cpu.threads_per_core, 2);
  EXPECT_DOUBLE_EQ(p->memory_bytes, 2e12);
  EXPECT_EQ(p->nvme.count, 8);
  EXPECT_DOUBLE_EQ(p->nvme.size_bytes, 3.84e12);
  EXPECT_DOUBLE_EQ(p->nvme.read_bytes_per_s, 7e9);
  EXPECT_DOUBLE_EQ(p->nvme.write_bytes_per_s, 4e9);
  EXPECT_DOUBLE_EQ(p->other_power_w, 2400);
  EXPECT_FALSE(p->max_power_w.has_value());
  EXPECT_DOUBLE_EQ(p->node_power_w(), 8 * 700 + 2400);
  // The head node has no GPUs and says nothing about power: the 500 W floor applies.
  const model::Profile* head = c().FindProfile("head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->gpu_count(), 0);
  EXPECT_DOUBLE_EQ(head->other_power_w, 500);
}

TEST_F(LoaderExample, NicRangeExpandsWithPerDeviceFields) {
  const model::Profile* p = c().FindProfile("hgx-h200");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->nics.size(), 9u);
  const std::vector<std::string> pcis = {"0000:19:00.0", "0000:2b:00.0", "0000:3b:00.0", "0000:5e:00.0",
                                         "0000:9b:00.0", "0000:ac:00.0", "0000:bb:00.0", "0000:dc:00.0"};
  for (int i = 0; i < 8; ++i) {
    const model::NicSpec& n = p->nics[i];
    SCOPED_TRACE(n.name);
    EXPECT_EQ(n.name, fmt::format("mlx5_{}", i));
    EXPECT_EQ(n.kind, model::NetKind::kInfiniband);
    EXPECT_DOUBLE_EQ(n.rate_bytes_per_s, 50e9);
    EXPECT_EQ(n.port, 1);
    EXPECT_EQ(n.network, "ib");
    EXPECT_EQ(n.rail, i);
    EXPECT_EQ(n.numa_node, i < 4 ? 0 : 1);
    EXPECT_EQ(n.pci_bus_id, pcis[i]);
    EXPECT_EQ(n.netdev, "");
    EXPECT_EQ(n.where.line, 39);
  }
  const model::NicSpec* eth = FindNic(*p, "mlx5_8");
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->kind, model::NetKind::kEthernet);
  EXPECT_DOUBLE_EQ(eth->rate_bytes_per_s, 12.5e9);
  EXPECT_EQ(eth->network, "data");
  EXPECT_EQ(eth->netdev, "ens9f0");
  EXPECT_EQ(eth->numa_node, 0);
  EXPECT_FALSE(eth->rail.has_value());
  EXPECT_EQ(eth->pci_bus_id, "");
}

TEST_F(LoaderExample, LinksZipBothSides) {
  ASSERT_EQ(c().links.size(), 64u);
  std::vector<std::string> first;
  for (std::size_t i = 0; i < c().links.size(); ++i) {
    const model::Link& l = c().links[i];
    EXPECT_DOUBLE_EQ(l.rate_bytes_per_s, 50e9) << i;
    if (i < 32) {
      EXPECT_EQ(l.a.kind, model::Endpoint::Kind::kNic) << i;
      EXPECT_EQ(l.b.kind, model::Endpoint::Kind::kSwitchPort) << i;
    } else {
      EXPECT_EQ(l.a.kind, model::Endpoint::Kind::kSwitchPort) << i;
    }
  }
  EXPECT_EQ(c().links[0].a.ToString(), "gpu001:mlx5_0");
  EXPECT_EQ(c().links[0].b.ToString(), "leaf1:1");
  EXPECT_EQ(c().links[7].a.ToString(), "gpu001:mlx5_7");
  EXPECT_EQ(c().links[7].b.ToString(), "leaf1:8");
  EXPECT_EQ(c().links[31].a.ToString(), "gpu004:mlx5_7");
  EXPECT_EQ(c().links[31].b.ToString(), "leaf4:8");
  EXPECT_EQ(c().links[32].a.ToString(), "leaf1:33");
  EXPECT_EQ(c().links[32].b.ToString(), "spine1:1");
  EXPECT_EQ(c().links[63].a.ToString(), "leaf4:40");
  EXPECT_EQ(c().links[63].b.ToString(), "spine1:32");
  EXPECT_EQ(c().links[0].where.line, 95);
  EXPECT_EQ(c().links[63].where.line, 102);
}

TEST_F(LoaderExample, SwitchesAndNetworks) {
  ASSERT_EQ(c().switches.size(), 5u);
  EXPECT_EQ(c().switches[0].name, "leaf1");
  EXPECT_EQ(c().switches[3].name, "leaf4");
  EXPECT_EQ(c().switches[4].name, "spine1");
  EXPECT_EQ(c().switches[4].tier, model::SwitchTier::kSpine);
  EXPECT_EQ(c().switches[0].ports, 64);
  EXPECT_EQ(c().switches[0].model, "QM9700");
  EXPECT_EQ(c().switches[0].network, "ib");
  EXPECT_DOUBLE_EQ(c().switches[0].port_rate_bytes_per_s, 50e9);
  ASSERT_EQ(c().networks.size(), 2u);
  const model::Network* ib = c().FindNetwork("ib");
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->role, model::NetRole::kCompute);
  EXPECT_EQ(ib->kind, model::NetKind::kInfiniband);
  EXPECT_EQ(ib->topology, model::Topology::kFatTree);
  EXPECT_DOUBLE_EQ(ib->rate_bytes_per_s, 50e9);
  EXPECT_EQ(c().ComputeNetwork(), ib);
  const model::Network* data = c().FindNetwork("data");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->role, model::NetRole::kStorage);
  EXPECT_EQ(data->topology, model::Topology::kSpineLeaf);
}

TEST_F(LoaderExample, RacksZippedWithNodes) {
  ASSERT_EQ(c().racks.size(), 2u);
  EXPECT_EQ(c().racks[0].name, "r01");
  EXPECT_EQ(c().racks[1].name, "r02");
  EXPECT_EQ(c().racks[0].power_limit_w, 40000);
  EXPECT_EQ(c().racks[0].cooling, model::Cooling::kLiquid);
  std::vector<std::string> racks;
  for (const auto& n : c().nodes) racks.push_back(n.rack);
  EXPECT_EQ(racks, (std::vector<std::string>{"r01", "r01", "r01", "r02", "r02", "r01"}));
  EXPECT_EQ(c().site.rack_power_limit_w, 40000);
  EXPECT_EQ(c().site.cooling, model::Cooling::kLiquid);
  EXPECT_DOUBLE_EQ(c().site.pue, 1.3);
  EXPECT_EQ(c().site.power_price_per_kwh, 0.12);
  EXPECT_EQ(c().economics.gpu_unit_price, 35000);
  EXPECT_EQ(c().economics.rent_per_gpu_hour, 3.5);
  EXPECT_FALSE(c().economics.capex.has_value());
}

TEST_F(LoaderExample, SshAndVarsFromDefaultsAndGroups) {
  for (const auto& n : c().nodes) {
    SCOPED_TRACE(n.name);
    EXPECT_EQ(n.ssh.user, "ops");
    EXPECT_EQ(n.ssh.port, 22);
    EXPECT_EQ(n.ssh.identity_file, "");
    EXPECT_EQ(n.vars.at("site"), "colo1");
  }
  EXPECT_EQ(c().nodes[0].vars.count("partition"), 0u);
  EXPECT_EQ(c().nodes[1].vars.at("partition"), "gpu");
  ASSERT_EQ(c().groups.size(), 1u);
  EXPECT_EQ(c().groups[0].name, "train");
  EXPECT_EQ(c().groups[0].vars.at("partition"), "gpu");
}

TEST_F(LoaderExample, StorageSoftwareWorkload) {
  ASSERT_EQ(c().storage.tiers.size(), 3u);
  EXPECT_EQ(c().storage.dataset_bytes, 20e12);
  const model::StorageTier& scratch = c().storage.tiers[0];
  EXPECT_EQ(scratch.kind, model::StorageKind::kLocalNvme);
  EXPECT_EQ(scratch.scope, model::StorageScope::kNode);
  ASSERT_TRUE(scratch.latency_s.has_value());
  EXPECT_DOUBLE_EQ(*scratch.latency_s, 100e-6);
  const model::StorageTier& beegfs = c().storage.tiers[1];
  EXPECT_EQ(beegfs.scope, model::StorageScope::kCluster);
  EXPECT_TRUE(beegfs.checkpoints);
  EXPECT_EQ(beegfs.network, "data");
  EXPECT_EQ(beegfs.mount, "/mnt/beegfs");
  EXPECT_DOUBLE_EQ(c().storage.tiers[2].capacity_bytes, 1e15);

  const model::Software& sw = c().software;
  EXPECT_EQ(sw.os_distro, "ubuntu");
  EXPECT_EQ(sw.os_version, "24.04");
  EXPECT_EQ(sw.driver_version, "580.95.05");
  EXPECT_EQ(sw.cuda_version, "12.6");
  EXPECT_EQ(sw.nccl_topo_file, "/etc/nccl-topology.xml");
  ASSERT_EQ(sw.nccl_env.size(), 4u);
  EXPECT_EQ(sw.nccl_env[0].first, "NCCL_IB_HCA");
  EXPECT_EQ(sw.nccl_env[1], (std::pair<std::string, std::string>{"NCCL_IB_TIMEOUT", "22"}));
  EXPECT_EQ(sw.nccl_env[3].second, "ens9f0");
  EXPECT_EQ(sw.ofed_kind, "doca-ofed");
  EXPECT_EQ(sw.scheduler.kind, model::SchedulerKind::kSlurm);
  EXPECT_EQ(sw.scheduler.controller, "head01");
  EXPECT_FALSE(sw.scheduler.gres_autodetect_nvml);
  ASSERT_EQ(sw.scheduler.partitions.size(), 1u);
  EXPECT_EQ(sw.scheduler.partitions[0].nodes, (std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu004"}));
  EXPECT_TRUE(sw.scheduler.partitions[0].is_default);
  EXPECT_EQ(sw.scheduler.partitions[0].max_time_s, 7 * 86400.0);

  EXPECT_TRUE(c().workload.present);
  EXPECT_DOUBLE_EQ(c().workload.params, 70e9);
  EXPECT_EQ(c().workload.parallelism.data, 4);
  EXPECT_EQ(c().workload.parallelism.tensor, 8);
  EXPECT_EQ(c().workload.checkpoint_interval_s, 3600);
}

// Every layer sets something the next one overrides, so each step of the order is seen.
constexpr std::string_view kLayers = R"(version: 1
cluster: {name: layers}
defaults:
  ssh: {user: ops, port: 2222, identity_file: /home/ops/.ssh/id_ed25519}
  vars: {site: colo1, a: defaults, b: defaults, c: defaults, d: defaults}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  hgx:
    gpus: {model: H200, count: 8}
    memory: 2TB
    ssh: {port: 22}
    vars: {b: profile, c: profile, d: profile}
    nics:
      - {name: "mlx5_[0-1]", kind: infiniband, rate: 400Gb/s, network: ib}
groups:
  first: {ssh: {user: first}, vars: {c: first, d: first}}
  second: {ssh: {user: second, jump: "bastion@jump.example.com:2200"}, vars: {c: second}}
  plain:
nodes:
  - {name: "gpu[1-2]", address: "10.0.0.[1-2]", profile: hgx, groups: [first, second], vars: {d: node}}
  - {name: gpu3, profile: hgx, groups: [second, first], ssh: {user: alice, port: 2200}}
  - {name: gpu4, profile: hgx}
)";

TEST(LoaderLayers, SshAndVarsPrecedence) {
  LoadOutcome out = LoadString(kLayers, "layers.yaml");
  const model::Cluster& c = MustLoad(out);
  ASSERT_EQ(c.nodes.size(), 4u);
  const model::Node& gpu1 = c.nodes[0];
  EXPECT_EQ(gpu1.ssh.user, "second");  // groups in listed order: the later one wins
  EXPECT_EQ(gpu1.ssh.port, 22);        // the profile beats defaults
  EXPECT_EQ(gpu1.ssh.identity_file, "/home/ops/.ssh/id_ed25519");
  EXPECT_EQ(gpu1.ssh.jump, "bastion@jump.example.com:2200");
  EXPECT_EQ(gpu1.vars, (std::map<std::string, std::string>{
                           {"site", "colo1"}, {"a", "defaults"}, {"b", "profile"}, {"c", "second"}, {"d", "node"}}));
  EXPECT_EQ(c.nodes[1].vars, gpu1.vars);
  EXPECT_EQ(gpu1.address, "10.0.0.1");
  EXPECT_EQ(c.nodes[1].address, "10.0.0.2");

  const model::Node& gpu3 = c.nodes[2];
  EXPECT_EQ(gpu3.ssh.user, "alice");  // the node beats everything
  EXPECT_EQ(gpu3.ssh.port, 2200);
  EXPECT_EQ(gpu3.vars.at("c"), "first");
  EXPECT_EQ(gpu3.vars.at("d"), "first");
  EXPECT_EQ(gpu3.address, "gpu3");  // no address: the name is the address

  const model::Node& gpu4 = c.nodes[3];
  EXPECT_EQ(gpu4.ssh.user, "ops");
  EXPECT_EQ(gpu4.ssh.port, 22);
  EXPECT_EQ(gpu4.ssh.jump, "");
  EXPECT_EQ(gpu4.vars.at("c"), "profile");
  EXPECT_TRUE(gpu4.groups.empty());

  // Groups keep only what they set.
  ASSERT_EQ(c.groups.size(), 3u);
  EXPECT_EQ(c.groups[0].ssh.user, "first");
  EXPECT_EQ(c.groups[2].name, "plain");
  EXPECT_EQ(c.groups[2].ssh.user, "");
}

TEST(LoaderLayers, SshUserDefaultsToRoot) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles: {cpu: {memory: 64GB}}
nodes: [{name: n1, profile: cpu}]
)",
                               "root.yaml");
  const model::Cluster& c = MustLoad(out);
  ASSERT_EQ(c.nodes.size(), 1u);
  EXPECT_EQ(c.nodes[0].ssh.user, "root");
  EXPECT_EQ(c.nodes[0].ssh.port, 22);
  EXPECT_TRUE(c.nodes[0].vars.empty());
  // No racks section: racks named by nodes are created, none here.
  EXPECT_TRUE(c.racks.empty());
  EXPECT_EQ(c.validation.profile, "default");
}

constexpr std::string_view kOverrides = R"(version: 1
cluster: {name: ov}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  hgx:
    gpus: {model: H200, count: 8, numa: [0, 0, 0, 0, 1, 1, 1, 1]}
    cpu: {model: "Xeon 8480+", sockets: 2, cores_per_socket: 56}
    memory: 2TB
    ssh: {user: ops}
    vars: {kind: full}
    nics:
      - {name: "mlx5_[0-7]", kind: infiniband, rate: 400Gb/s, network: ib}
nodes:
  - {name: "gpu[01-03]", profile: hgx}
  - name: gpu04
    profile: hgx
    overrides:
      gpus: {count: 4, numa: [0, 0, 1, 1]}
      cpu: {cores_per_socket: 48}
      vars: {kind: half}
)";

TEST(LoaderLayers, OverridesDeriveAProfile) {
  LoadOutcome out = LoadString(kOverrides, "ov.yaml");
  const model::Cluster& c = MustLoad(out);
  ASSERT_EQ(c.profiles.size(), 2u);
  EXPECT_EQ(c.profiles[1].name, "hgx@gpu04");
  ASSERT_EQ(c.nodes.size(), 4u);
  EXPECT_EQ(c.nodes[2].profile, "hgx");
  EXPECT_EQ(c.nodes[3].profile, "hgx@gpu04");
  const model::Profile& base = c.ProfileOf(c.nodes[0]);
  const model::Profile& derived = c.ProfileOf(c.nodes[3]);
  EXPECT_EQ(base.gpu_count(), 8);
  EXPECT_EQ(derived.gpu_count(), 4);
  // Deep merge: what the override leaves out comes from the base profile.
  EXPECT_EQ(derived.gpus[0].model, "H200");
  EXPECT_DOUBLE_EQ(derived.gpus[0].memory_bytes, 141e9);
  EXPECT_EQ(derived.gpus[0].numa_nodes, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_FALSE(derived.gpus[0].nvswitch);  // the catalogue's guess: 4 SXM GPUs, no NVSwitch
  EXPECT_EQ(derived.cpu.model, "Xeon 8480+");
  EXPECT_EQ(derived.cpu.sockets, 2);
  EXPECT_EQ(derived.cpu.cores_per_socket, 48);
  EXPECT_EQ(base.cpu.cores_per_socket, 56);
  EXPECT_DOUBLE_EQ(derived.memory_bytes, 2e12);
  EXPECT_EQ(derived.nics.size(), 8u);
  EXPECT_DOUBLE_EQ(derived.other_power_w, 1200);  // 300 W per GPU, recomputed
  EXPECT_DOUBLE_EQ(base.other_power_w, 2400);
  EXPECT_EQ(derived.where.line, 19);
  // The derived profile's ssh and vars are the merged ones.
  EXPECT_EQ(c.nodes[3].ssh.user, "ops");
  EXPECT_EQ(c.nodes[3].vars.at("kind"), "half");
  EXPECT_EQ(c.nodes[0].vars.at("kind"), "full");
  EXPECT_EQ(c.TotalGpus(), 28);
}

TEST(LoaderLayers, GpuListAndUnknownModelWithFigures) {
  LoadOutcome out = LoadString(R"(cluster: {name: mixed}
profiles:
  mixed:
    gpus:
      - {model: L40S, count: 2}
      - {model: X9000, count: 1, memory: 96GiB, tdp: 450W, form_factor: pcie, nvlink_bandwidth: 0GB/s}
    power: {max: 3kW}
nodes: [{name: m1, profile: mixed}]
)",
                               "mixed.yaml");
  const model::Cluster& c = MustLoad(out);
  ASSERT_EQ(c.profiles.size(), 1u);
  const model::Profile& p = c.profiles[0];
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_EQ(p.gpus[0].generation, "ada");
  EXPECT_EQ(p.gpus[0].form_factor, model::FormFactor::kPcie);
  EXPECT_EQ(p.gpus[1].generation, "");
  EXPECT_DOUBLE_EQ(p.gpus[1].memory_bytes, 96.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(p.gpus[1].tdp_w, 450);
  EXPECT_EQ(p.gpu_count(), 3);
  EXPECT_DOUBLE_EQ(p.other_power_w, 900);
  EXPECT_EQ(p.max_power_w, 3000);
  EXPECT_DOUBLE_EQ(p.node_power_w(), 3000);
}

TEST(LoaderLayers, RacksCreatedFromNodesWhenNotDeclared) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles: {cpu: {memory: 64GB}}
nodes:
  - {name: "n[1-4]", profile: cpu, rack: "rk[1-2,1-2]"}
  - {name: n5, profile: cpu, rack: rk3}
)",
                               "racks.yaml");
  const model::Cluster& c = MustLoad(out);
  ASSERT_EQ(c.racks.size(), 3u);
  EXPECT_EQ(c.racks[0].name, "rk1");
  EXPECT_EQ(c.racks[2].name, "rk3");
  std::vector<std::string> racks;
  for (const auto& n : c.nodes) racks.push_back(n.rack);
  EXPECT_EQ(racks, (std::vector<std::string>{"rk1", "rk2", "rk1", "rk2", "rk3"}));
}

TEST(LoaderLayers, ExplicitLinkRateAndLintSettings) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
networks: {eth: {role: compute, kind: roce, rate: 200Gb/s}}
profiles:
  p: {nics: [{name: eth0, kind: roce, rate: 200Gb/s, network: eth}]}
nodes: [{name: "n[1-2]", profile: p}]
switches: [{name: sw1, tier: leaf, network: eth, ports: 32, port_rate: 400Gb/s}]
links:
  - {from: "sw1:[1-2]", to: "n[1-2]:eth0", rate: 100Gb/s}
lint:
  disable: [fabric.ethernet_scale]
  thresholds: {fabric.ethernet_scale.max_gpus: 64, storage.min_read: 2GB/s}
validation: {profile: strict, thresholds: {nccl.busbw_min: 400}}
)",
                               "lint.yaml");
  const model::Cluster& c = MustLoad(out);
  ASSERT_EQ(c.links.size(), 2u);
  // Node ends come first whichever way the entry was written.
  EXPECT_EQ(c.links[0].a.ToString(), "n1:eth0");
  EXPECT_EQ(c.links[0].b.ToString(), "sw1:1");
  EXPECT_EQ(c.links[1].a.ToString(), "n2:eth0");
  EXPECT_DOUBLE_EQ(c.links[0].rate_bytes_per_s, 12.5e9);
  EXPECT_EQ(c.lint.disabled, (std::vector<std::string>{"fabric.ethernet_scale"}));
  EXPECT_EQ(c.lint.thresholds.values.at("fabric.ethernet_scale.max_gpus"), 64);
  EXPECT_EQ(c.lint.thresholds.values.at("storage.min_read"), 2e9);
  EXPECT_EQ(c.lint.thresholds.where.at("storage.min_read").line, 11);
  EXPECT_EQ(c.validation.profile, "strict");
  EXPECT_EQ(c.validation.thresholds.values.at("nccl.busbw_min"), 400);
}

}  // namespace
}  // namespace gpuforge::inventory
