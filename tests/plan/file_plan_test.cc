#include "gpuforge/plan/file_plan.h"

#include <gtest/gtest.h>

#include "gpuforge/base/sha256.h"

namespace gpuforge::plan {
namespace {

ActualFile Regular(std::string_view content, unsigned mode = 0644, std::string owner = "root") {
  return {ActualFile::Kind::kRegular, base::Sha256Hex(content), mode, std::move(owner), content.size()};
}

TEST(PlanImpact, TableClassesEachManagedFile) {
  EXPECT_EQ(ImpactFor("/etc/nccl.conf").impact, Impact::kLive);
  EXPECT_EQ(ImpactFor("/etc/nccl/topo.xml").impact, Impact::kLive);
  EXPECT_EQ(ImpactFor("/etc/sysctl.d/90-gpuforge.conf").handler, "sysctl --system");
  EXPECT_EQ(ImpactFor("/etc/security/limits.d/90-gpuforge.conf").impact, Impact::kNewSessions);
  EXPECT_EQ(ImpactFor("/etc/modules-load.d/90-gpuforge.conf").impact, Impact::kReboot);
  EXPECT_EQ(ImpactFor("/etc/slurm/slurm.conf").handler, "scontrol reconfigure");
  EXPECT_EQ(ImpactFor("/etc/slurm/topology.conf").impact, Impact::kReload);
  EXPECT_EQ(ImpactFor("/etc/slurm/gres.conf").impact, Impact::kRestart);
  EXPECT_EQ(ImpactFor("/etc/slurm/cgroup.conf").note, "drain first, restart slurmd");
  // Configless slurmd's drop-in (render/slurm.cc): a new command line takes a reload and a restart.
  EXPECT_EQ(ImpactFor("/etc/systemd/system/slurmd.service.d/gpuforge-configless.conf").handler,
            "systemctl daemon-reload && systemctl restart slurmd");
  EXPECT_EQ(ImpactFor("/etc/systemd/system/slurmd.service.d/x.conf").impact, Impact::kRestart);
  EXPECT_EQ(ImpactFor("/etc/slurm/slurm.conf.bak").impact, Impact::kLive);  // exact names, not prefixes
  EXPECT_EQ(ImpactFor("/etc/whatever").impact, Impact::kLive);
  EXPECT_EQ(ImpactFor("/etc/whatever").handler, "");
}

TEST(PlanNode, CreateChangeAndNoneWithWhatDiffers) {
  std::vector<DesiredFile> d = {{"/etc/a", "A\n", 0644}, {"/etc/b", "B\n", 0644}, {"/etc/c", "C\n", 0755},
                                {"/etc/d", "D\n", 0644}, {"/etc/sysctl.d/x.conf", "S\n", 0644}};
  std::vector<ActualFile> a = {{}, Regular("old\n"), Regular("C\n", 0644), Regular("D\n", 0644, "ops"),
                               Regular("S\n")};
  Result<NodePlan> p = PlanNode("gpu01", d, a);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->files.size(), 5u);
  EXPECT_EQ(p->files[0].action, Action::kCreate);
  EXPECT_EQ(p->files[1].action, Action::kChange);
  EXPECT_TRUE(p->files[1].content);
  EXPECT_FALSE(p->files[1].mode);
  EXPECT_EQ(p->files[2].action, Action::kChange);
  EXPECT_TRUE(p->files[2].mode);
  EXPECT_FALSE(p->files[2].content);
  EXPECT_EQ(p->files[2].mode_from, 0644u);
  EXPECT_TRUE(p->files[3].owner);
  EXPECT_EQ(p->files[3].owner_from, "ops");
  EXPECT_EQ(p->files[4].action, Action::kNone);
  EXPECT_EQ(p->Count(Action::kCreate), 1u);
  EXPECT_EQ(p->Count(Action::kChange), 3u);
  // The sysctl file is unchanged, so its handler is not needed.
  EXPECT_TRUE(p->Handlers().empty());
  a[4] = Regular("S old\n");
  EXPECT_EQ(PlanNode("gpu01", d, a)->Handlers(), std::vector<std::string>{"sysctl --system"});
}

TEST(PlanNode, RefusesToReplaceALinkOrDirectory) {
  std::vector<DesiredFile> d = {{"/etc/nccl.conf", "x", 0644}};
  std::vector<ActualFile> a(1);
  a[0].kind = ActualFile::Kind::kOther;
  Result<NodePlan> p = PlanNode("gpu01", d, a);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "node gpu01: /etc/nccl.conf is not a regular file (a link or a directory); gpuforge does not replace it");
}

TEST(PlanNode, HandlersRunOnceInTableOrder) {
  std::vector<DesiredFile> d = {{"/etc/slurm/cgroup.conf", "c", 0644}, {"/etc/slurm/gres.conf", "g", 0644},
                                {"/etc/slurm/slurm.conf", "s", 0644}, {"/etc/sysctl.d/90.conf", "k", 0644}};
  std::vector<ActualFile> a(4);
  EXPECT_EQ(PlanNode("n", d, a)->Handlers(),
            (std::vector<std::string>{"sysctl --system", "scontrol reconfigure", "systemctl restart slurmd"}));
}

TEST(PlanDesiredFiles, NodeFilesOnlyInPathOrder) {
  render::Output out;
  out.files = {{"", "/etc/slurm/slurm.conf", "cluster", "0644", "t"},
               {"gpu01", "/etc/sysctl.d/90-gpuforge.conf", "s", "0644", "t"},
               {"gpu01", "/etc/nccl.conf", "n", "0644", "t"},
               {"gpu01", "/usr/local/bin/x.sh", "#!/bin/sh\n", "0755", "t"},
               {"gpu02", "/etc/nccl.conf", "other", "0644", "t"}};
  std::vector<DesiredFile> f = DesiredFiles(out, "gpu01");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].path, "/etc/nccl.conf");
  EXPECT_EQ(f[1].path, "/etc/sysctl.d/90-gpuforge.conf");
  EXPECT_EQ(f[2].mode, 0755u);
  EXPECT_TRUE(DesiredFiles(out, "").empty());
  EXPECT_TRUE(DesiredFiles(out, "gpu0").empty());  // a prefix of a node's name is not that node
  EXPECT_TRUE(DesiredFiles(out, "gpu03").empty());
  ASSERT_EQ(DesiredFiles(out, "gpu02").size(), 1u);
  EXPECT_EQ(DesiredFiles(out, "gpu02")[0].content, "other");
}

TEST(PlanFold, IdenticalPlansFoldUnderAHostlist) {
  std::vector<DesiredFile> d = {{"/etc/a", "A", 0644}};
  std::vector<NodePlan> plans;
  for (const char* n : {"gpu01", "gpu02", "gpu03", "gpu04"}) {
    std::vector<ActualFile> a = {std::string(n) == "gpu03" ? Regular("A") : ActualFile{}};
    plans.push_back(*PlanNode(n, d, a));
  }
  std::vector<FoldedPlan> f = FoldPlans(plans);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].nodes, "gpu[01-02,04]");
  EXPECT_EQ(f[0].count, 3u);
  EXPECT_EQ(f[0].plan->node, "gpu01");
  EXPECT_EQ(f[1].nodes, "gpu03");
  EXPECT_FALSE(f[1].plan->HasChanges());
}

}  // namespace
}  // namespace gpuforge::plan
