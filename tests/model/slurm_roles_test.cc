// Slurm roles per node (model/slurm_roles.h) and what plan and render make of them: packages,
// services, the per-node Slurm files and the handlers a change to them asks for.

#include "gpuforge/model/slurm_roles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

// A controller without GPUs, a login node, a storage node and two GPU nodes; `ctl` is in no
// partition here.
constexpr const char* kCluster = R"(version: 1
cluster: {name: roles}
profiles:
  head:
    cpu: {model: x, sockets: 1, cores_per_socket: 8, threads_per_core: 1}
    memory: 64GiB
  gpu:
    gpus: {model: H200, count: 8}
    cpu: {model: x, sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory: 2TB
nodes:
  - {name: ctl, address: 10.0.0.1, profile: head, role: controller}
  - {name: login01, address: 10.0.0.2, profile: head, role: login}
  - {name: nas01, address: 10.0.0.3, profile: head, role: storage}
  - {name: "g[01-02]", address: "10.0.0.[11-12]", profile: gpu}
software:
  scheduler:
    kind: slurm
    controller: ctl
    partitions:
      - {name: gpu, nodes: "g[01-02]", default: true, max_time: 1d}
)";

model::Cluster Load(const std::string& yaml) {
  auto out = inventory::LoadString(yaml, "roles.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

struct Roles {
  bool slurmctld, slurmd, client, munge;
  bool operator==(const Roles&) const = default;
};
Roles Of(const model::Cluster& c, const std::string& node) {
  model::SlurmRole r = model::SlurmRoleOf(c, *c.FindNode(node));
  return {r.slurmctld, r.slurmd, r.client, r.munge};
}

std::vector<std::string> PackageNames(const model::Cluster& c, const std::string& node, plan::OsFamily f) {
  std::vector<std::string> out;
  for (const plan::DesiredPackage& p : plan::DesiredPackages(c, *c.FindNode(node), f)) {
    if (p.reason.starts_with("software.scheduler")) out.push_back(p.name);
  }
  return out;
}

// The Slurm and munge services, in the order plan starts them.
std::vector<std::string> Services(const model::Cluster& c, const std::string& node) {
  std::vector<std::string> out;
  for (const std::string& s : plan::DesiredNodeState(c, *c.FindNode(node), {}, {plan::Part::kServices}).services) {
    if (s == "munge" || s.starts_with("slurm")) out.push_back(s);
  }
  return out;
}

TEST(SlurmRoles, EachNodeRunsWhatItsRoleNeeds) {
  model::Cluster c = Load(kCluster);
  EXPECT_EQ(Of(c, "ctl"), (Roles{true, false, true, true}));
  EXPECT_EQ(Of(c, "login01"), (Roles{false, false, true, true})) << "slurm.conf has no NodeName for a login node";
  EXPECT_EQ(Of(c, "nas01"), (Roles{false, false, false, false}));
  EXPECT_EQ(Of(c, "g01"), (Roles{false, true, true, true}));
  std::vector<std::string> slurmd;
  for (const model::Node* n : model::SlurmdNodes(c)) slurmd.push_back(n->name);
  EXPECT_EQ(slurmd, (std::vector<std::string>{"g01", "g02"}));
}

TEST(SlurmRoles, PackagesAndServicesByRole) {
  model::Cluster c = Load(kCluster);
  using V = std::vector<std::string>;
  EXPECT_EQ(PackageNames(c, "ctl", plan::OsFamily::kDebian), (V{"munge", "slurmctld", "slurm-client"}));
  EXPECT_EQ(PackageNames(c, "login01", plan::OsFamily::kDebian), (V{"munge", "slurm-client"}));
  EXPECT_EQ(PackageNames(c, "nas01", plan::OsFamily::kDebian), V{});
  EXPECT_EQ(PackageNames(c, "g01", plan::OsFamily::kDebian), (V{"munge", "slurmd", "slurm-client"}));
  EXPECT_EQ(PackageNames(c, "ctl", plan::OsFamily::kRhel), (V{"munge", "slurm-slurmctld", "slurm"}));
  EXPECT_EQ(PackageNames(c, "g01", plan::OsFamily::kRhel), (V{"munge", "slurm-slurmd", "slurm"}));
  // munge comes first: the Slurm daemons cannot authenticate without it.
  EXPECT_EQ(Services(c, "ctl"), (V{"munge", "slurmctld"}));
  EXPECT_EQ(Services(c, "login01"), V{"munge"});
  EXPECT_EQ(Services(c, "nas01"), V{});
  EXPECT_EQ(Services(c, "g01"), (V{"munge", "slurmd"}));
}

// The single-node shape: the controller is also in a partition, so it has a NodeName line and
// must run slurmd beside slurmctld, or its node never registers.
TEST(SlurmRoles, AControllerInAPartitionAlsoRunsSlurmd) {
  std::string yaml = kCluster;
  yaml.replace(yaml.find("nodes: \"g[01-02]\", default"), std::string("nodes: \"g[01-02]\"").size(), "nodes: \"ctl,g[01-02]\"");
  model::Cluster c = Load(yaml);
  EXPECT_EQ(Of(c, "ctl"), (Roles{true, true, true, true}));
  EXPECT_EQ(Services(c, "ctl"), (std::vector<std::string>{"munge", "slurmctld", "slurmd"}));
  EXPECT_EQ(PackageNames(c, "ctl", plan::OsFamily::kDebian),
            (std::vector<std::string>{"munge", "slurmctld", "slurmd", "slurm-client"}));
}

TEST(SlurmRoles, NotSlurmNoRoles) {
  std::string yaml = kCluster;
  yaml.replace(yaml.find("kind: slurm"), std::string("kind: slurm").size(), "kind: kubernetes");
  model::Cluster c = Load(yaml);
  EXPECT_FALSE(model::SlurmRoleOf(c, *c.FindNode("g01")).Any());
  EXPECT_TRUE(model::SlurmdNodes(c).empty());
}

// The files each role gets, and so the handlers a first apply runs there: slurmd's own files
// (gres.conf, cgroup.conf, job_container.conf) and their `systemctl restart slurmd` only where
// slurmd runs; slurm.conf (scontrol reconfigure) on every node with a role.
std::vector<std::string> SlurmFiles(const render::Output& out, const std::string& node) {
  std::vector<std::string> paths;
  for (const plan::DesiredFile& f : plan::DesiredFiles(out, node)) {
    if (f.path.starts_with("/etc/slurm/")) paths.push_back(f.path);
  }
  return paths;
}

std::vector<std::string> FirstApplyHandlers(const render::Output& out, const std::string& node) {
  std::vector<plan::DesiredFile> files = plan::DesiredFiles(out, node);
  std::vector<plan::ActualFile> absent(files.size());
  Result<plan::NodePlan> p = plan::PlanNode(node, files, absent);
  EXPECT_TRUE(p.ok());
  return p.ok() ? p->Handlers() : std::vector<std::string>{};
}

TEST(SlurmRoles, SlurmdFilesAndTheirRestartOnlyWhereSlurmdRuns) {
  std::string yaml = kCluster;
  model::Cluster c = Load(yaml);
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  Result<render::Output> out = render::Render(c, o);
  ASSERT_TRUE(out.ok()) << out.error().message;
  using V = std::vector<std::string>;
  // Every slurmd node also gets the DCGM exporter's job-mapping prolog/epilog (monitoring).
  const V all = {"/etc/slurm/cgroup.conf",
                 "/etc/slurm/epilog.d/gpuforge-dcgm-job-map.sh",
                 "/etc/slurm/gres.conf",
                 "/etc/slurm/job_container.conf",
                 "/etc/slurm/prolog.d/gpuforge-dcgm-job-map.sh",
                 "/etc/slurm/slurm.conf"};
  EXPECT_EQ(SlurmFiles(*out, "g01"), all);
  EXPECT_EQ(SlurmFiles(*out, "ctl"), V{"/etc/slurm/slurm.conf"});
  EXPECT_EQ(SlurmFiles(*out, "login01"), V{"/etc/slurm/slurm.conf"});
  EXPECT_EQ(SlurmFiles(*out, "nas01"), V{});
  auto has = [](const V& v, const std::string& h) { return std::find(v.begin(), v.end(), h) != v.end(); };
  EXPECT_TRUE(has(FirstApplyHandlers(*out, "g01"), "systemctl restart slurmd"));
  EXPECT_FALSE(has(FirstApplyHandlers(*out, "ctl"), "systemctl restart slurmd")) << "no slurmd on the controller";
  EXPECT_TRUE(has(FirstApplyHandlers(*out, "ctl"), "scontrol reconfigure"));
  EXPECT_FALSE(has(FirstApplyHandlers(*out, "login01"), "systemctl restart slurmd"));

  // The controller in a partition runs slurmd, so it gets slurmd's files and their restart.
  yaml.replace(yaml.find("nodes: \"g[01-02]\", default"), std::string("nodes: \"g[01-02]\"").size(), "nodes: \"ctl,g[01-02]\"");
  Result<render::Output> both = render::Render(Load(yaml), o);
  ASSERT_TRUE(both.ok()) << both.error().message;
  // The DCGM job-mapping pair too: slurm.conf's Prolog glob must match on every slurmd node.
  EXPECT_EQ(SlurmFiles(*both, "ctl"), all);
  EXPECT_TRUE(has(FirstApplyHandlers(*both, "ctl"), "systemctl restart slurmd"));
}

}  // namespace
}  // namespace gpuforge
