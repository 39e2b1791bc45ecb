// gpuforge plan and apply as a user runs them, against the local test hosts (tests/testbed):
// real sshd, real files, nothing mocked but nvidia-smi and sysctl (STAND-INs, below).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "testbed/fixture.h"
#include "testbed/standins.h"

namespace gpuforge::apply {
namespace {

class ApplyE2e : public testbed::TestbedTest {
 protected:
  void SetUp() override {
    // STAND-IN: the hosts' nvidia-smi prints a recorded H200's output; the testbed then writes
    // an inventory with one H200 per host, so render produces nccl.conf, sysctl.d and limits.d.
    if (!Bring(testbed::WithStandInGpu(2))) return;
    // STAND-IN: /proc/sys is read-only in a test host (the kernel is this machine's), so
    // `sysctl --system` there only records that it ran.
    for (std::size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(SshOutput(i, "printf '#!/bin/sh\\necho \"$*\" >> /tmp/sysctl-calls\\n' > /usr/local/sbin/sysctl && "
                             "chmod 755 /usr/local/sbin/sysctl && command -v sysctl"),
                "/usr/local/sbin/sysctl\n");
    }
  }

  // Files only: packages, modules and services have their own end-to-end tests
  // (apply_packages_e2e_test.cc) with stand-ins and a local repository.
  testbed::CommandOutput Gpuforge(const std::string& args) {
    return TestbedTest::Gpuforge(fmt::format("{} --only files {}", args, tb_->paths().inventory));
  }
};

TEST_F(ApplyE2e, PlanApplyConvergeAndSecondApplyChangesNothing) {
  const auto& h = tb_->hosts();
  testbed::CommandOutput plan = Gpuforge("plan --detailed-exitcode");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("tb[01-02] (2): "), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("+ /etc/nccl.conf (mode 0644)"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("+ /etc/sysctl.d/90-gpuforge.conf"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("+ /etc/security/limits.d/90-gpuforge.conf"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find(" to change, 0 to destroy."), std::string::npos) << plan.output;

  testbed::CommandOutput refused = Gpuforge("apply");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("stdin is not a terminal"), std::string::npos) << refused.output;
  EXPECT_EQ(SshOutput(0, "test -e /etc/nccl.conf && echo present || echo absent"), "absent\n");

  testbed::CommandOutput apply = Gpuforge("apply --yes");
  EXPECT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_NE(apply.output.find("tb[01-02] (2): applied: "), std::string::npos) << apply.output;
  EXPECT_NE(apply.output.find("ran sysctl --system"), std::string::npos) << apply.output;
  EXPECT_EQ(SshOutput(0, "stat -c '%a %U' /etc/nccl.conf; ls /var/lib/gpuforge; cat /tmp/sysctl-calls"),
            "644 root\njournal.jsonl\nmanaged-files\n--system\n");
  // #28 item 14: the journal, which holds every written file's digest, is root's alone.
  EXPECT_EQ(SshOutput(0, "stat -c '%a %U' /var/lib/gpuforge/journal.jsonl"), "600 root\n");

  testbed::CommandOutput again = Gpuforge("plan --detailed-exitcode");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("tb[01-02] (2): no changes"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("Plan: 0 to add, 0 to change, 0 to destroy."), std::string::npos) << again.output;
  testbed::CommandOutput second = Gpuforge("apply --yes");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("tb[01-02] (2): no changes"), std::string::npos) << second.output;
  // The journal records runs that changed something: still the first run's two lines only, its
  // intent record (before the first write) and its completion record.
  EXPECT_EQ(SshOutput(1, "cat /tmp/sysctl-calls; wc -l < /var/lib/gpuforge/journal.jsonl"), "--system\n2\n");

  // A file changed by hand on one node: only that node changes, and the old bytes are kept.
  SshOutput(0, "printf 'NCCL_DEBUG=TRACE\\n' >> /etc/nccl.conf; chmod 600 /etc/nccl.conf; cp -p /etc/nccl.conf /tmp/hand");
  testbed::CommandOutput drift = Gpuforge("plan --detailed-exitcode");
  EXPECT_EQ(drift.exit_code, 2) << drift.output;
  EXPECT_NE(drift.output.find(h[0].name + " (1): 0 to add, 1 to change"), std::string::npos) << drift.output;
  EXPECT_NE(drift.output.find("~ /etc/nccl.conf (content, mode 0600 -> 0644)"), std::string::npos) << drift.output;
  EXPECT_NE(drift.output.find(h[1].name + " (1): no changes"), std::string::npos) << drift.output;
  testbed::CommandOutput fix = Gpuforge("apply --yes");
  EXPECT_EQ(fix.exit_code, 0) << fix.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(fix.output, m, std::regex("Apply ([0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}): 1 applied")))
      << fix.output;
  EXPECT_EQ(SshOutput(0, fmt::format("cmp /tmp/hand /var/lib/gpuforge/backups/{0}/etc/nccl.conf && "
                               "stat -c %a /var/lib/gpuforge/backups/{0}/etc/nccl.conf && stat -c %a /etc/nccl.conf",
                               m[1].str())),
            "600\n644\n");
  EXPECT_EQ(Gpuforge("plan --detailed-exitcode").exit_code, 0);
}

TEST_F(ApplyE2e, ASecondApplyOnALockedNodeRefusesAndTheOthersGoOn) {
  const auto& h = tb_->hosts();
  SshOutput(1, "mkdir -p /var/lib/gpuforge/lock && echo 'run 20261130T060000Z-00000001 by ops@admin at 06:00' "
         "> /var/lib/gpuforge/lock/holder");
  testbed::CommandOutput apply = Gpuforge("apply --yes");
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  EXPECT_NE(apply.output.find(fmt::format("{} (1): applied: ", h[0].name)), std::string::npos) << apply.output;
  EXPECT_NE(apply.output.find(fmt::format("{} (1): refused: /var/lib/gpuforge/lock is held: run "
                                          "20261130T060000Z-00000001 by ops@admin at 06:00",
                                          h[1].name)),
            std::string::npos)
      << apply.output;
  EXPECT_EQ(SshOutput(1, "test -e /etc/nccl.conf && echo present || echo absent; cat /var/lib/gpuforge/lock/holder"),
            "absent\nrun 20261130T060000Z-00000001 by ops@admin at 06:00\n");
  // Our own lock was released on the node that applied.
  EXPECT_EQ(SshOutput(0, "test -e /var/lib/gpuforge/lock && echo held || echo free"), "free\n");
}

}  // namespace
}  // namespace gpuforge::apply

namespace gpuforge::apply {
namespace {

// Slurm files: `scontrol reconfigure` talks to slurmctld for the whole cluster, so apply runs it
// once (on the controller), not once per node whose slurm.conf changed; slurmd restarts stay per
// node. STAND-INs: systemctl (standins.sh) and an scontrol that records its calls.
TEST_F(ApplyE2e, ClusterHandlersRunOnceOnTheController) {
  const auto& h = tb_->hosts();
  for (std::size_t i = 0; i < h.size(); ++i) {
    ASSERT_TRUE(testbed::InstallStandins(*tb_, i).ok());
    ASSERT_EQ(SshOutput(i, "printf '#!/bin/sh\\necho \"$(hostname) $*\" >> /tmp/scontrol-calls\\n' > /usr/local/sbin/scontrol && "
                     "chmod 755 /usr/local/sbin/scontrol && command -v scontrol"),
              "/usr/local/sbin/scontrol\n");
  }
  std::string inv = Inventory();
  const std::string anchor = "  nccl: {version: \"2.28.9\"}\n";
  ASSERT_NE(inv.find(anchor), std::string::npos);
  inv.replace(inv.find(anchor), anchor.size(),
              anchor + fmt::format("  scheduler: {{kind: slurm, controller: {}, munge_key: {}}}\n", h[1].name,
                                   std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/munge.key.example"));
  const std::string path = WriteFile("slurm.yaml", inv);
  auto run = [&](const std::string& args) { return TestbedTest::Gpuforge(fmt::format("{} --only files {}", args, path)); };
  testbed::CommandOutput plan = run("plan");
  EXPECT_NE(plan.output.find("+ /etc/slurm/slurm.conf"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("reload: scontrol reconfigure"), std::string::npos) << plan.output;
  testbed::CommandOutput apply = run("apply --yes");
  EXPECT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_NE(apply.output.find(fmt::format("ran `scontrol reconfigure` once, on {}", h[1].name)), std::string::npos)
      << apply.output;
  EXPECT_EQ(SshOutput(0, "cat /tmp/scontrol-calls 2>/dev/null; echo -"), "-\n");
  EXPECT_EQ(SshOutput(1, "cat /tmp/scontrol-calls"), h[1].name + " reconfigure\n");
  // gres.conf is read by slurmd at start only: each node restarted its own slurmd.
  for (std::size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(SshOutput(i, "grep -c 'restart slurmd' /var/lib/gpuforge-testbed/systemctl.log"), "1\n") << h[i].name;
  }
}

}  // namespace
}  // namespace gpuforge::apply
