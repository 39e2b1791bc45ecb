// `plan --offline` lists exactly what apply would write (#14 "plan = apply"): for every example,
// the offline resources are the render's per-node files (plus the agent), the packages, modules,
// sysctl values and services of the DesiredNode the online plan compares, and nothing else.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/render/render.h"

namespace gpuforge::plan {
namespace {

struct Example {
  model::Cluster cluster;
  render::Output rendered;
};

Example Load(const std::string& name) {
  inventory::LoadOutcome loaded = inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/" + name);
  EXPECT_TRUE(loaded.ok()) << name << ": " << loaded.FormatDiagnostics();
  Example e{*loaded.cluster, {}};
  Result<render::Output> out = render::Render(e.cluster, render::Options{});
  EXPECT_TRUE(out.ok()) << name << ": " << (out.ok() ? "" : out.error().message);
  if (out.ok()) e.rendered = std::move(*out);
  return e;
}

class OfflinePlan : public ::testing::TestWithParam<std::string> {};

TEST_P(OfflinePlan, ListsExactlyTheFilesAndItemsApplyWrites) {
  Example e = Load(GetParam());
  Parts parts = AllParts();
  parts.erase(Part::kAgent);
  std::map<std::string, DesiredNode> desired;
  for (const model::Node& n : e.cluster.nodes) {
    desired[n.name] = DesiredNodeState(e.cluster, n, DesiredFiles(e.rendered, n.name), parts);
  }
  std::size_t listed_nodes = 0;
  for (const NodeClass& nc : FoldDesiredState(e.cluster, desired, true)) listed_nodes += nc.count;
  EXPECT_EQ(listed_nodes, e.cluster.nodes.size());
  for (const model::Node& n : e.cluster.nodes) {
    std::set<std::string> rendered_paths;
    for (const render::RenderedFile& f : e.rendered.files) {
      if (f.node == n.name) rendered_paths.insert(f.path);
    }
    rendered_paths.insert(std::string(kAgentPath));
    std::set<std::string> listed_paths;
    std::size_t items = 0;
    for (const Resource& r : DesiredState(e.cluster, n, desired[n.name], true)) {
      if (r.kind == ResourceKind::kFile) {
        EXPECT_TRUE(listed_paths.insert(r.id).second) << n.name << ": " << r.id << " listed twice";
        EXPECT_FALSE(r.summary.empty()) << r.id;
      } else {
        ++items;
      }
    }
    EXPECT_EQ(listed_paths, rendered_paths) << GetParam() << " " << n.name;
    const DesiredNode& d = desired[n.name];
    EXPECT_EQ(items, d.packages.size() + d.modules.size() + d.sysctls.size() + d.services.size()) << n.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, OfflinePlan,
                         ::testing::Values("h200-ib-32gpu.yaml", "h200-single-node.yaml", "a100-roce-k8s.yaml"),
                         [](const auto& info) {
                           std::string s = info.param.substr(0, info.param.find('.'));
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

// The hand-written list this replaced showed a kubelet file render never wrote and left out
// cgroup.conf and topology.conf: pin both directions on the examples that have them.
TEST(OfflinePlan, ShowsTheSlurmFilesRenderWritesAndNoInventedKubeletFile) {
  Example e = Load("h200-ib-32gpu.yaml");
  const model::Node& n = e.cluster.nodes.back();
  DesiredNode d = DesiredNodeState(e.cluster, n, DesiredFiles(e.rendered, n.name), AllParts());
  std::set<std::string> files;
  for (const Resource& r : DesiredState(e.cluster, n, d, true)) {
    if (r.kind == ResourceKind::kFile) files.insert(r.id);
  }
  EXPECT_TRUE(files.count("/etc/slurm/cgroup.conf")) << n.name;
  EXPECT_FALSE(files.count("/var/lib/kubelet/config.yaml"));
  Example k = Load("a100-roce-k8s.yaml");
  const model::Node& kn = k.cluster.nodes.back();
  DesiredNode kd = DesiredNodeState(k.cluster, kn, DesiredFiles(k.rendered, kn.name), AllParts());
  for (const Resource& r : DesiredState(k.cluster, kn, kd, true)) {
    EXPECT_NE(r.id, "/var/lib/kubelet/config.yaml") << "render writes a drop-in elsewhere";
  }
}

const DesiredPackage* FindPackage(const DesiredNode& d, std::string_view prefix) {
  for (const DesiredPackage& p : d.packages) {
    if (p.name.starts_with(prefix)) return &p;
  }
  return nullptr;
}

const model::Node& FirstGpuNode(const model::Cluster& c) {
  for (const model::Node& n : c.nodes) {
    if (c.ProfileOf(n).gpu_count() > 0) return n;
  }
  return c.nodes.front();
}

// #14 NSCQ: DCGM reads NVSwitch through NSCQ, per driver branch and pinned to the driver.
TEST(DesiredPackages, NvSwitchNodesGetNscqPinnedToTheDriverAlongsideDcgm) {
  Example e = Load("h200-ib-32gpu.yaml");
  const model::Node& n = FirstGpuNode(e.cluster);
  DesiredNode d = DesiredNodeState(e.cluster, n, {}, AllParts());
  const std::string branch = e.cluster.software.driver_branch;
  const DesiredPackage* nscq = FindPackage(d, "libnvidia-nscq-");
  ASSERT_NE(nscq, nullptr) << n.name;
  EXPECT_EQ(nscq->name, "libnvidia-nscq-" + branch);
  EXPECT_EQ(nscq->version, e.cluster.software.driver_version);
  EXPECT_NE(FindPackage(d, "datacenter-gpu-manager-4-"), nullptr);
  Example k = Load("a100-roce-k8s.yaml");  // PCIe A100s: no NVSwitch
  EXPECT_EQ(FindPackage(DesiredNodeState(k.cluster, FirstGpuNode(k.cluster), {}, AllParts()), "libnvidia-nscq-"), nullptr);
}

// #14 GPUDirect: DMA-BUF (open modules, no peermem) by default where it works; peermem with
// its OFED stack when the inventory asks; the rendered file says which.
TEST(DesiredModules, PeermemOnlyWhenGpuDirectUsesItAndTheFileSaysWhich) {
  Example e = Load("h200-ib-32gpu.yaml");
  const model::Node& n = FirstGpuNode(e.cluster);
  DesiredNode d = DesiredNodeState(e.cluster, n, DesiredFiles(e.rendered, n.name), AllParts());
  EXPECT_TRUE(d.modules.empty());
  ASSERT_NE(FindPackage(d, "nvidia-open-"), nullptr) << "DMA-BUF needs the open kernel modules";
  EXPECT_EQ(FindPackage(d, "cuda-drivers-"), nullptr);
  EXPECT_NE(FindPackage(d, "doca-ofed"), nullptr) << "software.rdma.kind doca-ofed is planned";
  auto modules_file = [](const DesiredNode& x) -> std::string {
    for (const DesiredFile& f : x.files) {
      if (f.path == "/etc/modules-load.d/90-gpuforge.conf") return std::string(f.Content());
    }
    return "";
  };
  EXPECT_NE(modules_file(d).find("# GPUDirect RDMA (the NIC reads and writes GPU memory): DMA-BUF (default: open kernel "
                                 "modules"),
            std::string::npos)
      << modules_file(d);
  EXPECT_EQ(modules_file(d).find("\nnvidia-peermem\n"), std::string::npos);

  e.cluster.software.gpudirect = "peermem";
  Result<render::Output> out = render::Render(e.cluster, render::Options{});
  ASSERT_TRUE(out.ok());
  DesiredNode p = DesiredNodeState(e.cluster, n, DesiredFiles(*out, n.name), AllParts());
  EXPECT_EQ(p.modules, std::vector<std::string>{"nvidia-peermem"});
  EXPECT_NE(modules_file(p).find("nvidia-peermem (software.rdma.gpudirect)"), std::string::npos) << modules_file(p);
  EXPECT_NE(modules_file(p).find("\nnvidia-peermem\n"), std::string::npos) << modules_file(p);
}

// #14 persistence mode: the drop-in's handler reloads systemd and restarts the daemon.
TEST(DesiredFiles, PersistencedDropInHasADaemonReloadHandler) {
  const ImpactRule& r = ImpactFor("/etc/systemd/system/nvidia-persistenced.service.d/gpuforge.conf");
  EXPECT_EQ(r.handler,
            "systemctl daemon-reload && systemctl enable nvidia-persistenced.service && systemctl restart "
            "nvidia-persistenced.service");
  EXPECT_TRUE(IsHandler(r.handler)) << "a pending list naming it is accepted";
}

}  // namespace
}  // namespace gpuforge::plan
