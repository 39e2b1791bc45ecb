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

}  // namespace
}  // namespace gpuforge::plan
