// The Slurm family of render: slurm.conf, gres.conf, cgroup.conf, topology.conf and the training
// job script, checked line by line on the example inventory and on small inventories that each
// exercise one decision (docs/render.md, "Slurm"). The rendered example is also pinned byte for
// byte in tests/data/render/h200-ib-32gpu/; GPUFORGE_UPDATE_GOLDEN=1 rewrites those files.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/plan/controller_files.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/render/measured.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExample = "h200-ib-32gpu.yaml";
constexpr const char* kExampleLabel = "inventories/examples/h200-ib-32gpu.yaml";

model::Cluster LoadExample() {
  auto out = inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/" + kExample);
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

model::Cluster LoadYaml(const std::string& yaml) {
  auto out = inventory::LoadString(yaml, "slurm_test.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

render::Options TestOptions() {
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = kExampleLabel;
  return o;
}

render::Output RenderOrDie(const model::Cluster& c, const render::Options& o = TestOptions()) {
  Result<render::Output> out = render::Render(c, o);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? std::move(*out) : render::Output{};
}

const render::RenderedFile* Find(const render::Output& out, const std::string& node, const std::string& path) {
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

std::string Content(const render::Output& out, const std::string& path, const std::string& node = "") {
  const render::RenderedFile* f = Find(out, node, path);
  EXPECT_NE(f, nullptr) << (node.empty() ? "_cluster" : node) << ":" << path << " was not rendered";
  return f == nullptr ? "" : f->content;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines that are settings, not comments or blank lines.
std::vector<std::string> Settings(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& l : Lines(text)) {
    if (!l.empty() && l[0] != '#') out.push_back(l);
  }
  return out;
}

bool HasLine(const std::string& text, const std::string& line) {
  std::vector<std::string> lines = Lines(text);
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& l : Lines(text)) {
    if (l.rfind(prefix, 0) == 0) out.push_back(l);
  }
  return out;
}

// --- The example inventory -------------------------------------------------------------------

TEST(RenderSlurm, ExampleSlurmConfHasTheKeyLines) {
  render::Output out = RenderOrDie(LoadExample());
  std::string conf = Content(out, "/etc/slurm/slurm.conf");
  for (const char* line : {
           "ClusterName=sivaro-h200",
           "SlurmctldHost=head01(198.18.0.10)",
           "AuthType=auth/munge",
           "SelectType=select/cons_tres",
           "SelectTypeParameters=CR_Core_Memory",
           "ProctrackType=proctrack/cgroup",
           "TaskPlugin=task/cgroup,task/affinity",
           "GresTypes=gpu",
           "TopologyPlugin=topology/tree",
           "HealthCheckProgram=/usr/local/lib/gpuforge/healthcheck",
           "HealthCheckInterval=300",
           "StateSaveLocation=/var/lib/slurm/slurmctld",
           "SlurmdSpoolDir=/var/lib/slurm/slurmd",
           "PropagateResourceLimitsExcept=MEMLOCK",
           "KillOnBadExit=1",
           "UnkillableStepTimeout=180",
           "SchedulerParameters=bf_window=10080,bf_resolution=420",  // 7 days in minutes
           "PrologFlags=Contain",
           "JobContainerType=job_container/tmpfs",
       }) {
    EXPECT_TRUE(HasLine(conf, line)) << "missing: " << line << "\n" << conf;
  }
  // 2TB = 2e12 bytes; 95% of it in MiB is 1811981. The controller has no GPUs: no NodeName.
  EXPECT_EQ(LinesStartingWith(conf, "NodeName="),
            std::vector<std::string>{"NodeName=gpu[001-004] NodeAddr=198.18.0.[11-14] Gres=gpu:h200:8 CPUs=224 Sockets=2 "
                                     "CoresPerSocket=56 ThreadsPerCore=2 RealMemory=1811981 State=UNKNOWN"});
  EXPECT_EQ(LinesStartingWith(conf, "PartitionName="),
            std::vector<std::string>{
                "PartitionName=gpu Nodes=gpu[001-004] Default=YES MaxTime=7-00:00:00 DefMemPerGPU=226497 "
                "DefCpuPerGPU=28 State=UP"});
  EXPECT_EQ(Settings(Content(out, "/etc/slurm/job_container.conf")),
            (std::vector<std::string>{"AutoBasePath=true", "BasePath=/var/lib/slurm/job_container"}));
}

TEST(RenderSlurm, ExampleGresConfHasOneLinePerNumaNode) {
  render::Output out = RenderOrDie(LoadExample());
  std::string gres = Content(out, "/etc/slurm/gres.conf");
  EXPECT_EQ(Settings(gres), (std::vector<std::string>{
                                "NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-55",
                                "NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=56-111",
                            }))
      << gres;
  EXPECT_TRUE(HasLine(gres, "# H200 GPUs on NUMA node 1 = socket 1: its cores")) << gres;
}

TEST(RenderSlurm, ExampleCgroupAndTopology) {
  render::Output out = RenderOrDie(LoadExample());
  EXPECT_EQ(Settings(Content(out, "/etc/slurm/cgroup.conf")),
            (std::vector<std::string>{"CgroupPlugin=autodetect", "ConstrainCores=yes", "ConstrainDevices=yes",
                                      "ConstrainRAMSpace=yes"}));
  EXPECT_EQ(Settings(Content(out, "/etc/slurm/topology.conf")),
            (std::vector<std::string>{"SwitchName=leaf1 Nodes=gpu001", "SwitchName=leaf2 Nodes=gpu002",
                                      "SwitchName=leaf3 Nodes=gpu003", "SwitchName=leaf4 Nodes=gpu004",
                                      "SwitchName=spine1 Switches=leaf[1-4]"}));
}

TEST(RenderSlurm, ExampleJobScript) {
  render::Output out = RenderOrDie(LoadExample());
  const render::RenderedFile* f = Find(out, "", "/etc/gpuforge/jobs/train.sbatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->mode, "0755");
  std::vector<std::string> lines = Lines(f->content);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "#!/bin/bash") << "sbatch refuses a script whose first line is not #!";
  EXPECT_EQ(LinesStartingWith(f->content, "#SBATCH"),
            (std::vector<std::string>{"#SBATCH --job-name=llm-train", "#SBATCH --partition=gpu", "#SBATCH --nodes=4",
                                      "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8",
                                      "#SBATCH --cpus-per-task=224", "#SBATCH --mem=0",
                                      "#SBATCH --time=7-00:00:00", "#SBATCH --exclusive"}));
  EXPECT_EQ(LinesStartingWith(f->content, "export "),
            (std::vector<std::string>{
                "export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1'",
                "export NCCL_IB_TIMEOUT='22'", "export NCCL_IB_RETRY_CNT='7'", "export NCCL_SOCKET_IFNAME='=ens9f0'",
                "export NCCL_NET=IB"}));
  for (const std::string& line : Settings(f->content)) {
    EXPECT_EQ(line.find("NCCL_DEBUG"), std::string::npos) << "the inventory does not set NCCL_DEBUG: " << line;
  }
  EXPECT_TRUE(HasLine(f->content, "  --nproc_per_node=8 \\"));
  EXPECT_EQ(LinesStartingWith(f->content, "srun "),
            std::vector<std::string>{"srun --cpus-per-task=\"$SLURM_CPUS_PER_TASK\" --kill-on-bad-exit=1 torchrun \\"});
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RenderSlurm, ExampleMatchesTheGoldenFiles) {
  render::Output out = RenderOrDie(LoadExample());
  const fs::path dir = fs::path(GPUFORGE_TEST_DATA_DIR) / "render" / "h200-ib-32gpu" / "_cluster";
  const char* update = std::getenv("GPUFORGE_UPDATE_GOLDEN");
  bool rewrite = update != nullptr && std::string(update) == "1";
  for (const char* path : {"/etc/slurm/slurm.conf", "/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf",
                           "/etc/slurm/topology.conf", "/etc/slurm/job_container.conf",
                           "/etc/gpuforge/jobs/train.sbatch"}) {
    std::string rendered = Content(out, path);
    fs::path golden = dir / fs::path(path).relative_path();
    if (rewrite) {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden, std::ios::binary) << rendered;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run the tests with GPUFORGE_UPDATE_GOLDEN=1 to write it";
    EXPECT_EQ(rendered, ReadFile(golden)) << path << " differs from " << golden
                                          << "; if the change is intended, rerun with GPUFORGE_UPDATE_GOLDEN=1 "
                                             "and review the diff";
  }
}

TEST(RenderSlurm, EveryNodeWithASlurmRoleGetsTheSameFiles) {
  render::Output out = RenderOrDie(LoadExample());
  for (const char* path : {"/etc/slurm/slurm.conf", "/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf",
                           "/etc/slurm/topology.conf", "/etc/slurm/job_container.conf"}) {
    std::string cluster = Content(out, path);
    // head01 runs slurmctld and no slurmd: slurmd's own files are not for it.
    bool slurmd_only = std::string(path) != "/etc/slurm/slurm.conf" && std::string(path) != "/etc/slurm/topology.conf";
    EXPECT_EQ(Find(out, "head01", path) == nullptr, slurmd_only) << path;
    for (const char* node : {"head01", "gpu001", "gpu002", "gpu003", "gpu004"}) {
      if (slurmd_only && std::string(node) == "head01") continue;
      const render::RenderedFile* f = Find(out, node, path);
      ASSERT_NE(f, nullptr) << node << ":" << path;
      EXPECT_EQ(f->content, cluster) << node << ":" << path;
      EXPECT_EQ(f->mode, "0644");
    }
  }
  // The job script is cluster-wide only.
  EXPECT_EQ(Find(out, "gpu001", "/etc/gpuforge/jobs/train.sbatch"), nullptr);
}

TEST(RenderSlurm, NodeSelectionLimitsThePerNodeCopies) {
  render::Options o = TestOptions();
  o.nodes = {"gpu002"};
  render::Output out = RenderOrDie(LoadExample(), o);
  EXPECT_NE(Find(out, "gpu002", "/etc/slurm/slurm.conf"), nullptr);
  EXPECT_EQ(Find(out, "gpu001", "/etc/slurm/slurm.conf"), nullptr);
  EXPECT_EQ(Find(out, "head01", "/etc/slurm/slurm.conf"), nullptr);
  // The cluster-wide files still describe the whole cluster.
  EXPECT_TRUE(HasLine(Content(out, "/etc/slurm/slurm.conf"),
                      "NodeName=gpu[001-004] NodeAddr=198.18.0.[11-14] Gres=gpu:h200:8 CPUs=224 Sockets=2 "
                      "CoresPerSocket=56 ThreadsPerCore=2 RealMemory=1811981 State=UNKNOWN"));
}

TEST(RenderSlurm, RenderingTwiceGivesTheSameBytes) {
  model::Cluster c = LoadExample();
  render::Output a = RenderOrDie(c), b = RenderOrDie(c);
  ASSERT_EQ(a.files.size(), b.files.size());
  for (std::size_t i = 0; i < a.files.size(); ++i) {
    EXPECT_EQ(a.files[i].node, b.files[i].node);
    EXPECT_EQ(a.files[i].path, b.files[i].path);
    EXPECT_EQ(a.files[i].content, b.files[i].content) << a.files[i].node << ":" << a.files[i].path;
  }
}

TEST(RenderSlurm, NotSlurmRendersNothingOfSlurm) {
  model::Cluster c = LoadExample();
  c.software.scheduler.kind = model::SchedulerKind::kNone;
  render::Output out = RenderOrDie(c);
  for (const render::RenderedFile& f : out.files) {
    EXPECT_EQ(f.path.rfind("/etc/slurm/", 0), std::string::npos) << f.node << ":" << f.path;
    EXPECT_NE(f.path, "/etc/gpuforge/jobs/train.sbatch");
  }
}

TEST(RenderSlurm, NoControllerIsASkipWithTheReason) {
  model::Cluster c = LoadExample();
  c.software.scheduler.controller.clear();
  render::Output out = RenderOrDie(c);
  EXPECT_EQ(Find(out, "", "/etc/slurm/slurm.conf"), nullptr);
  bool skipped = false;
  for (const render::Skip& s : out.skipped) {
    if (s.path == "/etc/slurm/slurm.conf") {
      skipped = true;
      EXPECT_NE(s.reason.find("SlurmctldHost"), std::string::npos) << s.reason;
    }
  }
  EXPECT_TRUE(skipped);
}

// --- Small inventories, one decision each ------------------------------------------------------

// Two leaves of two nodes under one spine on the compute network, a storage switch that must
// stay out of topology.conf, and a spare leaf with nothing cabled to it.
constexpr const char* kTwoTier = R"(version: 1
cluster: {name: TwoTier}
profiles:
  gpu:
    gpus: {model: H200, count: 8, numa: [0, 0, 0, 0, 1, 1, 1, 1]}
    cpu: {model: x, sockets: 2, cores_per_socket: 48, threads_per_core: 2}
    memory: 1TiB
    nics:
      - {name: "mlx5_[0-1]", kind: infiniband, rate: 400Gb/s, network: ib}
      - {name: eth0, kind: ethernet, rate: 100Gb/s, network: data, netdev: eth0}
  head:
    cpu: {model: x, sockets: 1, cores_per_socket: 16, threads_per_core: 2}
    memory: 256GB
nodes:
  - {name: ctl1, address: 10.0.0.2, profile: head, role: controller}
  - {name: login1, address: 10.0.0.3, profile: head, role: login}
  - {name: "gpu[01-04]", address: "10.0.1.[1-4]", profile: gpu}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
  data: {role: storage, kind: ethernet, rate: 100Gb/s}
switches:
  - {name: "leaf[1-3]", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}
  - {name: spine1, tier: spine, network: ib, ports: 64, port_rate: 400Gb/s}
  - {name: eth1, tier: leaf, network: data, ports: 32, port_rate: 100Gb/s}
links:
  - {from: "gpu01:mlx5_[0-1]", to: "leaf1:[1-2]"}
  - {from: "gpu02:mlx5_[0-1]", to: "leaf1:[3-4]"}
  - {from: "gpu03:mlx5_[0-1]", to: "leaf2:[1-2]"}
  - {from: "gpu04:mlx5_[0-1]", to: "leaf2:[3-4]"}
  - {from: "leaf1:[33-36]", to: "spine1:[1-4]"}
  - {from: "leaf2:[33-36]", to: "spine1:[5-8]"}
  - {from: "leaf3:33", to: "spine1:9"}
  - {from: "gpu[01-04]:eth0", to: "eth1:[1-4]"}
software:
  scheduler:
    kind: slurm
    controller: ctl1
)";

// #28 item 5: rail-optimized, every node has a NIC on each rail leaf. Listing each node under
// every leaf made slurmctld warn "Multiple leaf switches contain nodes" (Slurm
// src/plugins/topology/tree/switch_record.c) and gave the tree no locality. The leaves that share
// nodes are one scalable unit, one switch in topology.conf; two units are two switches.
TEST(RenderSlurm, TopologyOfARailOptimizedFabricIsOneSwitchPerScalableUnit) {
  std::string rails = kTwoTier;
  auto replace = [&](const std::string& from, const std::string& to) {
    ASSERT_NE(rails.find(from), std::string::npos) << from;
    rails.replace(rails.find(from), from.size(), to);
  };
  replace("  - {name: \"leaf[1-3]\", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}",
          "  - {name: \"leaf[1-5]\", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}");
  replace("  - {from: \"gpu01:mlx5_[0-1]\", to: \"leaf1:[1-2]\"}\n"
          "  - {from: \"gpu02:mlx5_[0-1]\", to: \"leaf1:[3-4]\"}\n"
          "  - {from: \"gpu03:mlx5_[0-1]\", to: \"leaf2:[1-2]\"}\n"
          "  - {from: \"gpu04:mlx5_[0-1]\", to: \"leaf2:[3-4]\"}\n"
          "  - {from: \"leaf1:[33-36]\", to: \"spine1:[1-4]\"}\n"
          "  - {from: \"leaf2:[33-36]\", to: \"spine1:[5-8]\"}\n"
          "  - {from: \"leaf3:33\", to: \"spine1:9\"}\n",
          // Unit 1: gpu01-02, rail 0 on leaf1, rail 1 on leaf2; unit 2: gpu03-04 on leaf3/leaf4.
          "  - {from: \"gpu[01-02]:mlx5_0\", to: \"leaf1:[1-2]\"}\n"
          "  - {from: \"gpu[01-02]:mlx5_1\", to: \"leaf2:[1-2]\"}\n"
          "  - {from: \"gpu[03-04]:mlx5_0\", to: \"leaf3:[1-2]\"}\n"
          "  - {from: \"gpu[03-04]:mlx5_1\", to: \"leaf4:[1-2]\"}\n"
          "  - {from: \"leaf[1-4]:33\", to: \"spine1:[1-4]\"}\n"
          "  - {from: \"leaf5:33\", to: \"spine1:9\"}\n");
  replace("ib: {role: compute, kind: infiniband, rate: 400Gb/s}",
          "ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: rail-optimized}");
  render::Output out = RenderOrDie(LoadYaml(rails));
  std::string topo = Content(out, "/etc/slurm/topology.conf");
  EXPECT_EQ(Settings(topo), (std::vector<std::string>{"SwitchName=su1 Nodes=gpu[01-02]", "SwitchName=su2 Nodes=gpu[03-04]",
                                                      "SwitchName=spine1 Switches=su[1-2]"}))
      << topo;
  EXPECT_NE(topo.find("# Note: su1 stands for the leaves leaf[1-2] of network ib: topology/tree puts a node under one "
                      "leaf switch, and these nodes are cabled to several of them (one per rail)."),
            std::string::npos)
      << topo;
}

TEST(RenderSlurm, TopologyOfATwoTierFabric) {
  render::Output out = RenderOrDie(LoadYaml(kTwoTier));
  std::string topo = Content(out, "/etc/slurm/topology.conf");
  EXPECT_EQ(Settings(topo), (std::vector<std::string>{"SwitchName=leaf1 Nodes=gpu[01-02]", "SwitchName=leaf2 Nodes=gpu[03-04]",
                                                      "SwitchName=spine1 Switches=leaf[1-2]"}))
      << topo;
  EXPECT_NE(topo.find("compute network 'ib'"), std::string::npos) << topo;
  std::string conf = Content(out, "/etc/slurm/slurm.conf");
  EXPECT_TRUE(HasLine(conf, "TopologyPlugin=topology/tree"));
  EXPECT_TRUE(HasLine(conf, "ClusterName=twotier")) << "Slurm keeps cluster names in lower case";
  // Controller and login node get the files; they are not Slurm nodes.
  EXPECT_NE(Find(out, "ctl1", "/etc/slurm/topology.conf"), nullptr);
  EXPECT_NE(Find(out, "login1", "/etc/slurm/slurm.conf"), nullptr);
  EXPECT_EQ(LinesStartingWith(conf, "NodeName=").size(), 1u) << conf;
  // No partitions declared: one default partition 'gpu' with every Slurm node.
  // 1TiB * 0.95 = 996147 MiB (floor), / 8 GPUs = 124518.
  EXPECT_EQ(LinesStartingWith(conf, "PartitionName="),
            std::vector<std::string>{
                "PartitionName=gpu Nodes=gpu[01-04] Default=YES MaxTime=UNLIMITED DefMemPerGPU=124518 DefCpuPerGPU=24 "
                "State=UP"});
}

TEST(RenderSlurm, ASwitchWithNodesAndSwitchesKeepsItsSwitches) {
  std::string yaml = kTwoTier;
  const std::string link = R"(  - {from: "gpu04:mlx5_[0-1]", to: "leaf2:[3-4]"})";
  yaml.replace(yaml.find(link), link.size(),
               "  - {from: \"gpu04:mlx5_0\", to: \"leaf2:3\"}\n  - {from: \"gpu04:mlx5_1\", to: \"spine1:10\"}");
  std::string topo = Content(RenderOrDie(LoadYaml(yaml)), "/etc/slurm/topology.conf");
  EXPECT_EQ(Settings(topo), (std::vector<std::string>{"SwitchName=leaf1 Nodes=gpu[01-02]", "SwitchName=leaf2 Nodes=gpu[03-04]",
                                                      "SwitchName=spine1 Switches=leaf[1-2]"}))
      << topo;
  EXPECT_TRUE(HasLine(topo, "# Note: spine1 also has nodes cabled to it directly (gpu04); topology/tree cannot say so, "
                            "they are placed by their other switches."))
      << topo;
}

TEST(RenderSlurm, NoSwitchesNoTopology) {
  std::string yaml = kTwoTier;
  yaml = yaml.substr(0, yaml.find("switches:")) + yaml.substr(yaml.find("software:"));
  render::Output out = RenderOrDie(LoadYaml(yaml));
  EXPECT_EQ(Find(out, "", "/etc/slurm/topology.conf"), nullptr);
  EXPECT_EQ(Find(out, "gpu01", "/etc/slurm/topology.conf"), nullptr);
  EXPECT_TRUE(LinesStartingWith(Content(out, "/etc/slurm/slurm.conf"), "TopologyPlugin").empty());
  for (const render::Skip& s : out.skipped) EXPECT_NE(s.path, "/etc/slurm/topology.conf") << s.reason;
}

TEST(RenderSlurm, SwitchesWithoutCablesAreASkip) {
  std::string yaml = kTwoTier;
  yaml = yaml.substr(0, yaml.find("links:")) + yaml.substr(yaml.find("software:"));
  render::Output out = RenderOrDie(LoadYaml(yaml));
  EXPECT_EQ(Find(out, "", "/etc/slurm/topology.conf"), nullptr);
  bool skipped = false;
  for (const render::Skip& s : out.skipped) skipped = skipped || s.path == "/etc/slurm/topology.conf";
  EXPECT_TRUE(skipped);
}

TEST(RenderSlurm, GresConfWithNvmlAutodetect) {
  model::Cluster c = LoadExample();
  c.software.scheduler.gres_autodetect_nvml = true;
  std::string gres = Content(RenderOrDie(c), "/etc/slurm/gres.conf");
  EXPECT_EQ(Settings(gres),
            (std::vector<std::string>{"AutoDetect=nvml", "NodeName=gpu[001-004] Name=gpu Type=h200 Count=8"}))
      << gres;
}

TEST(RenderSlurm, GresConfWithoutNumaHasNoCores) {
  model::Cluster c = LoadExample();
  for (model::Profile& p : c.profiles) {
    for (model::GpuSpec& g : p.gpus) g.numa_nodes.clear();
  }
  std::string gres = Content(RenderOrDie(c), "/etc/slurm/gres.conf");
  EXPECT_EQ(Settings(gres), std::vector<std::string>{"NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[0-7]"})
      << gres;
}

TEST(RenderSlurm, GresConfWithNumaBeyondTheSocketsHasNoCores) {
  // AMD NPS4: eight NUMA nodes on two sockets; "NUMA node k = socket k" no longer holds.
  model::Cluster c = LoadExample();
  for (model::Profile& p : c.profiles) {
    for (model::GpuSpec& g : p.gpus) {
      if (!g.numa_nodes.empty()) g.numa_nodes = {0, 1, 2, 3, 4, 5, 6, 7};
    }
  }
  std::string gres = Content(RenderOrDie(c), "/etc/slurm/gres.conf");
  EXPECT_EQ(Settings(gres), std::vector<std::string>{"NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[0-7]"})
      << gres;
}

// The example's eight H200s per node, at their real HGX bus ids, with these minors in bus order.
std::vector<model::MeasuredGpu> MeasuredHgx(const std::vector<int>& minors, int gpus = 8) {
  const char* bdf[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                       "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  std::vector<model::MeasuredGpu> out;
  for (int i = 0; i < gpus; ++i) out.push_back({bdf[i], minors[static_cast<std::size_t>(i)], i < 4 ? 0 : 1});
  return out;
}

std::string GresWith(const model::Cluster& c, const render::MeasuredGpus& gpus) {
  Result<render::Output> out = render::Render(c, TestOptions(), render::Measured{{}, gpus});
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? Content(*out, "/etc/slurm/gres.conf") : "";
}

// Minors the driver gave out of bus order (it numbers GPUs as it probes them, which SchedMD calls
// nondeterministic): each GPU keeps its own device file and its measured socket, in bus order,
// which is how slurmd's AutoDetect=nvml would list them (gpu_nvml.c); nodes that measured the
// same share lines, and a node not measured keeps the assumed lines, saying so.
TEST(RenderSlurm, GresFileLinesComeFromTheMinorsEachNodeMeasured) {
  model::Cluster c = LoadExample();
  render::MeasuredGpus m;
  m["gpu001"] = MeasuredHgx({2, 3, 0, 1, 4, 5, 6, 7});
  m["gpu002"] = m["gpu001"];
  m["gpu003"] = MeasuredHgx({0, 1, 2, 3, 4, 5, 6, 7});
  std::string gres = GresWith(c, m);
  EXPECT_EQ(Settings(gres), (std::vector<std::string>{
                                "NodeName=gpu004 Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-55",
                                "NodeName=gpu004 Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=56-111",
                                "NodeName=gpu[001-002] Name=gpu Type=h200 File=/dev/nvidia[2-3] Cores=0-55",
                                "NodeName=gpu[001-002] Name=gpu Type=h200 File=/dev/nvidia[0-1] Cores=0-55",
                                "NodeName=gpu[001-002] Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=56-111",
                                "NodeName=gpu003 Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-55",
                                "NodeName=gpu003 Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=56-111",
                            }))
      << gres;
  EXPECT_NE(gres.find("# Not measured: File= assumes"), std::string::npos) << gres;
  EXPECT_NE(gres.find("# Measured: 8 GPUs in PCI bus order"), std::string::npos) << gres;
  EXPECT_NE(gres.find("# H200 GPUs on NUMA node 1 = socket 1 (measured): its cores"), std::string::npos) << gres;

  // Every node measured: no line is assumed, and identical nodes fold into one set of lines.
  m["gpu003"] = m["gpu004"] = m["gpu001"];
  gres = GresWith(c, m);
  EXPECT_EQ(gres.find("Not measured"), std::string::npos) << gres;
  EXPECT_EQ(Settings(gres), (std::vector<std::string>{
                                "NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[2-3] Cores=0-55",
                                "NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[0-1] Cores=0-55",
                                "NodeName=gpu[001-004] Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=56-111",
                            }))
      << gres;
}

// Minors that run backwards get a line each (a folded range would put them back in numeric
// order); an unknown NUMA node gives no Cores= rather than the inventory's claim; a node that
// lost a GPU offers what it has, and the file says slurmctld will drain it.
TEST(RenderSlurm, GresFromMeasuredMinorsKeepsBusOrderAndTheCountFound) {
  model::Cluster c = LoadExample();
  render::MeasuredGpus m;
  std::vector<model::MeasuredGpu> gpus = MeasuredHgx({7, 6, 5, 4, 3, 2, 1, 0});
  for (model::MeasuredGpu& g : gpus) g.numa_node.reset();
  m["gpu001"] = gpus;
  m["gpu002"] = MeasuredHgx({0, 1, 2, 3, 4, 5, 6}, 7);
  std::string gres = GresWith(c, m);
  std::vector<std::string> want = {"NodeName=gpu[003-004] Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-55",
                                   "NodeName=gpu[003-004] Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=56-111"};
  for (int minor = 7; minor >= 0; --minor) want.push_back(fmt::format("NodeName=gpu001 Name=gpu Type=h200 File=/dev/nvidia{}", minor));
  want.push_back("NodeName=gpu002 Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-55");
  want.push_back("NodeName=gpu002 Name=gpu Type=h200 File=/dev/nvidia[4-6] Cores=56-111");
  EXPECT_EQ(Settings(gres), want) << gres;
  EXPECT_NE(gres.find("# The inventory says 8: slurmd offers the 7 found, and slurmctld drains the node"),
            std::string::npos)
      << gres;

  // AutoDetect=nvml: slurmd measures for itself, so the measurements change nothing.
  c.software.scheduler.gres_autodetect_nvml = true;
  gres = GresWith(c, m);
  EXPECT_EQ(Settings(gres),
            (std::vector<std::string>{"AutoDetect=nvml", "NodeName=gpu[001-004] Name=gpu Type=h200 Count=8"}))
      << gres;
}

TEST(RenderSlurm, AddressesThatDoNotFoldInStepGetALineEach) {
  model::Cluster c = LoadExample();
  // gpu001 -> .14 ... gpu004 -> .11: folding both lists would pair gpu001 with .11.
  for (model::Node& n : c.nodes) {
    if (n.name == "gpu001") n.address = "198.18.0.14";
    if (n.name == "gpu004") n.address = "198.18.0.11";
  }
  std::string conf = Content(RenderOrDie(c), "/etc/slurm/slurm.conf");
  std::vector<std::string> lines = LinesStartingWith(conf, "NodeName=");
  ASSERT_EQ(lines.size(), 4u) << conf;
  EXPECT_EQ(lines[0].rfind("NodeName=gpu001 NodeAddr=198.18.0.14 Gres=gpu:h200:8 ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[3].rfind("NodeName=gpu004 NodeAddr=198.18.0.11 ", 0), 0u) << lines[3];
}

TEST(RenderSlurm, NamesAsAddressesNeedNoNodeAddr) {
  model::Cluster c = LoadExample();
  for (model::Node& n : c.nodes) n.address = n.name;
  std::string conf = Content(RenderOrDie(c), "/etc/slurm/slurm.conf");
  EXPECT_TRUE(HasLine(conf, "SlurmctldHost=head01"));
  EXPECT_EQ(LinesStartingWith(conf, "NodeName=gpu[001-004] Gres=gpu:h200:8 ").size(), 1u) << conf;
}

TEST(RenderSlurm, ReservedResourcesBecomeCoreSpecAndMemSpec) {
  model::Cluster c = LoadExample();
  c.software.scheduler.reserved_cpus = 6;                    // 3 cores at 2 threads each
  c.software.scheduler.reserved_memory_bytes = 16.0 * (1 << 30);  // 16384 MiB
  std::string conf = Content(RenderOrDie(c), "/etc/slurm/slurm.conf");
  EXPECT_EQ(LinesStartingWith(conf, "NodeName="),
            std::vector<std::string>{"NodeName=gpu[001-004] NodeAddr=198.18.0.[11-14] Gres=gpu:h200:8 CPUs=224 Sockets=2 "
                                     "CoresPerSocket=56 ThreadsPerCore=2 RealMemory=1811981 CoreSpecCount=3 "
                                     "MemSpecLimit=16384 State=UNKNOWN"});
  // (1811981 - 16384) / 8; (224 - 3 cores x 2 threads) / 8
  EXPECT_EQ(LinesStartingWith(conf, "PartitionName="),
            std::vector<std::string>{
                "PartitionName=gpu Nodes=gpu[001-004] Default=YES MaxTime=7-00:00:00 DefMemPerGPU=224449 "
                "DefCpuPerGPU=27 State=UP"});
  std::string job = Content(RenderOrDie(c), "/etc/gpuforge/jobs/train.sbatch");
  EXPECT_TRUE(HasLine(job, "#SBATCH --cpus-per-task=218")) << job;
}

TEST(RenderSlurm, MaxTimeInSlurmFormat) {
  model::Cluster c = LoadExample();
  c.software.scheduler.partitions[0].max_time_s = 90 * 60 + 0.5;  // 1 h 30 min and a bit
  c.software.scheduler.partitions.push_back(model::Partition{"long", {"gpu003", "gpu004"}, false, std::nullopt});
  std::string conf = Content(RenderOrDie(c), "/etc/slurm/slurm.conf");
  EXPECT_EQ(LinesStartingWith(conf, "PartitionName="),
            (std::vector<std::string>{
                "PartitionName=gpu Nodes=gpu[001-004] Default=YES MaxTime=0-01:30:01 DefMemPerGPU=226497 "
                "DefCpuPerGPU=28 State=UP",
                "PartitionName=long Nodes=gpu[003-004] Default=NO MaxTime=UNLIMITED DefMemPerGPU=226497 "
                "DefCpuPerGPU=28 State=UP"}));
  // An unlimited partition: backfill looks as far as Slurm lets it, 30 days.
  EXPECT_TRUE(HasLine(conf, "SchedulerParameters=bf_window=43200,bf_resolution=1800")) << conf;
}

// bf_window is the longest MaxTime in minutes (rounded up), never below Slurm's default day.
TEST(RenderSlurm, BackfillWindowCoversTheLongestMaxTime) {
  model::Cluster c = LoadExample();
  c.software.scheduler.partitions[0].max_time_s = 30 * 60;
  EXPECT_TRUE(HasLine(Content(RenderOrDie(c), "/etc/slurm/slurm.conf"), "SchedulerParameters=bf_window=1440"));
  c.software.scheduler.partitions[0].max_time_s = 2 * 86400 + 1;  // 2 days and a second: 2881 minutes
  c.software.scheduler.partitions.push_back(model::Partition{"short", {"gpu001"}, false, 3600.0});
  EXPECT_TRUE(HasLine(Content(RenderOrDie(c), "/etc/slurm/slurm.conf"),
                      "SchedulerParameters=bf_window=2881,bf_resolution=180"));
  c.software.scheduler.partitions[0].max_time_s = 400.0 * 86400;  // beyond Slurm's 30-day maximum
  EXPECT_TRUE(HasLine(Content(RenderOrDie(c), "/etc/slurm/slurm.conf"),
                      "SchedulerParameters=bf_window=43200,bf_resolution=1800"));
}

// DefCpuPerGPU: the smallest share of CPUs (less CoreSpecCount) per GPU over the partition's
// nodes; left out when a node has no CPU layout or less than one CPU per GPU.
TEST(RenderSlurm, DefCpuPerGpuFromTheSmallestNode) {
  model::Cluster c = LoadExample();
  c.software.scheduler.reserved_cpus = 6;  // 3 cores of 2 threads: 218 CPUs for 8 GPUs
  EXPECT_NE(Content(RenderOrDie(c), "/etc/slurm/slurm.conf").find(" DefCpuPerGPU=27 "), std::string::npos);
  c = LoadExample();
  for (model::Profile& p : c.profiles) p.cpu.cores_per_socket = 0;
  for (const std::string& line : LinesStartingWith(Content(RenderOrDie(c), "/etc/slurm/slurm.conf"), "PartitionName=")) {
    EXPECT_EQ(line.find("DefCpuPerGPU"), std::string::npos) << line;
  }
}

TEST(RenderSlurm, AbsurdQuantitiesStayIntegers) {
  // Whatever the quantities, the integers Slurm reads stay integers (and UBSan stays quiet).
  model::Cluster c = LoadExample();
  for (model::Profile& p : c.profiles) p.memory_bytes = 1e300;
  c.software.scheduler.reserved_memory_bytes = 1e300;
  c.software.scheduler.partitions[0].max_time_s = 1e300;
  std::string conf = Content(RenderOrDie(c), "/etc/slurm/slurm.conf");
  EXPECT_EQ(LinesStartingWith(conf, "NodeName=gpu[001-004] ").size(), 1u) << conf;
  EXPECT_NE(conf.find(" RealMemory=9007199254740992 MemSpecLimit=9007199254740992 "), std::string::npos) << conf;
  EXPECT_EQ(LinesStartingWith(conf, "PartitionName="),
            std::vector<std::string>{
                "PartitionName=gpu Nodes=gpu[001-004] Default=YES MaxTime=UNLIMITED DefCpuPerGPU=28 State=UP"});
}

// --- The job script is shell: the worst values the loader lets through stay data ---------------

// Every character CheckSafeValue allows that a shell treats specially somewhere (~ at the start
// of a word, % ^ = + , : @ in expansions), and a partition name with every character names allow.
constexpr const char* kWorstValues = R"(version: 1
cluster: {name: w}
profiles:
  gpu:
    gpus: {model: H200, count: 4}
    cpu: {model: x, sockets: 1, cores_per_socket: 8, threads_per_core: 1}
    memory: 64GiB
nodes:
  - {name: ctl, address: 10.0.0.1, profile: gpu, role: controller}
  - {name: "n[1-2]", address: "10.0.0.[2-3]", profile: gpu}
software:
  nccl:
    env:
      NCCL_IB_HCA: "~root%^=+,-./:@_"
      NCCL_SOCKET_IFNAME: "=eth0"
      NCCL_DEBUG: INFO
      NCCL_X_: "%s%n~-"
  scheduler:
    kind: slurm
    controller: ctl
    partitions:
      - {name: "Z.z-9_", nodes: "n[1-2]", default: true, max_time: 30min}
)";

bool RunScript(const fs::path& script, const fs::path& stubs, const std::string& args, std::string* out) {
  std::string cmd = fmt::format(
      "env -i PATH={}:/usr/bin:/bin HOME=/nonexistent SLURM_JOB_NODELIST='n[1-2]' SLURM_JOB_NUM_NODES=2 "
      "SLURM_JOB_ID=77 SLURM_CPUS_PER_TASK=8 bash {} {} 2>&1",
      stubs.string(), script.string(), args);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(RenderSlurm, JobScriptKeepsTheWorstAllowedValuesAsData) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash to run the script with";
  render::Options o = TestOptions();
  o.inventory_label = "evil\nrm -rf /tmp/x";  // a label with a newline must stay in its comment
  render::Output out = RenderOrDie(LoadYaml(kWorstValues), o);
  const render::RenderedFile* f = Find(out, "", "/etc/gpuforge/jobs/train.sbatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Lines(f->content)[1].rfind("# Generated by gpuforge from evil?rm -rf /tmp/x ", 0), 0u) << f->content;
  EXPECT_TRUE(HasLine(f->content, "#SBATCH --partition=Z.z-9_"));
  EXPECT_TRUE(HasLine(f->content, "#SBATCH --time=0-00:30:00"));
  EXPECT_TRUE(HasLine(f->content, "export NCCL_DEBUG='INFO'")) << "the inventory sets it, so it is exported";

  // Run it for real with stand-ins for scontrol, srun and torchrun that print what they got.
  char tmpl[] = "/tmp/gpuforge-sbatch-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  fs::path dir = tmpl;
  fs::path stubs = dir / "bin";
  fs::create_directories(stubs);
  auto stub = [&](const char* name, const char* body) {
    std::ofstream(stubs / name) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(stubs / name, fs::perms::owner_all);
  };
  stub("scontrol", "[ \"$1 $2 $3\" = 'show hostnames n[1-2]' ] && printf 'n1\\nn2\\n'");
  // srun prints its own options (up to the program) and runs the program with the rest.
  stub("srun",
       "while [ \"${1#-}\" != \"$1\" ]; do printf 'srun=%s\\n' \"$1\"; shift; done; exec \"$@\"");
  stub("torchrun",
       "for a in \"$@\"; do printf 'arg=%s\\n' \"$a\"; done; env | grep '^NCCL_' | sort | sed 's/^/env=/'");
  fs::path script = dir / "train.sbatch";
  std::ofstream(script, std::ios::binary) << f->content;

  std::string result;
  ASSERT_TRUE(RunScript(script, stubs, "", &result)) << result;
  EXPECT_EQ(result,
            "srun=--cpus-per-task=8\n"  // the batch step's SLURM_CPUS_PER_TASK, passed on
            "srun=--kill-on-bad-exit=1\n"
            "arg=--nnodes=2\n"
            "arg=--nproc_per_node=4\n"
            "arg=--rdzv_id=77\n"
            "arg=--rdzv_backend=c10d\n"
            "arg=--rdzv_endpoint=n1:29500\n"
            "arg=train.py\n"
            "arg=--config\n"
            "arg=config.yaml\n"
            "env=NCCL_DEBUG=INFO\n"
            "env=NCCL_IB_HCA==~root%^=+,-./:@_\n"  // exact match (#13 part 4)

            "env=NCCL_SOCKET_IFNAME==eth0\n"
            "env=NCCL_X_=%s%n~-\n");
  result.clear();
  ASSERT_TRUE(RunScript(script, stubs, "my.py --lr 1e-4", &result)) << result;
  EXPECT_NE(result.find("arg=my.py\narg=--lr\narg=1e-4\nenv="), std::string::npos) << result;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// NCCL_NET=IB on IB and RoCE compute networks only, and never over the inventory's own value.
TEST(RenderSlurm, JobScriptForcesTheIbTransportOnRdmaNetworksOnly) {
  const std::string base = std::string(kWorstValues) + "networks:\n  fab: {role: compute, kind: KIND, rate: 400Gb/s}\n";
  auto script = [&](const std::string& kind, const std::string& extra_env) {
    std::string yaml = base;
    yaml.replace(yaml.find("KIND"), 4, kind);
    if (!extra_env.empty()) yaml.replace(yaml.find("      NCCL_DEBUG: INFO\n"), 0, extra_env);
    return Content(RenderOrDie(LoadYaml(yaml)), "/etc/gpuforge/jobs/train.sbatch");
  };
  EXPECT_EQ(LinesStartingWith(script("infiniband", ""), "export NCCL_NET"), std::vector<std::string>{"export NCCL_NET=IB"});
  EXPECT_EQ(LinesStartingWith(script("roce", ""), "export NCCL_NET"), std::vector<std::string>{"export NCCL_NET=IB"});
  EXPECT_TRUE(LinesStartingWith(script("ethernet", ""), "export NCCL_NET").empty());
  EXPECT_TRUE(LinesStartingWith(Content(RenderOrDie(LoadYaml(kWorstValues)), "/etc/gpuforge/jobs/train.sbatch"),
                                "export NCCL_NET")
                  .empty())
      << "no compute network: nothing to force";
  EXPECT_EQ(LinesStartingWith(script("infiniband", "      NCCL_NET: Socket\n"), "export NCCL_NET"),
            std::vector<std::string>{"export NCCL_NET='Socket'"});
}

// Without a CPU layout there is no --cpus-per-task for sbatch, so srun does not pass one either
// (SLURM_CPUS_PER_TASK would be unset under set -u).
TEST(RenderSlurm, JobScriptWithoutCpuLayoutPassesNoCpusPerTask) {
  std::string yaml = kWorstValues;
  const std::string cpu = "    cpu: {model: x, sockets: 1, cores_per_socket: 8, threads_per_core: 1}\n";
  yaml.replace(yaml.find(cpu), cpu.size(), "");
  std::string text = Content(RenderOrDie(LoadYaml(yaml)), "/etc/gpuforge/jobs/train.sbatch");
  EXPECT_TRUE(LinesStartingWith(text, "#SBATCH --cpus-per-task").empty()) << text;
  EXPECT_EQ(LinesStartingWith(text, "srun "), std::vector<std::string>{"srun --kill-on-bad-exit=1 torchrun \\"});
}

TEST(RenderSlurm, JobScriptNeedsANodeWithGpus) {
  std::string yaml = kWorstValues;
  yaml.replace(yaml.find("    gpus: {model: H200, count: 4}\n"), std::string("    gpus: {model: H200, count: 4}\n").size(), "");
  render::Output out = RenderOrDie(LoadYaml(yaml));
  EXPECT_EQ(Find(out, "", "/etc/gpuforge/jobs/train.sbatch"), nullptr);
  bool skipped = false;
  for (const render::Skip& s : out.skipped) skipped = skipped || s.path == "/etc/gpuforge/jobs/train.sbatch";
  EXPECT_TRUE(skipped);
  // Without GPUs there is no Gres= and no DefMemPerGPU.
  for (const std::string& line : Settings(Content(out, "/etc/slurm/slurm.conf"))) {
    EXPECT_EQ(line.find("Gres="), std::string::npos) << line;
    EXPECT_EQ(line.find("DefMemPerGPU"), std::string::npos) << line;
  }
}

// software.scheduler.health_check (#16 part 5): without it, no HealthCheck line and no program;
// with it, slurm.conf's three lines and, on each slurmd node only, a program with that node's
// inventory name that runs the agent apply installs against the files plan pushes.
TEST(RenderSlurm, HealthCheckOnlyWhenTheInventoryAsks) {
  render::Output none = RenderOrDie(LoadYaml(kTwoTier));
  EXPECT_EQ(Content(none, "/etc/slurm/slurm.conf").find("HealthCheck"), std::string::npos);
  for (const render::RenderedFile& f : none.files) EXPECT_NE(f.path, plan::kHealthCheckPath) << f.node;

  std::string yaml = kTwoTier;
  yaml += "    health_check: {interval: 2min, node_state: [idle, cycle, idle]}\n";
  render::Output out = RenderOrDie(LoadYaml(yaml));
  const std::string conf = Content(out, "/etc/slurm/slurm.conf");
  EXPECT_EQ(LinesStartingWith(conf, "HealthCheck"),
            (std::vector<std::string>{"HealthCheckProgram=/usr/local/lib/gpuforge/healthcheck", "HealthCheckInterval=120",
                                      "HealthCheckNodeState=IDLE,CYCLE"}));
  for (const char* node : {"ctl1", "login1"}) EXPECT_EQ(Find(out, node, std::string(plan::kHealthCheckPath)), nullptr) << node;
  for (const char* node : {"gpu01", "gpu02", "gpu03", "gpu04"}) {
    const render::RenderedFile* f = Find(out, node, std::string(plan::kHealthCheckPath));
    ASSERT_NE(f, nullptr) << node;
    EXPECT_EQ(f->mode, "0755");
    EXPECT_TRUE(f->content.starts_with("#!/bin/sh\n")) << f->content;
    // The paths plan pushes the agent, the inventory and the pass marks to (a changed one in
    // either place fails here).
    EXPECT_EQ(LinesStartingWith(f->content, "exec "),
              std::vector<std::string>{fmt::format("exec {} --color never validate {} --local --nodes '{}' --health "
                                                   "--drain-failed",
                                                   plan::kAgentPath, plan::kNodeInventoryPath, node)});
    EXPECT_EQ(LinesStartingWith(f->content, "GPUFORGE_VALIDATION_DATA="),
              std::vector<std::string>{fmt::format("GPUFORGE_VALIDATION_DATA={}", plan::kNodeModelTablePath)});
  }
  // A plain `sh -n` parse of the program as rendered.
  const render::RenderedFile* g = Find(out, "gpu01", std::string(plan::kHealthCheckPath));
  ASSERT_NE(g, nullptr);
  char tmpl[] = "/tmp/gpuforge-healthcheck-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, g->content.data(), g->content.size()), static_cast<ssize_t>(g->content.size()));
  ::close(fd);
  const int rc = std::system(fmt::format("sh -n {}", tmpl).c_str());
  ::unlink(tmpl);
  EXPECT_EQ(rc, 0);
}

TEST(RenderSlurm, HealthCheckRefusesWhatSlurmCannotHold) {
  for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
           {"{interval: 0s}", "'interval' in software.scheduler.health_check must be whole seconds from 1s to 65535s"},
           {"{interval: 19h}", "'interval' in software.scheduler.health_check must be whole seconds from 1s to 65535s"},
           {"{interval: 1.5s}", "'interval' in software.scheduler.health_check must be whole seconds from 1s to 65535s"},
           {"{node_state: [idle]}", "missing"},
           {"{interval: 5min, node_state: [drained]}", "node_state 'drained' is not one of alloc, any, cycle, idle, mixed"},
       }) {
    std::string yaml = std::string(kTwoTier) + "    health_check: " + value + "\n";
    auto loaded = inventory::LoadString(yaml, "slurm_test.yaml");
    EXPECT_FALSE(loaded.ok()) << value;
    EXPECT_NE(loaded.FormatDiagnostics().find(why), std::string::npos) << value << "\n" << loaded.FormatDiagnostics();
  }
}

// --- Configless (docs/render.md, "Configless") ------------------------------------------------

// A controller, a login node and `count` GPU nodes with their own addresses.
std::string ConfiglessYaml(int count) {
  return fmt::format(R"(version: 1
cluster: {{name: Big}}
profiles:
  gpu:
    gpus: {{model: H200, count: 8}}
    cpu: {{model: x, sockets: 2, cores_per_socket: 48, threads_per_core: 2}}
    memory: 1TiB
  head:
    cpu: {{model: x, sockets: 1, cores_per_socket: 16, threads_per_core: 2}}
    memory: 256GB
nodes:
  - {{name: ctl1, address: 10.0.0.2, profile: head, role: controller}}
  - {{name: login1, address: 10.0.0.3, profile: head, role: login}}
  - {{name: "gpu[001-{:03}]", address: "10.0.1.[1-{}]", profile: gpu}}
software:
  scheduler:
    kind: slurm
    controller: ctl1
)",
                     count, count);
}

// Slurm's configuration files and the configless drop-in; the DCGM job-mapping scripts in
// prolog.d/epilog.d are programs slurmd runs on the node, not configuration it could fetch.
bool SlurmConfiguration(const render::RenderedFile& f) {
  if (f.path.starts_with("/etc/slurm/prolog.d/") || f.path.starts_with("/etc/slurm/epilog.d/")) return false;
  return f.path.starts_with("/etc/slurm/") || f.path.starts_with("/etc/systemd/system/slurmd.service.d/");
}

std::vector<std::string> PathsOf(const render::Output& out, const std::string& node) {
  std::vector<std::string> paths;
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && SlurmConfiguration(f)) paths.push_back(f.path);
  }
  return paths;
}

constexpr const char* kDropIn = "/etc/systemd/system/slurmd.service.d/gpuforge-configless.conf";

TEST(RenderSlurm, AtTheThresholdEveryNodeKeepsItsFiles) {
  render::Output out = RenderOrDie(LoadYaml(ConfiglessYaml(128)));
  EXPECT_FALSE(HasLine(Content(out, "/etc/slurm/slurm.conf"), "SlurmctldParameters=enable_configless"));
  EXPECT_EQ(PathsOf(out, "gpu128"), (std::vector<std::string>{"/etc/slurm/cgroup.conf", "/etc/slurm/gres.conf",
                                                              "/etc/slurm/job_container.conf", "/etc/slurm/slurm.conf"}));
  EXPECT_EQ(PathsOf(out, "ctl1"), std::vector<std::string>{"/etc/slurm/slurm.conf"});
}

TEST(RenderSlurm, AboveTheThresholdSlurmdFetchesItsConfiguration) {
  render::Output out = RenderOrDie(LoadYaml(ConfiglessYaml(129)));
  const std::string conf = Content(out, "/etc/slurm/slurm.conf");
  EXPECT_TRUE(HasLine(conf, "SlurmctldParameters=enable_configless")) << conf;
  // A slurmd node holds no Slurm file, only the drop-in that points slurmd at the controller.
  EXPECT_EQ(PathsOf(out, "gpu001"), std::vector<std::string>{kDropIn});
  EXPECT_EQ(PathsOf(out, "gpu129"), std::vector<std::string>{kDropIn});
  EXPECT_EQ(Settings(Content(out, kDropIn, "gpu001")),
            (std::vector<std::string>{"[Unit]", "ConditionPathExists=", "[Service]", "ExecStart=",
                                      "ExecStart=/usr/sbin/slurmd -D -s --conf-server 10.0.0.2:6817 $SLURMD_OPTIONS"}));
  EXPECT_EQ(Find(out, "gpu001", kDropIn)->mode, "0644");
  // The controller serves every file slurmd reads, so it holds them all; the login node keeps
  // the slurm.conf its commands read (22.05 has no sackd), and none of slurmd's.
  EXPECT_EQ(PathsOf(out, "ctl1"), (std::vector<std::string>{"/etc/slurm/cgroup.conf", "/etc/slurm/gres.conf",
                                                            "/etc/slurm/job_container.conf", "/etc/slurm/slurm.conf"}));
  EXPECT_EQ(PathsOf(out, "login1"), std::vector<std::string>{"/etc/slurm/slurm.conf"});
  EXPECT_EQ(Content(out, "/etc/slurm/slurm.conf", "login1"), conf);
  EXPECT_EQ(Content(out, "/etc/slurm/gres.conf", "ctl1"), Content(out, "/etc/slurm/gres.conf"));
}

// software.scheduler.configless overrides the node count either way, and the files say why.
TEST(RenderSlurm, TheInventoryTurnsConfiglessOnOrOff) {
  auto with = [](int count, const std::string& value) {
    std::string yaml = ConfiglessYaml(count);
    yaml.replace(yaml.find("    kind: slurm\n"), 16, "    kind: slurm\n    configless: " + value + "\n");
    return RenderOrDie(LoadYaml(yaml));
  };
  render::Output on = with(4, "on");
  EXPECT_EQ(PathsOf(on, "gpu001"), std::vector<std::string>{kDropIn});
  const std::string conf = Content(on, "/etc/slurm/slurm.conf");
  EXPECT_TRUE(HasLine(conf, "SlurmctldParameters=enable_configless")) << conf;
  EXPECT_NE(conf.find("# Configless (software.scheduler.configless: on)"), std::string::npos) << conf;
  EXPECT_NE(Content(on, kDropIn, "gpu001").find("(software.scheduler.configless: on; 4 Slurm nodes)"), std::string::npos);
  render::Output off = with(129, "off");
  EXPECT_FALSE(HasLine(Content(off, "/etc/slurm/slurm.conf"), "SlurmctldParameters=enable_configless"));
  EXPECT_EQ(PathsOf(off, "gpu129").back(), "/etc/slurm/slurm.conf");
  render::Output automatic = with(129, "auto");
  EXPECT_NE(Content(automatic, "/etc/slurm/slurm.conf").find("# Configless (more than 128 Slurm nodes): slurmd fetches"),
            std::string::npos);
  auto bad = inventory::LoadString([] {
    std::string yaml = ConfiglessYaml(4);
    yaml.replace(yaml.find("    kind: slurm\n"), 16, "    kind: slurm\n    configless: yes\n");
    return yaml;
  }(), "bad.yaml");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.FormatDiagnostics().find("bad.yaml:18:17: error: 'configless' in software.scheduler is 'yes'; it must be one of: auto, on, off"), std::string::npos) << bad.FormatDiagnostics();
}

// A controller without slurmd holds slurmd's files only for slurmctld to serve: a change to them
// there is `scontrol reconfigure`, not a restart of a slurmd it does not have (apply would fail
// the controller on "Unit slurmd.service not found"); a slurmd node keeps the restart.
TEST(RenderSlurm, ConfiglessControllerReconfiguresWhereSlurmdNodesRestart) {
  model::Cluster c = LoadYaml(ConfiglessYaml(129));
  render::Output out = RenderOrDie(c);
  auto handlers = [&](const std::string& node) {
    plan::DesiredNode d = plan::DesiredNodeState(c, *c.FindNode(node), plan::DesiredFiles(out, node), {plan::Part::kFiles});
    std::vector<plan::ActualFile> absent(d.files.size());
    Result<plan::NodePlan> p = plan::PlanNode(node, d.files, absent);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    std::map<std::string, std::string> out;
    for (const plan::FileChange& f : p->files) out[f.path] = f.handler;
    return std::pair{out, p->Handlers()};
  };
  auto [ctl, ctl_handlers] = handlers("ctl1");
  for (const char* path : {"/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf", "/etc/slurm/job_container.conf"}) {
    EXPECT_EQ(ctl[path], "scontrol reconfigure") << path;
  }
  EXPECT_EQ(ctl_handlers, std::vector<std::string>{"scontrol reconfigure"});
  // Below the threshold the same files on a slurmd node still restart it.
  model::Cluster small = LoadYaml(ConfiglessYaml(4));
  render::Output small_out = RenderOrDie(small);
  plan::DesiredNode d = plan::DesiredNodeState(small, *small.FindNode("gpu001"), plan::DesiredFiles(small_out, "gpu001"),
                                               {plan::Part::kFiles});
  std::vector<plan::ActualFile> absent(d.files.size());
  Result<plan::NodePlan> p = plan::PlanNode("gpu001", d.files, absent);
  ASSERT_TRUE(p.ok()) << p.error().message;
  for (const plan::FileChange& f : p->files) {
    if (f.path == "/etc/slurm/gres.conf") {
      EXPECT_EQ(f.handler, "systemctl restart slurmd");
    }
  }
}

// The file count grows by one per node above the threshold, not by the files of a copy.
TEST(RenderSlurm, ConfiglessFilesGrowByOnePerNode) {
  auto slurm_files = [](const render::Output& out) {
    std::size_t n = 0;
    for (const render::RenderedFile& f : out.files) {
      n += !f.node.empty() && SlurmConfiguration(f);
    }
    return n;
  };
  std::size_t at_200 = slurm_files(RenderOrDie(LoadYaml(ConfiglessYaml(200))));
  std::size_t at_201 = slurm_files(RenderOrDie(LoadYaml(ConfiglessYaml(201))));
  EXPECT_EQ(at_201, at_200 + 1);
}

}  // namespace
}  // namespace gpuforge
