// `plan --offline` lists exactly what apply would write (#14 "plan = apply"): for every example,
// the offline resources are the render's per-node files (plus the agent), the packages, modules,
// sysctl values and services of the DesiredNode the online plan compares, and nothing else.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>

#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/base/hostlist.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/render/render.h"
#include "remote/fake_session.h"

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

// Every example there is, so a new one is covered without editing this list.
std::vector<std::string> Examples() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples")) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(0, info.param.find('.'));
  for (char& ch : s) ch = ch == '-' ? '_' : ch;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Examples, OfflinePlan, ::testing::ValuesIn(Examples()), TestName);

using remote::testing::FakeConnector;

remote::ExecResult Exited(int status, std::string out = "") {
  remote::ExecResult r;
  r.exit_status = status;
  r.out = std::move(out);
  return r;
}

// The state script's answer for a node that has nothing yet: every file absent, no package,
// no module, sysctl values off, services off; `pending` handlers left by a failed run.
std::string BareNode(const DesiredNode& d, const std::vector<std::string>& pending = {}) {
  std::string s = std::string("os ") + (d.family == OsFamily::kRhel ? "rhel" : "debian") + "\nlike \narch x86_64\n";
  for (std::size_t i = 0; i < d.files.size(); ++i) s += "N\n";
  for (std::size_t i = 0; i < d.packages.size(); ++i) s += "P -\n";
  for (std::size_t i = 0; i < d.modules.size(); ++i) s += "M 0\n";
  for (std::size_t i = 0; i < d.sysctls.size(); ++i) s += "S 1\n";
  for (std::size_t i = 0; i < d.services.size(); ++i) s += "U disabled inactive\n";
  for (const std::string& h : pending) s += "H " + h + "\n";
  return s + "end\n";
}

// The files apply really uploads, as (path, mode, owner), run against a recording fake of a
// bare node, set beside what `plan --offline` lists for that node.
class OfflinePlanIsApply : public ::testing::TestWithParam<std::string> {};

TEST_P(OfflinePlanIsApply, SamePathsModesAndOwnersAsTheUploads) {
  Example e = Load(GetParam());
  auto agent_blob = std::make_shared<Blob>(Blob{"\x7f" "ELF", "0"});
  AgentBinary agent{agent_blob, "x86_64"};
  std::map<std::string, DesiredNode> offline;
  for (const model::Node& n : e.cluster.nodes) {
    Parts parts = AllParts();
    parts.erase(Part::kAgent);
    offline[n.name] = DesiredNodeState(e.cluster, n, DesiredFiles(e.rendered, n.name), parts);
  }
  const std::vector<NodeClass> classes = FoldDesiredState(e.cluster, offline, true);
  for (const model::Node& n : e.cluster.nodes) {
    const DesiredNode pushed = DesiredNodeState(e.cluster, n, DesiredFiles(e.rendered, n.name), AllParts(), &agent);
    FakeConnector fake;
    fake.nodes[n.name].exec = [&pushed](const std::string& cmd) -> Result<remote::ExecResult> {
      return cmd == "sh -s" ? Exited(0, BareNode(pushed)) : Exited(0);
    };
    remote::Target t;
    t.node = n.name;
    auto session = fake.Connect(t);
    ASSERT_TRUE(session.ok());
    const apply::ApplyOptions opts{"20261130T064252Z-0000abcd", "run by t", "t", false, "", std::chrono::seconds(60)};
    const apply::NodeApply done = apply::ApplyNode(**session, pushed, opts);
    ASSERT_EQ(done.state, apply::NodeApply::State::kApplied) << GetParam() << " " << n.name << ": " << done.step << ": " << done.detail;
    std::set<std::tuple<std::string, unsigned, std::string>> uploaded, listed;
    for (const std::string& line : fake.log[n.name]) {
      if (!line.starts_with("upload: ")) continue;
      const std::size_t open = line.rfind(" (");
      const std::string path = line.substr(8, open - 8);
      if (path == apply::kManifest) continue;  // apply's own record of what it manages
      const unsigned mode = static_cast<unsigned>(std::stoul(line.substr(open + 2), nullptr, 8));
      uploaded.insert({path, mode, fake.nodes[n.name].owners.at(path)});
    }
    // The class the folded offline plan shows this node in.
    const NodeClass* mine = nullptr;
    for (const NodeClass& nc : classes) {
      Result<std::vector<std::string>> members = hostlist::Expand(nc.nodes);
      ASSERT_TRUE(members.ok()) << nc.nodes;
      if (std::find(members->begin(), members->end(), n.name) != members->end()) mine = &nc;
    }
    ASSERT_NE(mine, nullptr) << n.name;
    for (const Resource& r : mine->resources) {
      if (r.kind == ResourceKind::kFile) listed.insert({r.id, r.mode, r.owner});
    }
    EXPECT_FALSE(uploaded.empty()) << n.name;
    EXPECT_EQ(listed, uploaded) << GetParam() << " " << n.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, OfflinePlanIsApply, ::testing::ValuesIn(Examples()), TestName);

// A handler a failed run left pending (apply's list under /var/lib/gpuforge) is a change the
// online plan shows and --detailed-exitcode counts, though no file, package or service differs.
TEST(OnlinePlan, APendingHandlerIsAChangeWithNothingElseToDo) {
  DesiredNode d;
  d.files = {{"/etc/sysctl.d/90-gpuforge.conf", "kernel.numa_balancing = 0\n", 0644}};
  const std::string line = fmt::format("F 644 root {} {}\n", d.files[0].content.size(), d.files[0].Sha256());
  const std::string state = "os debian\nlike \narch x86_64\n" + line + "G /etc/sysctl.d/90-gpuforge.conf\n" + line;
  for (const bool pending : {false, true}) {
    FakeConnector fake;
    fake.nodes["gpu01"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
      if (cmd != "sh -s") return Exited(0);
      return Exited(0, state + (pending ? "H sysctl --system\n" : "") + "end\n");
    };
    remote::Target t;
    t.node = "gpu01";
    const std::vector<remote::Target> targets = {t};
    const std::map<std::string, DesiredNode> desired = {{"gpu01", d}};
    const std::vector<apply::NodePlanRead> reads = apply::ReadPlans(fake, targets, desired, apply::ReadPlansOptions{});
    ASSERT_EQ(reads.size(), 1u);
    ASSERT_TRUE(reads[0].plan) << reads[0].error;
    const apply::PlanCounts counts = apply::CountPlans(reads);
    EXPECT_EQ(counts.add + counts.change + counts.destroy, 0u);
    EXPECT_EQ(counts.changed_nodes, pending ? 1u : 0u);
    EXPECT_EQ(reads[0].plan->pending, pending ? std::vector<std::string>{"sysctl --system"} : std::vector<std::string>{});
    EXPECT_EQ(reads[0].plan->Handlers(), pending ? std::vector<std::string>{"sysctl --system"} : std::vector<std::string>{});
  }
}

// The hand-written list this replaced showed a kubelet file render never wrote and left out
// cgroup.conf and topology.conf: pin both directions on the examples that have them.
TEST(OfflinePlan, ShowsTheSlurmFilesRenderWritesAndNoInventedKubeletFile) {
  Example e = Load("h200-ib-32gpu.yaml");
  const model::Node& n = *e.cluster.FindNode("gpu004");
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
  ASSERT_EQ(e.cluster.software.driver_branch, "580");
  const DesiredPackage* nscq = FindPackage(d, "libnvidia-nscq");
  ASSERT_NE(nscq, nullptr) << n.name;
  EXPECT_EQ(nscq->name, "libnvidia-nscq") << "R580 names it without the branch";
  EXPECT_EQ(nscq->version, e.cluster.software.driver_version);
  EXPECT_NE(FindPackage(d, "datacenter-gpu-manager-4-"), nullptr);
  Example k = Load("a100-roce-k8s.yaml");  // PCIe A100s: no NVSwitch
  EXPECT_EQ(FindPackage(DesiredNodeState(k.cluster, FirstGpuNode(k.cluster), {}, AllParts()), "libnvidia-nscq"), nullptr);
}

// #28 item 12: Fabric Manager's and NSCQ's names by driver branch and OS family, as NVIDIA's
// gpu-driver-container installs them ({ubuntu22.04,rhel9}/install.sh since 78fa4ac): R580 and
// later drop the branch on both families; before it RHEL's Fabric Manager is
// nvidia-fabric-manager. NVLink 5 (Blackwell NVSwitch) adds nvlsm and infiniband-diags.
TEST(DesiredPackages, FabricManagerNscqAndNvlsmByBranchFamilyAndNvlinkGeneration) {
  Example e = Load("h200-ib-32gpu.yaml");
  const model::Node& n = FirstGpuNode(e.cluster);
  auto names = [&](const model::Cluster& c, OsFamily family) {
    std::vector<std::string> out;
    for (const DesiredPackage& p : DesiredPackages(c, n, family)) {
      if (p.name.find("fabric") != std::string::npos || p.name.find("nscq") != std::string::npos ||
          p.name == "nvlsm" || p.name == "infiniband-diags") {
        out.push_back(p.name + "=" + p.version);
      }
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(e.cluster, OsFamily::kDebian), (V{"nvidia-fabricmanager=580.95.05", "libnvidia-nscq=580.95.05"}));
  EXPECT_EQ(names(e.cluster, OsFamily::kRhel), (V{"nvidia-fabricmanager=580.95.05", "libnvidia-nscq=580.95.05"}));
  model::Cluster old = e.cluster;
  old.software.driver_branch = "570";
  old.software.driver_version = "570.172.08";
  EXPECT_EQ(names(old, OsFamily::kDebian),
            (V{"nvidia-fabricmanager-570=570.172.08", "libnvidia-nscq-570=570.172.08"}));
  EXPECT_EQ(names(old, OsFamily::kRhel), (V{"nvidia-fabric-manager=570.172.08", "libnvidia-nscq-570=570.172.08"}));
  // The same node with Blackwell NVSwitch GPUs: NVLSM beside Fabric Manager.
  model::Cluster b200 = e.cluster;
  for (model::Profile& p : b200.profiles) {
    for (model::GpuSpec& g : p.gpus) {
      if (g.nvswitch) g.generation = "blackwell";
    }
  }
  EXPECT_EQ(names(b200, OsFamily::kRhel), (V{"nvidia-fabricmanager=580.95.05", "nvlsm=", "infiniband-diags=",
                                             "libnvidia-nscq=580.95.05"}));
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
            "if [ -d /run/systemd/system ]; then systemctl daemon-reload && systemctl try-restart "
            "nvidia-persistenced.service; fi");
  EXPECT_TRUE(IsHandler(r.handler)) << "a pending list naming it is accepted";
}

}  // namespace
}  // namespace gpuforge::plan
