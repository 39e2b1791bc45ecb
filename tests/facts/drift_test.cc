#include "gpuforge/facts/drift.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "facts/fixtures.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {
namespace {

constexpr double kGbps = 1e9 / 8;

// Three HGX H200 nodes on NDR400 InfiniBand, Slurm, versions pinned like the H200 fixture.
model::Cluster Cluster() {
  model::Cluster c;
  c.name = "drift";
  model::Profile p;
  p.name = "hgx";
  model::GpuSpec g;
  g.model = "H200";
  g.count = 8;
  g.nvswitch = true;
  g.form_factor = model::FormFactor::kSxm;
  p.gpus.push_back(g);
  for (int i = 0; i < 4; ++i) {
    model::NicSpec n;
    n.name = fmt::format("mlx5_{}", i);
    n.kind = model::NetKind::kInfiniband;
    n.rate_bytes_per_s = 400 * kGbps;
    p.nics.push_back(n);
  }
  c.profiles.push_back(p);
  for (int i = 1; i <= 3; ++i) {
    model::Node n;
    n.name = fmt::format("gpu0{}", i);
    n.profile = "hgx";
    c.nodes.push_back(n);
  }
  c.software.driver_version = "580.159.04";
  c.software.cuda_version = "13.0";
  c.software.nccl_version = "2.28.9";
  c.software.scheduler.kind = model::SchedulerKind::kSlurm;
  c.BuildIndex();
  return c;
}

// A node that matches Cluster() in every respect.
NodeFacts CleanFacts(const std::string& node) {
  NodeFacts f;
  f.node = node;
  for (std::string_view s : {"pci", "nvidia-smi-query", "infiniband", "modules", "services"}) {
    f.sections.push_back(Section{std::string(s), std::string(s), Outcome::kOk, 0, ""});
  }
  f.kernel = "6.8.0-45-generic";
  f.driver = DriverInfo{"580.159.04", true};
  for (int i = 0; i < 8; ++i) {
    Gpu g;
    g.index = i;
    g.name = "NVIDIA H200";
    g.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + i * 0x10);
    g.driver_version = "580.159.04";
    g.vbios_version = "96.00.A5.00.1A";
    g.persistence_mode = true;
    g.ecc_uncorrected_volatile = 0;
    f.gpus.push_back(g);
    f.pci.push_back(PciDevice{
        g.pci_bus_id, PciKind::kGpu, 0x10de, 0x2335, 0x030200, i / 4, 32.0, 32.0, 16, 16, {}, {}});
  }
  for (int i = 0; i < 4; ++i) {
    std::string name = fmt::format("mlx5_{}", i);
    f.pci.push_back(PciDevice{fmt::format("0000:{:02x}:00.0", 0x17 + i * 0x20),
                              PciKind::kNic,
                              0x15b3,
                              0x1021,
                              0x020700,
                              i / 2,
                              32.0,
                              32.0,
                              16,
                              16,
                              {},
                              {name}});
    IbDevice d{name, "28.39.1002", "MT_0000000838", "", {}, {}};
    d.ports.push_back(
        IbPort{1, "ACTIVE", "LinkUp", "400 Gb/sec (4X NDR)", 400.0, 4, "NDR", "InfiniBand", std::nullopt, ""});
    f.ib.push_back(d);
  }
  f.versions.cuda = "13.0.88";
  f.versions.nccl = "2.28.9-1+cuda13.0";
  f.modules = std::vector<std::string>{"nvidia", "nvidia_peermem", "nvidia_uvm"};
  f.services = {{"nvidia-persistenced", ServiceState::kActive},
                {"nvidia-fabricmanager", ServiceState::kActive},
                {"slurmd", ServiceState::kActive}};
  f.memlock = Memlock{true, 0};
  return f;
}

std::vector<std::string> Codes(const std::vector<Drift>& d) {
  std::vector<std::string> out;
  for (const Drift& x : d) out.push_back(x.code + " " + x.node + " " + x.subject);
  return out;
}

TEST(FindDrift, CleanNodesHaveNone) {
  std::vector<Gathered> g;
  for (const char* n : {"gpu01", "gpu02", "gpu03"}) g.push_back({n, CleanFacts(n)});
  EXPECT_EQ(Codes(FindDrift(Cluster(), g)), std::vector<std::string>{});
}

// #14: where GPUDirect goes over DMA-BUF (open modules of branch 580 on Ubuntu 24.04's 6.8
// kernel), no nvidia_peermem is expected; where it goes over peermem, its absence is drift.
TEST(FindDrift, PeermemIsExpectedOnlyWhereGpuDirectUsesIt) {
  auto peermem_findings = [](const model::Cluster& c) {
    NodeFacts f = CleanFacts("gpu01");
    f.modules = std::vector<std::string>{"nvidia", "nvidia_uvm"};
    std::vector<Gathered> g;
    g.push_back({"gpu01", std::move(f)});
    std::size_t n = 0;
    for (const Drift& d : FindDrift(c, g)) n += d.code == "module.peermem";
    return n;
  };
  model::Cluster dmabuf = Cluster();
  dmabuf.software.os_distro = "ubuntu";
  dmabuf.software.os_version = "24.04";
  dmabuf.software.driver_branch = "580";
  EXPECT_EQ(peermem_findings(dmabuf), 0u);
  model::Cluster peermem = dmabuf;
  peermem.software.gpudirect = "peermem";
  EXPECT_EQ(peermem_findings(peermem), 1u);
}

TEST(FindDrift, BrokenNodeReportsEveryCodeInOrder) {
  NodeFacts f = CleanFacts("gpu01");
  f.gpus.pop_back();  // 7 answer, 8 on the bus
  f.gpus[1].name = "NVIDIA H100 80GB HBM3";
  f.gpus[3].persistence_mode = false;
  f.gpus[4].ecc_uncorrected_volatile = 3;
  f.gpus[5].detail = GpuDetail{};
  f.gpus[5].detail->remapped_rows_pending = true;
  f.pci[2].link_speed_gts = 16.0;  // gpu2 at Gen4
  f.pci[8].link_width = 8;         // mlx5_0 at x8
  Result<std::vector<IbDevice>> ib =
      ParseInfinibandSysfs(testing::ReadFixture("infiniband-sysfs.txt"));
  ASSERT_TRUE(ib.ok());
  f.ib = *ib;  // mlx5_1 polling, mlx5_2 at 2X, mlx5_3 HDR
  f.driver->version = "550.90.07";
  f.versions.cuda.reset();
  f.versions.nccl = "2.21.5-1+cuda12.4";
  f.modules = std::vector<std::string>{"nvidia"};
  f.memlock = Memlock{false, 8192 * 1024};
  f.services[1].state = ServiceState::kInactive;
  f.services[2].state = ServiceState::kAbsent;
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  std::vector<Drift> d = FindDrift(Cluster(), g);
  EXPECT_EQ(Codes(d), (std::vector<std::string>{
                          "gpu.count gpu01 gpus",
                          "gpu.ecc_uncorrected gpu01 gpu4",
                          "gpu.model gpu01 gpu1",
                          "gpu.persistence gpu01 gpu3",
                          "gpu.row_remap gpu01 gpu5",
                          "ib.link_rate gpu01 mlx5_3 port 1",
                          "ib.link_width gpu01 mlx5_2 port 1",
                          "ib.port_polling gpu01 mlx5_1 port 1",
                          "limits.memlock gpu01 memlock",
                          "module.peermem gpu01 nvidia_peermem",
                          "pcie.link_gen gpu01 0000:38:00.0",
                          "pcie.link_width gpu01 0000:17:00.0",
                          "service.fabricmanager gpu01 nvidia-fabricmanager",
                          "service.slurmd gpu01 slurmd",
                          "version.cuda gpu01 cuda",
                          "version.driver gpu01 driver",
                          "version.nccl gpu01 nccl",
                      }));
  auto find = [&](std::string_view code) {
    return *std::find_if(d.begin(), d.end(), [&](const Drift& x) { return x.code == code; });
  };
  Drift width = find("ib.link_width");
  EXPECT_EQ(width.expected, "4X or 400 Gb/s");
  EXPECT_EQ(width.actual, "2X");
  EXPECT_EQ(width.message, "mlx5_2 port 1 is up at 2X instead of 4X (200 Gb/sec (2X NDR))");
  Drift rate = find("ib.link_rate");
  EXPECT_EQ(rate.expected, "400 Gb/s");
  EXPECT_EQ(rate.actual, "200 Gb/s");
  EXPECT_EQ(find("gpu.count").message,
            "nvidia-smi lists 7 GPUs, profile hgx has 8; 8 are on the PCI bus");
  Drift gen = find("pcie.link_gen");
  EXPECT_EQ(gen.expected, "32 GT/s (Gen5)");
  EXPECT_EQ(gen.actual, "16 GT/s (Gen4)");
  EXPECT_EQ(gen.message, "0000:38:00.0 (gpu2) links at 16 GT/s (Gen4), it supports 32 GT/s (Gen5)");
  EXPECT_EQ(find("pcie.link_width").message, "0000:17:00.0 (mlx5_0) links at x8, it supports x16");
  EXPECT_EQ(find("version.cuda").actual, "not found");
  EXPECT_EQ(find("version.nccl").message,
            "nccl 2.21.5-1+cuda12.4 is installed, the inventory says 2.28.9");
  EXPECT_EQ(find("limits.memlock").actual, "8192 KiB");
  EXPECT_EQ(find("module.peermem").message,
            "nvidia_peermem is not loaded; GPUDirect RDMA over the NICs needs it (the open kernel "
            "module also allows DMA-BUF, if NCCL uses it)");
  EXPECT_EQ(find("service.slurmd").actual, "absent");
}

TEST(FindDrift, DownPortAndMissingNic) {
  NodeFacts f = CleanFacts("gpu02");
  f.ib[0].ports[0].state = "DOWN";
  f.ib[0].ports[0].phys_state = "Disabled";
  f.ib.pop_back();  // mlx5_3 gone
  std::vector<Gathered> g;
  g.push_back({"gpu02", std::move(f)});
  std::vector<Drift> d = FindDrift(Cluster(), g);
  ASSERT_EQ(Codes(d), (std::vector<std::string>{"ib.port_down gpu02 mlx5_0 port 1",
                                                "nic.missing gpu02 mlx5_3"}));
  EXPECT_EQ(d[0].actual, "DOWN (Disabled)");
  EXPECT_EQ(d[1].actual, "RDMA devices: mlx5_0, mlx5_1, mlx5_2");
}

TEST(FindDrift, NoDriverIsOneFindingNotACrash) {
  NodeFacts f = CleanFacts("gpu01");
  f.gpus.clear();
  f.driver.reset();
  f.sections[1].outcome = Outcome::kAbsent;
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  std::vector<Drift> d = FindDrift(Cluster(), g);
  ASSERT_EQ(Codes(d), std::vector<std::string>{"gpu.no_driver gpu01 nvidia-smi"});
  EXPECT_EQ(d[0].message,
            "profile hgx has 8 GPUs but nvidia-smi is absent; 8 NVIDIA GPUs are on the PCI bus");
}

TEST(FindDrift, UnavailableAndUnknownNodes) {
  std::vector<Gathered> g;
  g.push_back({"gpu02", Error{"node gpu02: ssh: connection refused"}});
  g.push_back({"stranger", CleanFacts("stranger")});
  std::vector<Drift> d = FindDrift(Cluster(), g);
  ASSERT_EQ(Codes(d), (std::vector<std::string>{"facts.unavailable gpu02 node",
                                                "facts.unknown_node stranger node"}));
  EXPECT_EQ(d[0].message, "node gpu02: ssh: connection refused");
}

TEST(FindDrift, SkewBetweenNodesOfOneProfile) {
  std::vector<Gathered> g;
  NodeFacts odd = CleanFacts("gpu02");
  odd.kernel = "6.5.0-1-generic";
  for (Gpu& x : odd.gpus) x.vbios_version = "96.00.99.00.01";
  odd.ib[2].fw_version = "28.38.1900";
  g.push_back({"gpu01", CleanFacts("gpu01")});
  g.push_back({"gpu02", std::move(odd)});
  g.push_back({"gpu03", CleanFacts("gpu03")});
  std::vector<Drift> d = FindDrift(Cluster(), g);
  ASSERT_EQ(Codes(d),
            (std::vector<std::string>{"version.skew gpu02 vbios", "version.skew gpu02 hca_fw",
                                      "version.skew gpu02 kernel"}));
  EXPECT_EQ(d[2].expected, "6.8.0-45-generic");
  EXPECT_EQ(d[2].actual, "6.5.0-1-generic");
  EXPECT_EQ(d[2].message,
            "kernel 6.5.0-1-generic differs from 6.8.0-45-generic on 2 of 3 hgx nodes");
  EXPECT_EQ(d[1].actual, "28.38.1900,28.39.1002");
}

TEST(FindDrift, FirmwareAgainstNodeVars) {
  model::Cluster c = Cluster();
  c.nodes[0].vars["gpu_vbios_version"] = "96.00.a5.00.1a";  // case does not matter
  c.nodes[0].vars["hca_fw_version"] = "28.40.1000";
  std::vector<Gathered> g;
  g.push_back({"gpu01", CleanFacts("gpu01")});
  std::vector<Drift> d = FindDrift(c, g);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].code, "version.firmware");
  EXPECT_EQ(d[0].subject, "mlx5_0");
  EXPECT_EQ(d[0].message, "mlx5_0 has firmware 28.39.1002, vars.hca_fw_version is 28.40.1000");
}

TEST(FindDrift, TwoXByDesignMeetsTheInventoryRate) {
  model::Cluster c = Cluster();
  for (model::NicSpec& n : c.profiles[0].nics) n.rate_bytes_per_s = 200 * kGbps;
  NodeFacts f = CleanFacts("gpu01");
  for (IbDevice& d : f.ib)
    d.ports[0] =
        IbPort{1, "ACTIVE", "LinkUp", "200 Gb/sec (2X NDR)", 200.0, 2, "NDR", "InfiniBand", std::nullopt, ""};
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  EXPECT_EQ(Codes(FindDrift(c, g)), std::vector<std::string>{});
}

// Issue #15 item 1: error cells fail that GPU; a GPU whose name is an error is reported per
// GPU, the node's other facts still judged.
TEST(FindDrift, ErrorCellsFailThatGpu) {
  Result<std::vector<Gpu>> csv = ParseQueryGpuCsv(testing::ReadFixture("query-gpu-errors.csv"));
  ASSERT_TRUE(csv.ok()) << csv.error().message;
  model::Cluster c = Cluster();
  c.profiles[0].gpus[0].model = "A100-40GB";
  c.profiles[0].gpus[0].count = 4;
  c.software.driver_version.clear();
  NodeFacts f = CleanFacts("gpu01");
  f.gpus = *csv;
  f.pci.clear();
  f.services.pop_back();
  f.services.pop_back();
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  std::vector<Drift> d = FindDrift(c, g);
  ASSERT_EQ(Codes(d), (std::vector<std::string>{"gpu.field_error gpu01 gpu1", "gpu.field_error gpu01 gpu2"}));
  EXPECT_EQ(d[1].actual,
            "name [Unknown Error], vbios_version [Unknown Error], memory.total [Unknown Error], power.draw "
            "[Unknown Error], clocks_event_reasons.active [Unknown Error]");
  EXPECT_EQ(d[0].message.substr(0, 58), "gpu1 (0000:0f:00.0) answers with errors: memory.total [GPU");
}

// Issue #15 item 4: the model is the PCI device id plus the memory size; names display only.
// Names and sizes: "NVIDIA A100-SXM4-40GB" 40960 MiB (github.com/modal-labs/modal-client/pull/2797),
// device ids from pci.ids (github.com/pciutils/pciids).
TEST(FindDrift, ModelIsTheDeviceIdAndMemoryNotTheName) {
  auto judge = [](std::string model, std::string name, std::optional<std::uint16_t> id, std::uint64_t mib) {
    model::Cluster c = Cluster();
    c.profiles[0].gpus[0].model = model;
    NodeFacts f = CleanFacts("gpu01");
    for (std::size_t i = 0; i < f.gpus.size(); ++i) {
      f.gpus[i].name = name;
      f.gpus[i].pci_device_id = id;
      f.gpus[i].memory_total_bytes = mib << 20;
    }
    std::vector<Gathered> g;
    g.push_back({"gpu01", std::move(f)});
    std::vector<Drift> out;
    for (Drift& x : FindDrift(c, g)) {
      if (x.code == "gpu.model") out.push_back(x);
    }
    return out;
  };
  EXPECT_TRUE(judge("A100-40GB", "NVIDIA A100-SXM4-40GB", 0x20b0, 40960).empty());
  EXPECT_TRUE(judge("A100-40GB", "NVIDIA A100-SXM4-40GB", std::nullopt, 40960).empty());
  std::vector<Drift> small = judge("A100", "NVIDIA A100-SXM4-40GB", 0x20b0, 40960);
  ASSERT_EQ(small.size(), 8u);
  EXPECT_EQ(small[0].actual, "NVIDIA A100-SXM4-40GB (PCI 10de:20b0, 40960 MiB)");
  EXPECT_EQ(small[0].message, "gpu0 is NVIDIA A100-SXM4-40GB (PCI 10de:20b0, 40960 MiB), profile hgx has A100");
  EXPECT_EQ(judge("A100", "NVIDIA A100-SXM4-40GB", std::nullopt, 40960).size(), 8u);  // by name and memory
  EXPECT_EQ(judge("A100", "NVIDIA A100-SXM4-80GB", 0x20b2, 40960).size(), 8u);       // a 40 GB card
  EXPECT_TRUE(judge("H200", "a name nobody expects", 0x2335, 143771).empty());
  EXPECT_EQ(judge("H200", "NVIDIA H200", 0x2330, 81559).size(), 8u);  // an H100 calling itself H200
  EXPECT_TRUE(judge("RTX4090", "NVIDIA GeForce RTX 4090", 0x2684, 24564).empty());
  EXPECT_TRUE(judge("RTX4090", "NVIDIA GeForce RTX 4090", std::nullopt, 24564).empty());
  EXPECT_TRUE(judge("RTX-A6000", "NVIDIA RTX A6000", 0x2230, 49140).empty());  // not catalogued: by name
  EXPECT_EQ(judge("RTX-A6000", "NVIDIA RTX A5000", 0x2231, 24564).size(), 8u);
}

// Issue #15 item 3: one unreadable section is a finding naming it; nothing else is inferred
// from its absence (no gpu.no_driver for an unreadable CSV, no version.* "not found").
TEST(FindDrift, UnreadableSectionIsOneFinding) {
  NodeFacts f = CleanFacts("gpu01");
  f.gpus.clear();
  f.sections[1] = Section{"nvidia-smi-query", "nvidia-smi --query-gpu=... --format=csv", Outcome::kUnparsed, 0,
                          "line 3: expected 19 fields, got 3"};
  f.sections.push_back(Section{"versions", "versions (nvcc, dpkg-query, rpm, ofed_info, slurmd)",
                               Outcome::kTooLarge, 0, "output is 9000000 bytes, over the section's cap of 65536 bytes"});
  f.versions = Versions{};
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  std::vector<Drift> d = FindDrift(Cluster(), g);
  ASSERT_EQ(Codes(d), (std::vector<std::string>{"facts.section_too_large gpu01 versions",
                                                "facts.section_unparsed gpu01 nvidia-smi-query"}));
  EXPECT_EQ(d[1].message,
            "the output of nvidia-smi --query-gpu=... --format=csv could not be read: line 3: expected 19 fields, "
            "got 3; the node's other sections still count");
}

// Issue #15 item 5: HDR100 (2X HDR at 100 Gb/s) meets a 100 Gb/s network; the rate coming from
// the network, not the NIC, as validate's ib.counters reads it.
TEST(FindDrift, Hdr100MeetsItsNetworkRate) {
  model::Cluster c = Cluster();
  model::Network net;
  net.name = "ib";
  net.rate_bytes_per_s = 100 * kGbps;
  c.networks.push_back(net);
  for (model::NicSpec& n : c.profiles[0].nics) {
    n.rate_bytes_per_s = 0;
    n.network = "ib";
  }
  c.BuildIndex();
  NodeFacts f = CleanFacts("gpu01");
  for (IbDevice& d : f.ib) d.ports[0] = IbPort{1, "ACTIVE", "LinkUp", "100 Gb/sec (2X HDR)", 100.0, 2, "HDR", "InfiniBand", std::nullopt, ""};
  f.ib[1].ports[0] = IbPort{1, "ACTIVE", "LinkUp", "50 Gb/sec (1X HDR)", 50.0, 1, "HDR", "InfiniBand", std::nullopt, ""};
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  std::vector<Drift> d = FindDrift(c, g);
  ASSERT_EQ(Codes(d), std::vector<std::string>{"ib.link_width gpu01 mlx5_1 port 1"});
  EXPECT_EQ(d[0].expected, "4X or 100 Gb/s");
}

// Issue #15 item 6. lscpu of the real H200 host (tests/data/facts/nvidia-h200-1gpu/lscpu.txt:
// 1 socket x 16 cores x 1 thread); slurmctld drains a node reporting fewer CPUs or less
// memory than slurm.conf (Slurm src/slurmctld/node_mgr.c, validate_node_specs: "Low CPUs",
// "Low RealMemory").
TEST(FindDrift, CpuAndMemoryAgainstTheInventory) {
  Result<CpuInfo> cpu = ParseLscpu(testing::ReadFixture("nvidia-h200-1gpu/lscpu.txt"));
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  auto judge = [&](int sockets, int cores, int threads, double inventory_gib, std::uint64_t memtotal_kib) {
    model::Cluster c = Cluster();
    c.profiles[0].cpu.sockets = sockets;
    c.profiles[0].cpu.cores_per_socket = cores;
    c.profiles[0].cpu.threads_per_core = threads;
    c.profiles[0].memory_bytes = inventory_gib * 1024 * 1024 * 1024;
    NodeFacts f = CleanFacts("gpu01");
    f.cpu = *cpu;
    f.memory_bytes = memtotal_kib * 1024;
    std::vector<Gathered> g;
    g.push_back({"gpu01", std::move(f)});
    return FindDrift(c, g);
  };
  // MemTotal 2113925368 kB is 96.3% of 2 TiB: above the 95% RealMemory gpuforge renders.
  EXPECT_EQ(Codes(judge(1, 16, 1, 2048, 2113925368)), std::vector<std::string>{});
  std::vector<Drift> low = judge(2, 16, 1, 2048, 1056962684);  // half the CPUs, half the memory
  ASSERT_EQ(Codes(low), (std::vector<std::string>{"cpu.low gpu01 cpu", "memory.low gpu01 memory"}));
  EXPECT_EQ(low[0].expected, "2x16x1 (32 CPUs)");
  EXPECT_EQ(low[0].actual, "1x16x1 (16 CPUs)");
  EXPECT_EQ(low[0].message,
            "lscpu reports sockets x cores x threads 1x16x1 (16 CPUs), profile hgx has 2x16x1 (32 CPUs); slurmd "
            "would drain the node (\"Low CPUs\")");
  EXPECT_EQ(low[1].expected, ">= 1992294 MiB");
  EXPECT_EQ(low[1].actual, "1032190 MiB");
  std::vector<Drift> more = judge(1, 8, 2, 1024, 2113925368);  // same 16 CPUs, other shape; 2 TiB
  ASSERT_EQ(Codes(more), (std::vector<std::string>{"cpu.differs gpu01 cpu", "memory.differs gpu01 memory"}));
  EXPECT_EQ(Codes(judge(0, 0, 1, 0, 2113925368)), std::vector<std::string>{});  // inventory silent
  // The H200 (#36): MemTotal 131962244 kB against an inventory that says 128869 MiB, the same
  // whole MiB: no drift, where "MemTotal is 128869 MiB, more than 128869 MiB" was reported.
  EXPECT_EQ(Codes(judge(1, 16, 1, 128869.0 / 1024, 131962244)), std::vector<std::string>{});
  std::vector<Drift> one_more = judge(1, 16, 1, 128868.0 / 1024, 131962244);
  ASSERT_EQ(Codes(one_more), std::vector<std::string>{"memory.differs gpu01 memory"});
  EXPECT_EQ(one_more[0].message, "MemTotal is 128869 MiB, more than profile hgx's 128868 MiB");
}

// #28 item 3: a node whose driver is older than the first release that lists its GPU is drift,
// whatever the inventory says about versions.
TEST(FindDrift, ADriverTooOldForTheGpuModel) {
  model::Cluster c = Cluster();
  c.software.driver_version.clear();
  c.software.driver_branch.clear();
  NodeFacts f = CleanFacts("gpu01");
  f.driver->version = "535.104.05";
  std::vector<Gathered> g;
  g.push_back({"gpu01", std::move(f)});
  std::vector<Drift> d = FindDrift(c, g);
  ASSERT_EQ(Codes(d), std::vector<std::string>{"gpu.driver_too_old gpu01 driver"});
  EXPECT_EQ(d[0].expected, ">= 550.90.07 (H200)");
  EXPECT_EQ(d[0].actual, "535.104.05");
  EXPECT_EQ(d[0].message, "NVIDIA driver 535.104.05 is older than 550.90.07, the first release that lists the H200");
  NodeFacts ok = CleanFacts("gpu01");
  ok.driver->version = "550.90.07";
  std::vector<Gathered> g2;
  g2.push_back({"gpu01", std::move(ok)});
  EXPECT_EQ(Codes(FindDrift(c, g2)), std::vector<std::string>{});
}

TEST(DriftCodes, EveryCodeIsDocumented) {
  std::ifstream in(std::string(GPUFORGE_SOURCE_DIR) + "/docs/facts.md");
  std::stringstream s;
  s << in.rdbuf();
  const std::string docs = s.str();
  ASSERT_FALSE(docs.empty()) << "docs/facts.md is missing";
  std::set<std::string_view> seen;
  for (const DriftCode& c : DriftCodes()) {
    EXPECT_TRUE(seen.insert(c.code).second) << c.code;
    EXPECT_NE(docs.find("`" + std::string(c.code) + "`"), std::string::npos) << c.code;
  }
  EXPECT_EQ(seen.size(), 38u);
}

}  // namespace
}  // namespace gpuforge::facts
