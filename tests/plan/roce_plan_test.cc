// How apply treats the RoCE files (issue #13): the script and unit take a drain-first impact
// with one handler that reloads, enables and restarts the unit; the sysctl file takes the
// existing sysctl --system handler; the offline plan lists the script on RoCE nodes only.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/render/render.h"

namespace gpuforge::plan {
namespace {

TEST(RocePlan, ImpactAndHandlers) {
  const ImpactRule& script = ImpactFor("/usr/local/sbin/gpuforge-roce-setup");
  const ImpactRule& unit = ImpactFor("/etc/systemd/system/gpuforge-roce.service");
  EXPECT_EQ(script.impact, Impact::kRestart);
  EXPECT_EQ(unit.impact, Impact::kRestart);
  EXPECT_EQ(script.handler, unit.handler);
  EXPECT_EQ(script.handler,
            "systemctl daemon-reload && systemctl enable gpuforge-roce.service && systemctl restart gpuforge-roce.service");
  EXPECT_TRUE(IsHandler(script.handler));
  EXPECT_EQ(ImpactFor("/etc/sysctl.d/91-gpuforge-roce.conf").handler, "sysctl --system");
  // Both files changing runs the handler once.
  NodePlan p;
  {
    FileChange f;
    f.path = "/etc/systemd/system/gpuforge-roce.service";
    f.action = Action::kCreate;
    f.mode_from = 0;
    f.mode_to = 0644;
    f.impact = unit.impact;
    f.handler = std::string(unit.handler);
    p.files.push_back(std::move(f));
  }
  {
    FileChange f;
    f.path = "/usr/local/sbin/gpuforge-roce-setup";
    f.action = Action::kChange;
    f.content = true;
    f.mode_from = 0755;
    f.mode_to = 0755;
    f.owner_from = "root";
    f.impact = script.impact;
    f.handler = std::string(script.handler);
    p.files.push_back(std::move(f));
  }
  EXPECT_EQ(p.Handlers(), std::vector<std::string>{std::string(script.handler)});
  EXPECT_EQ(p.WorstImpact(), Impact::kRestart);
}

TEST(RocePlan, OfflinePlanListsTheScriptOnRoceNodes) {
  auto in = inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/a100-roce-k8s.yaml");
  ASSERT_TRUE(in.ok()) << in.FormatDiagnostics();
  Result<render::Output> out = render::Render(*in.cluster, render::Options{});
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto has_script = [&](const char* node) {
    const model::Node& n = *in.cluster->FindNode(node);
    DesiredNode d = DesiredNodeState(*in.cluster, n, DesiredFiles(*out, node), AllParts());
    std::vector<Resource> r = DesiredState(*in.cluster, n, d, false);
    return std::any_of(r.begin(), r.end(), [](const Resource& x) { return x.id == "/usr/local/sbin/gpuforge-roce-setup"; });
  };
  EXPECT_TRUE(has_script("gpu01"));
  EXPECT_FALSE(has_script("k8s-cp01"));
}

}  // namespace
}  // namespace gpuforge::plan
