// The whole desired state converged on local test hosts (tests/testbed) as a user runs it:
// real sshd, real apt and dpkg installing real .deb files from a local file repository, real
// files. STAND-INs (tests/testbed/README.md): the packages are small debrepo.sh packages named
// and versioned like NVIDIA's (nvidia-open-580, libnccl2 2.28.9, ...), nvidia-smi prints a
// recorded H200, and systemctl, modprobe and sysctl are standins.sh scripts because a test host
// has no systemd and shares this machine's kernel.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "testbed/fixture.h"
#include "testbed/standins.h"

namespace gpuforge::apply {
namespace {

class ApplyPackagesE2e : public testbed::TestbedTest {
 protected:
  void SetUp() override {
    if (!Bring(testbed::WithStandInGpu(2))) return;
    Result<std::string> repo = testbed::StandinRepo();
    ASSERT_TRUE(repo.ok()) << repo.error().message;
    for (std::size_t i = 0; i < tb_->hosts().size(); ++i) {
      Status st = testbed::InstallStandins(*tb_, i);
      ASSERT_TRUE(st.ok()) << st.error().message;
      st = testbed::CopyRepo(*tb_, i, *repo);
      ASSERT_TRUE(st.ok()) << st.error().message;
      // Automatic NUMA balancing on, as a fresh kernel may have it; the inventory wants it off.
      ASSERT_EQ(SshOutput(i, "sysctl -w kernel.numa_balancing=1 >/dev/null && sysctl -n kernel.numa_balancing"), "1\n");
    }
    // The testbed's inventory (one H200 per host, driver 580.159.04, CUDA 13.0, NCCL 2.28.9)
    // with the local repository added.
    inventory_ = Inventory();
    const std::string anchor = "  nccl: {version: \"2.28.9\"}\n";
    ASSERT_NE(inventory_.find(anchor), std::string::npos) << inventory_;
    inventory_.replace(inventory_.find(anchor), anchor.size(),
                       anchor + "  repositories:\n    - {name: local, url: \"file:/srv/gpuforge-repo\", trusted: true}\n");
    WriteInventory(inventory_);
  }

  void WriteInventory(const std::string& text) { inventory_path_ = WriteFile("packages.yaml", text); }

  testbed::CommandOutput Gpuforge(const std::string& command, const std::string& input, const std::string& rest = "") {
    // A saved plan records its own parts, and rollback has none.
    const bool takes_only = command != "rollback" && input.find(".plan") == std::string::npos;
    return TestbedTest::Gpuforge(fmt::format("{} {} {} {}", command, input, rest, takes_only ? only_ : ""));
  }

  static std::string RunId(const std::string& output) {
    std::smatch m;
    if (!std::regex_search(output, m, std::regex("Apply ([0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}):"))) return "";
    return m[1].str();
  }

  std::string inventory_;
  std::string inventory_path_;
  // The agent (tens of MB in a sanitizer build, hashed on both sides by every plan) is the
  // first test's business; the others leave it out to stay quick.
  std::string only_;
};

TEST_F(ApplyPackagesE2e, FreshHostsConvergeWithPinnedPackagesAndASecondRunChangesNothing) {
  testbed::CommandOutput plan = Gpuforge("plan", inventory_path_, "--detailed-exitcode");
  ASSERT_EQ(plan.exit_code, 2) << plan.output;
  for (const char* line : {"+ /etc/apt/sources.list.d/gpuforge-local.list", "+ package nvidia-open-580 580.159.04",
                           "reboot: reboot to load the new driver (drain first)", "+ package cuda-toolkit-13-0 any version",
                           "+ package libnccl2 2.28.9", "+ package libnccl-dev 2.28.9",
                           "+ package datacenter-gpu-manager-4-cuda13", "~ sysctl kernel.numa_balancing 1 -> 0",
                           "+ service nvidia-persistenced (enable, start)", "+ service nvidia-dcgm (enable, start)",
                           "+ package datacenter-gpu-manager-exporter 4.8.2",
                           "+ service nvidia-dcgm-exporter (enable, start)",
                           "tb[01-02] (2): ", "takes effect: reboot (drain first)",
                           "+ /usr/local/lib/gpuforge/gpuforge (mode 0755)"}) {
    EXPECT_NE(plan.output.find(line), std::string::npos) << line << "\n" << plan.output;
  }
  EXPECT_EQ(SshOutput(0, "dpkg-query -W libnccl2 2>&1 | head -1; test -e /etc/nccl.conf && echo present || echo absent"),
            "dpkg-query: no packages found matching libnccl2\nabsent\n");

  testbed::CommandOutput apply = Gpuforge("apply", inventory_path_, "--yes");
  ASSERT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_NE(apply.output.find("tb[01-02] (2): applied: "), std::string::npos) << apply.output;
  EXPECT_NE(apply.output.find("REBOOT NEEDED (drain first)"), std::string::npos) << apply.output;
  EXPECT_NE(apply.output.find("Reboot needed (drain first): tb[01-02]"), std::string::npos) << apply.output;
  for (std::size_t i = 0; i < 2; ++i) {
    // The pinned versions, though NCCL 2.27.7 and exporter 4.5.2 are in the repository too.
    EXPECT_EQ(SshOutput(i, "dpkg-query -W -f '${Package} ${Version}\\n' nvidia-open-580 libnccl2 libnccl-dev "
                     "datacenter-gpu-manager-4-cuda13 datacenter-gpu-manager-exporter cuda-toolkit-13-0"),
              "cuda-toolkit-13-0 13.0.2-1\ndatacenter-gpu-manager-4-cuda13 1:4.4.1-1\n"
              "datacenter-gpu-manager-exporter 4.8.2-1\n"
              "libnccl-dev 2.28.9-1+cuda13.0\nlibnccl2 2.28.9-1+cuda13.0\nnvidia-open-580 580.159.04-1\n");
    EXPECT_EQ(SshOutput(i, "systemctl is-enabled nvidia-dcgm nvidia-persistenced nvidia-dcgm-exporter; systemctl "
                     "is-active nvidia-dcgm nvidia-persistenced nvidia-dcgm-exporter; sysctl -n kernel.numa_balancing"),
              "enabled\nenabled\nenabled\nactive\nactive\nactive\n0\n");
    EXPECT_EQ(SshOutput(i, "cat /etc/apt/sources.list.d/gpuforge-local.list | grep -v '^#'"),
              "deb [trusted=yes] file:/srv/gpuforge-repo ./\n");
  }
  // The agent: the build's copy without debug information, byte for byte, and it runs there.
  auto local = testbed::RunCommand({"sha256sum", std::string(GPUFORGE_BINARY) + "-agent"});
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(SshOutput(1, "sha256sum < /usr/local/lib/gpuforge/gpuforge | cut -d' ' -f1; stat -c '%a %U' "
                   "/usr/local/lib/gpuforge/gpuforge; /usr/local/lib/gpuforge/gpuforge --version >/dev/null && echo runs"),
            local->output.substr(0, 64) + "\n755 root\nruns\n");
  // apt-get update fetched gpuforge's repository (its index is in apt's lists) in one install
  // transaction.
  EXPECT_EQ(SshOutput(0, "ls /var/lib/apt/lists | grep -c '_srv_gpuforge-repo_._Packages'; "
                   "grep -c '^Commandline: apt-get -q -y install' /var/log/apt/history.log"),
            "1\n1\n");

  testbed::CommandOutput again = Gpuforge("plan", inventory_path_, "--detailed-exitcode");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("Plan: 0 to add, 0 to change, 0 to destroy."), std::string::npos) << again.output;
  testbed::CommandOutput second = Gpuforge("apply", inventory_path_, "--yes");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("tb[01-02] (2): no changes"), std::string::npos) << second.output;
  // Nothing ran the second time: the first run's two journal lines (its intent record and its
  // completion record), one apt transaction.
  EXPECT_EQ(SshOutput(1, "wc -l < /var/lib/gpuforge/journal.jsonl; "
                   "grep -c '^Commandline: apt-get -q -y install' /var/log/apt/history.log"),
            "2\n1\n");
}

TEST_F(ApplyPackagesE2e, APinChangeDowngradesAndAStaleSavedPlanIsRefused) {
  only_ = "--only files,packages,modules,sysctl,services";
  ASSERT_EQ(Gpuforge("apply", inventory_path_, "--yes").exit_code, 0);
  // The inventory moves NCCL back to 2.27.7: a change with its from and to, and --out saves it.
  std::string older = inventory_;
  const std::string pin = "nccl: {version: \"2.28.9\"}";
  older.replace(older.find(pin), pin.size(), "nccl: {version: \"2.27.7\"}");
  WriteInventory(older);
  const std::string saved = tb_->paths().dir + "/nccl.plan";
  testbed::CommandOutput plan = Gpuforge("plan", inventory_path_, "--detailed-exitcode --out " + saved);
  ASSERT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("~ package libnccl2 2.28.9-1+cuda13.0 -> 2.27.7"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("~ package libnccl-dev 2.28.9-1+cuda13.0 -> 2.27.7"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("Saved to " + saved), std::string::npos) << plan.output;

  // Host 0 changes after the plan was made: apply of the saved plan refuses it, carries out the
  // plan on host 1, and leaves host 0 as it was.
  SshOutput(0, "echo '# edited by hand' >> /etc/nccl.conf");
  testbed::CommandOutput stale = Gpuforge("apply", saved, "--yes");
  EXPECT_EQ(stale.exit_code, 1) << stale.output;
  EXPECT_NE(stale.output.find(tb_->hosts()[0].name + " (1): refused: the node changed since the plan was made"),
            std::string::npos)
      << stale.output;
  EXPECT_EQ(SshOutput(0, "dpkg-query -W -f '${Version}\\n' libnccl2; tail -1 /etc/nccl.conf"),
            "2.28.9-1+cuda13.0\n# edited by hand\n");
  EXPECT_EQ(SshOutput(1, "dpkg-query -W -f '${Version}\\n' libnccl2 libnccl-dev"), "2.27.7-1+cuda13.0\n2.27.7-1+cuda13.0\n");

  // An inventory edited after the plan makes the whole plan stale; nothing is touched.
  WriteInventory(older + "\n# a comment is a change too\n");
  testbed::CommandOutput moved = Gpuforge("apply", saved, "--yes");
  EXPECT_EQ(moved.exit_code, 1) << moved.output;
  EXPECT_NE(moved.output.find("the plan is stale: " + inventory_path_ + " changed since the plan was made"),
            std::string::npos)
      << moved.output;
  // A fresh plan, saved and applied, converges host 0 too.
  ASSERT_EQ(Gpuforge("plan", inventory_path_, "--out " + saved).exit_code, 0);
  testbed::CommandOutput fresh = Gpuforge("apply", saved, "--yes");
  EXPECT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_EQ(SshOutput(0, "dpkg-query -W -f '${Version}\\n' libnccl2; tail -1 /etc/nccl.conf | grep -c edited || true"),
            "2.27.7-1+cuda13.0\n0\n");
  EXPECT_EQ(Gpuforge("plan", inventory_path_, "--detailed-exitcode").exit_code, 0);
}

TEST_F(ApplyPackagesE2e, AFileNoLongerRenderedIsRemovedAndRollbackPutsItBack) {
  only_ = "--only files,packages,modules,sysctl,services";
  ASSERT_EQ(Gpuforge("apply", inventory_path_, "--yes").exit_code, 0);
  const std::string list = "/etc/apt/sources.list.d/gpuforge-local.list";
  const std::string before = SshOutput(0, "sha256sum " + list);
  // The repository leaves the inventory (the packages stay at their pins, so no apt is needed).
  WriteInventory(inventory_.substr(0, inventory_.find("  repositories:\n")) +
                 inventory_.substr(inventory_.find("trusted: true}\n") + 15));
  testbed::CommandOutput plan = Gpuforge("plan", inventory_path_, "--detailed-exitcode --diff");
  ASSERT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("- " + list + " (no longer rendered; backed up)"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("-deb [trusted=yes] file:/srv/gpuforge-repo ./"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("Plan: 0 to add, 0 to change, 2 to destroy."), std::string::npos) << plan.output;
  testbed::CommandOutput apply = Gpuforge("apply", inventory_path_, "--yes");
  ASSERT_EQ(apply.exit_code, 0) << apply.output;
  const std::string run = RunId(apply.output);
  ASSERT_FALSE(run.empty()) << apply.output;
  EXPECT_EQ(SshOutput(0, "test -e " + list + " && echo present || echo absent; grep -c gpuforge-local "
                   "/var/lib/gpuforge/managed-files || true"),
            "absent\n0\n");
  EXPECT_EQ(Gpuforge("plan", inventory_path_, "--detailed-exitcode").exit_code, 0);

  testbed::CommandOutput back = Gpuforge("rollback", inventory_path_, "--run " + run + " --yes");
  EXPECT_EQ(back.exit_code, 0) << back.output;
  EXPECT_NE(back.output.find("restored " + list), std::string::npos) << back.output;
  EXPECT_EQ(SshOutput(0, "sha256sum " + list), before);
  EXPECT_EQ(SshOutput(0, "grep -c gpuforge-local /var/lib/gpuforge/managed-files"), "1\n");
  // The restored file is gpuforge's again, so the plan removes it again.
  testbed::CommandOutput replan = Gpuforge("plan", inventory_path_, "--detailed-exitcode");
  EXPECT_EQ(replan.exit_code, 2) << replan.output;
  EXPECT_NE(replan.output.find("2 to destroy."), std::string::npos) << replan.output;
}

}  // namespace
}  // namespace gpuforge::apply
