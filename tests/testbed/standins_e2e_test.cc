// The STAND-INs apply's end-to-end tests run against, on real test hosts (tests/testbed): the
// flat apt repository of stand-in packages (debrepo.sh) and the stand-in systemctl, modprobe
// and sysctl (standins.sh). These prove what the stand-ins do, not what the real programs do;
// where the real program can be run harmlessly in a host, its answer is compared with the
// stand-in's. Every test SKIPs with the reason where the machine cannot run a testbed.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "testbed/fixture.h"
#include "testbed/standins.h"

namespace gpuforge::testbed {
namespace {

// ---- the tests -------------------------------------------------------------------------------

class StandinsE2e : public TestbedTest {
 protected:
  void SetUp() override {
    std::string why;
    if (!Available(&why)) GTEST_SKIP() << why;
    for (const char* tool : {"dpkg-deb", "dpkg-scanpackages", "tar"}) {
      auto found = RunCommand({"/bin/sh", "-c", fmt::format("command -v {}", tool)});
      if (!found.ok() || found->exit_code != 0) {
        GTEST_SKIP() << tool << " is not installed (dpkg-scanpackages comes with dpkg-dev)";
      }
    }
    Result<std::string> repo = StandinRepo();
    ASSERT_TRUE(repo.ok()) << repo.error().message;
    repo_dir_ = *repo;
    if (!Bring(2)) return;
    // Host 0 gets the stand-ins; host 1 stays as the testbed made it.
    Status installed = InstallStandins(*tb_, 0);
    ASSERT_TRUE(installed.ok()) << installed.error().message;
  }

  std::string repo_dir_;  // the stand-in repository (kPackages) on this machine
};

TEST_F(StandinsE2e, StandinsShadowTheRealToolsForRootAndThroughSudoOnTheirHostOnly) {
  EXPECT_EQ(Out(0, "for p in systemctl modprobe sysctl; do command -v $p; done"),
            "/usr/local/sbin/systemctl\n/usr/local/sbin/modprobe\n/usr/local/sbin/sysctl\n");
  // sudo's secure_path (Debian's /etc/sudoers) starts with /usr/local/sbin as well.
  Result<CommandOutput> sudo = RunCommand(
      tb_->SshArgv(0, "gpuforge",
                   "for p in systemctl modprobe sysctl; do sudo -n sh -c \"command -v $p\"; done"));
  ASSERT_TRUE(sudo.ok()) << sudo.error().message;
  EXPECT_EQ(sudo->output,
            "/usr/local/sbin/systemctl\n/usr/local/sbin/modprobe\n/usr/local/sbin/sysctl\n");
  // Each says what it is.
  EXPECT_EQ(
      Out(0,
          "for p in systemctl modprobe sysctl; do sed -n 2p /usr/local/sbin/$p | cut -c1-16; done"),
      "# STAND-IN for s\n# STAND-IN for m\n# STAND-IN for s\n");
  EXPECT_EQ(Out(0, "stat -f -c %T /sys/module"), "tmpfs\n");

  // The other host, and this machine, keep the real ones.
  EXPECT_EQ(Out(1,
                "command -v sysctl; stat -f -c %T /sys/module; "
                "test -e /usr/local/sbin/systemctl && echo stand-in || echo none"),
            "/usr/sbin/sysctl\nsysfs\nnone\n");
  auto local = RunCommand({"stat", "-f", "-c", "%T", "/sys/module"});
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->output, "sysfs\n");

  // Installing again keeps the state.
  Out(0, "sysctl -qw net.core.somaxconn=777");
  Status again = InstallStandins(*tb_, 0);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(Out(0, "sysctl -n net.core.somaxconn"), "777\n");
}

TEST_F(StandinsE2e, AptUpdatesFromTheLocalRepoOnlyAndInstallsTheVersionAGlobNames) {
  Result<CommandOutput> update = PublishRepo(*tb_, 0, repo_dir_);
  ASSERT_TRUE(update.ok()) << update.error().message;
  ASSERT_EQ(update->exit_code, 0) << update->output;
  EXPECT_NE(update->output.find("file:/srv/gpuforge-repo ./ Packages"), std::string::npos)
      << update->output;
  // Nothing but the file: repository was read (no mirror, no network).
  EXPECT_EQ(update->output.find("debian.org"), std::string::npos) << update->output;
  EXPECT_EQ(update->output.find("http"), std::string::npos) << update->output;

  // Both versions are in the index; with nothing pinned the newer is the candidate.
  EXPECT_EQ(Out(0, "apt-cache madison libnccl2 | cut -d'|' -f2 | tr -d ' '"),
            "2.28.9-1+cuda13.0\n2.27.7-1+cuda13.0\n");

  // apt 2.6 takes a glob (fnmatch: * and ?) after '=': the older version when asked for it...
  EXPECT_EQ(Out(0, fmt::format("{} 'libnccl2=2.27.7-*' >/dev/null 2>&1 && "
                               "dpkg-query -W -f '${{Version}}' libnccl2",
                               kAptInstall)),
            "2.27.7-1+cuda13.0");
  // ...and an upgrade to the one the glob names, though another is in the repository.
  EXPECT_EQ(Out(0, fmt::format("{} 'libnccl2=2.28.9-*' >/dev/null 2>&1 && "
                               "dpkg-query -W -f '${{Version}}' libnccl2",
                               kAptInstall)),
            "2.28.9-1+cuda13.0");
  // Going back down needs --allow-downgrades with -y; the installed version stays.
  CommandOutput down = Ssh(0, fmt::format("{} 'libnccl2=2.27.7-*'", kAptInstall));
  EXPECT_EQ(down.exit_code, 100) << down.output;
  EXPECT_NE(down.output.find("E: Packages were downgraded and -y was used without "
                             "--allow-downgrades."),
            std::string::npos)
      << down.output;
  // The upstream version alone is not a version: the Debian revision (or a glob) is needed.
  CommandOutput bare = Ssh(0, fmt::format("{} libnccl2=2.27.7", kAptInstall));
  EXPECT_EQ(bare.exit_code, 100) << bare.output;
  EXPECT_NE(bare.output.find("E: Version '2.27.7' for 'libnccl2' was not found"), std::string::npos)
      << bare.output;
  EXPECT_EQ(Out(0, "dpkg-query -W -f '${Version}' libnccl2"), "2.28.9-1+cuda13.0");

  // A dependency with an exact version, and what a stand-in package holds.
  EXPECT_EQ(Out(0, fmt::format("{} 'libnccl-dev=2.28.9-*' ibverbs-utils >/dev/null 2>&1 && "
                               "dpkg-query -W -f '${{Package}} ${{Version}}\\n' "
                               "libnccl-dev rdma-core ibverbs-utils",
                               kAptInstall)),
            "ibverbs-utils 2507.0-1\nlibnccl-dev 2.28.9-1+cuda13.0\nrdma-core 2507.0-1\n");
  EXPECT_EQ(Out(0,
                "dpkg -L libnccl2 | grep -v '^/usr/share/doc$\\|^/usr/share$\\|^/usr$\\|^/\\.$'; "
                "head -n 1 /usr/share/doc/libnccl2/STAND-IN"),
            "/usr/share/doc/libnccl2\n/usr/share/doc/libnccl2/STAND-IN\n"
            "This is a gpuforge testbed STAND-IN, not the real libnccl2 package.\n");
  // The other host has neither the repository nor the package.
  EXPECT_EQ(Out(1,
                "test -e /etc/apt/sources.list.d/gpuforge-test.list && echo listed; "
                "dpkg-query -W libnccl2 >/dev/null 2>&1 && echo installed; echo done"),
            "done\n");
}

TEST_F(StandinsE2e, ASlurmdUnitCanStartOnlyOnceItsPackageShipsIt) {
  Result<CommandOutput> update = PublishRepo(*tb_, 0, repo_dir_);
  ASSERT_TRUE(update.ok()) << update.error().message;
  ASSERT_EQ(update->exit_code, 0) << update->output;
  // This machine (every host's lower layer) has Debian's slurmd with its unit, enabled. In this
  // host only, it goes, and slurm-wlm with it (it depends on that exact version).
  Out(0, "dpkg --purge slurm-wlm slurmd >/dev/null");
  CommandOutput start = Ssh(0, "systemctl start slurmd");
  EXPECT_EQ(start.exit_code, 5);
  EXPECT_EQ(start.output, "Failed to start slurmd.service: Unit slurmd.service not found.\n");
  CommandOutput enable = Ssh(0, "systemctl enable --now slurmd");
  EXPECT_EQ(enable.exit_code, 1);
  EXPECT_EQ(enable.output, "Failed to enable unit: Unit file slurmd.service does not exist.\n");
  CommandOutput state = Ssh(0, "systemctl is-enabled slurmd");
  EXPECT_EQ(state.exit_code, 1);
  EXPECT_EQ(state.output,
            "Failed to get unit file state for slurmd.service: No such file or directory\n");

  Out(0, fmt::format("{} slurmd=24.11.6-1 >/dev/null 2>&1", kAptInstall));
  EXPECT_EQ(Out(0, "systemctl enable --now slurmd"),
            "Created symlink /etc/systemd/system/multi-user.target.wants/slurmd.service → "
            "/lib/systemd/system/slurmd.service.\n");
  EXPECT_EQ(Out(0,
                "systemctl is-enabled slurmd; systemctl is-active slurmd; "
                "systemctl show -p ActiveState,UnitFileState slurmd; "
                "readlink /etc/systemd/system/multi-user.target.wants/slurmd.service"),
            "enabled\nactive\nActiveState=active\nUnitFileState=enabled\n"
            "/lib/systemd/system/slurmd.service\n");
  CommandOutput stop =
      Ssh(0, "systemctl disable --now slurmd.service && systemctl is-active slurmd");
  EXPECT_EQ(stop.exit_code, 3);
  EXPECT_EQ(stop.output,
            "Removed \"/etc/systemd/system/multi-user.target.wants/slurmd.service\".\ninactive\n");
  EXPECT_EQ(Out(0, "cat /var/lib/gpuforge-testbed/systemctl.log"),
            "start slurmd\nenable --now slurmd\nis-enabled slurmd\nenable --now slurmd\n"
            "is-enabled slurmd\nis-active slurmd\nshow -p ActiveState,UnitFileState slurmd\n"
            "disable --now slurmd.service\nis-active slurmd\n");

  // The other host keeps this machine's slurmd.
  Result<CommandOutput> here = RunCommand({"dpkg-query", "-W", "-f", "${Version}", "slurmd"});
  ASSERT_TRUE(here.ok());
  EXPECT_EQ(Out(1, "dpkg-query -W -f '${Version}' slurmd 2>/dev/null; true"), here->output);
}

TEST_F(StandinsE2e, SystemctlFaultHooksFailAndHangAUnit) {
  Result<CommandOutput> update = PublishRepo(*tb_, 0, repo_dir_);
  ASSERT_TRUE(update.ok()) << update.error().message;
  Out(0, fmt::format("{} datacenter-gpu-manager-4-cuda13 >/dev/null 2>&1", kAptInstall));
  Out(0, "systemctl start nvidia-dcgm");

  // A fail hook: restart and reload fail and leave the unit failed.
  Out(0, "touch /var/lib/gpuforge-testbed/fail-nvidia-dcgm");
  CommandOutput failed = Ssh(0, "systemctl restart nvidia-dcgm");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.output,
            "Job for nvidia-dcgm.service failed because the control process exited with error "
            "code.\nSee \"systemctl status nvidia-dcgm.service\" and \"journalctl -xeu "
            "nvidia-dcgm.service\" for details.\n");
  CommandOutput is_active = Ssh(0, "systemctl is-active nvidia-dcgm");
  EXPECT_EQ(is_active.exit_code, 3);
  EXPECT_EQ(is_active.output, "failed\n");
  Out(0, "rm /var/lib/gpuforge-testbed/fail-nvidia-dcgm && systemctl start nvidia-dcgm");
  EXPECT_EQ(Out(0, "systemctl reload nvidia-dcgm && systemctl is-active nvidia-dcgm"), "active\n");
  CommandOutput reload = Ssh(0,
                             "touch /var/lib/gpuforge-testbed/fail-nvidia-dcgm; "
                             "systemctl reload nvidia-dcgm");
  EXPECT_EQ(reload.exit_code, 1);
  EXPECT_EQ(reload.output, failed.output);
  Out(0, "rm /var/lib/gpuforge-testbed/fail-nvidia-dcgm && systemctl start nvidia-dcgm");

  // A hang of one second (the file's number): then a timeout, as systemd reports one.
  Out(0, "echo 1 > /var/lib/gpuforge-testbed/hang-nvidia-dcgm");
  CommandOutput hung = Ssh(0, "systemctl restart nvidia-dcgm");
  EXPECT_EQ(hung.exit_code, 1);
  EXPECT_EQ(hung.output,
            "Job for nvidia-dcgm.service failed because a timeout was exceeded.\n"
            "See \"systemctl status nvidia-dcgm.service\" and \"journalctl -xeu "
            "nvidia-dcgm.service\" for details.\n");
  EXPECT_EQ(Out(0,
                "test -e /var/lib/gpuforge-testbed/hanging-nvidia-dcgm && echo hanging; "
                "systemctl is-failed nvidia-dcgm"),
            "hanging\nfailed\n");

  // An empty hang file: still sleeping well after the marker appears (300 s).
  Out(0,
      "rm /var/lib/gpuforge-testbed/hanging-nvidia-dcgm; : > "
      "/var/lib/gpuforge-testbed/hang-nvidia-dcgm");
  EXPECT_EQ(
      Out(0,
          "systemctl start nvidia-dcgm </dev/null >/dev/null 2>&1 & pid=$!; "
          "for i in $(seq 50); do test -e /var/lib/gpuforge-testbed/hanging-nvidia-dcgm && break; "
          "sleep 0.1; done; sleep 2; kill -0 $pid && echo still-starting; kill $pid"),
      "still-starting\n");
}

TEST_F(StandinsE2e, ModprobeMakesAndRemovesModuleDirectories) {
  // The kernel's own modules are there; the tmpfs is this host's alone.
  Result<CommandOutput> local = RunCommand({"/bin/sh", "-c", "ls /sys/module | head -n 3"});
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(Out(0, "ls /sys/module | head -n 3"), local->output);
  // Where this machine's kernel has NVIDIA's modules, the host starts without them.
  Out(0,
      "test \"$(stat -f -c %T /sys/module)\" = tmpfs && rm -rf /sys/module/nvidia "
      "/sys/module/nvidia_peermem");

  EXPECT_EQ(Out(0,
                "modprobe nvidia-peermem && test -d /sys/module/nvidia_peermem && echo loaded; "
                "cat /sys/module/nvidia_peermem/initstate"),
            "loaded\nlive\n");
  EXPECT_EQ(Out(1, "test -d /sys/module/nvidia_peermem && echo loaded; echo done"), "done\n");

  // Options from modprobe.d and the command line become parameters, at load time only.
  EXPECT_EQ(
      Out(0,
          "mkdir -p /etc/modprobe.d && "
          "echo 'options nvidia NVreg_EnableStreamMemOPs=1' > /etc/modprobe.d/gpuforge.conf && "
          "modprobe nvidia NVreg_RegistryDwords=RMNvLinkDisable=0 && "
          "cd /sys/module/nvidia/parameters && grep -r . | sort"),
      "NVreg_EnableStreamMemOPs:1\nNVreg_RegistryDwords:RMNvLinkDisable=0\n");

  EXPECT_EQ(Out(0, "modprobe -r nvidia_peermem && test -d /sys/module/nvidia_peermem || echo gone"),
            "gone\n");
  CommandOutput again = Ssh(0, "modprobe -r nvidia-peermem");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.output, "modprobe: FATAL: Module nvidia_peermem is not in kernel.\n");

  Out(0, "echo nvidia-fs > /var/lib/gpuforge-testbed/no-such-modules");
  Result<CommandOutput> release = RunCommand({"uname", "-r"});
  ASSERT_TRUE(release.ok());
  CommandOutput missing = Ssh(0, "modprobe nvidia_fs");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(
      missing.output,
      "modprobe: FATAL: Module nvidia_fs not found in directory /lib/modules/" + release->output);
  EXPECT_EQ(Out(0,
                "test -d /sys/module/nvidia_fs || echo absent; cat "
                "/var/lib/gpuforge-testbed/modprobe.log"),
            "absent\nnvidia-peermem\nnvidia NVreg_RegistryDwords=RMNvLinkDisable=0\n"
            "-r nvidia_peermem\n-r nvidia-peermem\nnvidia_fs\n");
}

TEST_F(StandinsE2e, SysctlRecordsWhatItSetsAndLoadsFilesInProcpsOrder) {
  std::string real = Out(0, "cat /proc/sys/net/core/somaxconn");
  EXPECT_EQ(Out(0, "sysctl -w net.core.somaxconn=8192 && sysctl -n net.core.somaxconn"),
            "net.core.somaxconn = 8192\n8192\n");
  // /proc/sys itself is untouched: it is this machine's kernel.
  EXPECT_EQ(Out(0, "cat /proc/sys/net/core/somaxconn"), real);
  EXPECT_EQ(Out(0,
                "sysctl -w net.ipv4.tcp_rmem='4096 87380  16777216' >/dev/null && "
                "sysctl net.ipv4.tcp_rmem net/core/somaxconn"),
            "net.ipv4.tcp_rmem = 4096\t87380\t16777216\nnet.core.somaxconn = 8192\n");

  // /proc/sys is read-only in a host, so the real sysctl can be asked too: same answers.
  ASSERT_EQ(Out(0, "awk '$5 == \"/proc/sys\" { print substr($6, 1, 2) }' /proc/self/mountinfo"),
            "ro\n");
  for (const char* args : {"-n net.gpuforge.nosuch", "-w net.gpuforge.nosuch=1"}) {
    CommandOutput stand_in = Ssh(0, fmt::format("sysctl {}", args));
    CommandOutput procps = Ssh(0, fmt::format("/usr/sbin/sysctl {}", args));
    EXPECT_EQ(stand_in.exit_code, 1) << args;
    EXPECT_EQ(stand_in.output,
              "sysctl: cannot stat /proc/sys/net/gpuforge/nosuch: No such file or directory\n");
    EXPECT_EQ(stand_in.exit_code, procps.exit_code) << args;
    EXPECT_EQ(stand_in.output, procps.output) << args;
  }

  Out(0,
      "printf '# gpuforge\\nnet.core.rmem_max = 2147483647\\n  net.core.wmem_max=2147483647\\n' "
      "> /etc/sysctl.d/90-gpuforge.conf");
  CommandOutput system = Ssh(0, "sysctl --system");
  EXPECT_EQ(system.exit_code, 0) << system.output;
  EXPECT_NE(system.output.find("* Applying /etc/sysctl.d/90-gpuforge.conf ...\n"
                               "net.core.rmem_max = 2147483647\n"
                               "net.core.wmem_max = 2147483647\n"),
            std::string::npos)
      << system.output;
  EXPECT_EQ(Out(0, "sysctl -n net.core.rmem_max net.core.wmem_max"), "2147483647\n2147483647\n");
  // The files, in the order procps 4.0.2 applies them here.
  EXPECT_EQ(Out(0, "sysctl --system | grep '^\\* Applying'"),
            Out(0, "/usr/sbin/sysctl --system 2>/dev/null | grep '^\\* Applying'"));
  EXPECT_EQ(Out(0, "tail -n 3 /var/lib/gpuforge-testbed/sysctl.log"),
            "--system\n-n net.core.rmem_max net.core.wmem_max\n--system\n");
}

}  // namespace
}  // namespace gpuforge::testbed
