// gpuforge apply and rollback when things go wrong, against the local test hosts (tests/testbed):
// a connection killed mid-apply, a full disk, a service that fails to start, a lock someone else
// holds, --max-fail, rollback byte for byte, and hostile inventory values. Every outcome is read
// back from the hosts over SSH. STAND-INs: the hosts' nvidia-smi prints a recorded H200's output
// (so render writes GPU files), and systemctl, modprobe and sysctl are tests/testbed/standins.sh
// (no systemd in a host, and its /proc/sys is read-only); the nvidia-dcgm and nvidia-persistenced
// unit files are written by hand, as if their packages were installed.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "remote/command.h"
#include "testbed/fixture.h"
#include "testbed/standins.h"
#include "testbed/testbed.h"

namespace gpuforge::apply {
namespace {

using testbed::CommandOutput;

// Generous hang guards only: nothing here asserts on time.
constexpr auto kGuard = std::chrono::seconds(300);

// What apply touches besides the rendered files' own directories.
constexpr const char* kStateDir = "/var/lib/gpuforge";
constexpr const char* kHooks = "/var/lib/gpuforge-testbed";

// The parts that need no packages: the services' units are made by hand (WriteUnits).
constexpr const char* kNoPackages = "--only files,sysctl,services";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class ApplyFaults : public testbed::TestbedTest {
 protected:
  // Brings up `hosts` test hosts with the stand-ins and the two service units; false when the
  // test was skipped (this machine cannot run test hosts) or failed, so `if (!Up(n)) return;`.
  [[nodiscard]] bool Up(int hosts) {
    if (!Bring(testbed::WithStandInGpu(hosts))) return false;
    temp_ = tb_->paths().dir + "/faults";
    testbed::RunCommand({"mkdir", "-p", temp_});
    for (std::size_t i = 0; i < tb_->hosts().size(); ++i) {
      Status installed = testbed::InstallStandins(*tb_, i);
      EXPECT_TRUE(installed.ok()) << installed.error().message;
      if (!installed.ok()) return false;
      // STAND-IN: the units the driver, DCGM and exporter packages would ship, so services can be managed
      // without packages (--only files,sysctl,services).
      Out(i,
          "for u in nvidia-persistenced nvidia-dcgm nvidia-dcgm-exporter; do "
          "printf '[Unit]\\nDescription=STAND-IN %s\\n[Service]\\nExecStart=/bin/sleep infinity\\n"
          "[Install]\\nWantedBy=multi-user.target\\n' $u > /lib/systemd/system/$u.service; done");
    }
    return !HasFailure();
  }

  const std::string& Name(std::size_t i) const { return tb_->hosts()[i].name; }

  // gpuforge ARGS on this machine alone (render), stdout and stderr together.
  CommandOutput Local(const std::string& args) {
    Result<CommandOutput> r = testbed::RunCommand(
        {"/bin/sh", "-c", fmt::format("{} {} 2>&1 </dev/null", GPUFORGE_BINARY, args)}, kGuard);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : CommandOutput{-1, ""};
  }

  // A command that reaches the nodes: VERB_AND_FLAGS on the inventory, through the testbed's
  // keys. stderr goes to `stderr_to` when given (for JSON on stdout).
  std::string RemoteLine(const std::string& verb_and_flags, const std::string& inventory = "",
                         const std::string& stderr_to = "") {
    return fmt::format("{} {} {} --known-hosts {} --ssh-config none --color never {} </dev/null", GPUFORGE_BINARY,
                       verb_and_flags, inventory.empty() ? tb_->paths().inventory : inventory,
                       tb_->paths().known_hosts, stderr_to.empty() ? "2>&1" : "2>" + stderr_to);
  }
  CommandOutput Remote(const std::string& verb_and_flags, const std::string& inventory = "") {
    Result<CommandOutput> r = testbed::RunCommand({"/bin/sh", "-c", RemoteLine(verb_and_flags, inventory)}, kGuard);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : CommandOutput{-1, ""};
  }

  // The run id an apply's text output names ("Apply RUN: ...").
  static std::string RunIdOf(const std::string& output) {
    std::smatch m;
    if (!std::regex_search(output, m, std::regex("Apply ([0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}): "))) return "";
    return m[1].str();
  }

  // The rendered files of each node: node -> (path -> SHA-256), from `gpuforge render`.
  std::map<std::string, std::map<std::string, std::string>> Rendered() {
    const std::string dir = temp_ + "/rendered";
    testbed::RunCommand({"rm", "-rf", dir});
    CommandOutput r = Local(fmt::format("render {} --out {}", tb_->paths().inventory, dir));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::map<std::string, std::map<std::string, std::string>> out;
    for (const testbed::Host& h : tb_->hosts()) {
      Result<CommandOutput> sums = testbed::RunCommand(
          {"/bin/sh", "-c", fmt::format("cd {}/{} && find . -type f -exec sha256sum {{}} + | sort -k2", dir, h.name)});
      EXPECT_TRUE(sums.ok() && sums->exit_code == 0);
      if (!sums.ok()) continue;
      for (const std::string& l : Lines(sums->output)) {
        // "SHA256  ./etc/nccl.conf"
        if (l.size() > 67) out[h.name][l.substr(67)] = l.substr(0, 64);
      }
    }
    EXPECT_FALSE(out.empty());
    return out;
  }

  // Each of `paths` on host i: its SHA-256 or "absent".
  std::map<std::string, std::string> HostFiles(std::size_t i, const std::map<std::string, std::string>& paths) {
    std::string list;
    for (const auto& [p, sha] : paths) list += " " + remote::ShellQuote(p);
    std::vector<std::string> got = Lines(Out(
        i, fmt::format("for p in{}; do if [ -f \"$p\" ]; then sha256sum < \"$p\" | cut -c1-64; else echo absent; fi; done",
                       list)));
    std::map<std::string, std::string> out;
    std::size_t k = 0;
    for (const auto& [p, sha] : paths) out[p] = k < got.size() ? got[k++] : "?";
    return out;
  }

  // Temporary files gpuforge would leave beside a target (".nccl.conf.gpuforge-XXXX",
  // "nccl.conf.gpuforge-rollback.XXXXXX") in the rendered files' directories and the state dir.
  std::string TempFiles(std::size_t i, const std::map<std::string, std::string>& paths) {
    std::set<std::string> dirs = {kStateDir};
    for (const auto& [p, sha] : paths) dirs.insert(p.substr(0, p.rfind('/')));
    std::string list;
    for (const std::string& d : dirs) list += " " + remote::ShellQuote(d);
    return Out(i, fmt::format("for d in{}; do [ -d \"$d\" ] && find \"$d\" -maxdepth 1 \\( -name '.*.gpuforge*' -o "
                              "-name '*.gpuforge-*' \\) -print; done; true",
                              list));
  }

  // Whether host i's /var/lib/gpuforge/lock is there.
  bool Locked(std::size_t i) { return Out(i, fmt::format("test -e {}/lock && echo held || echo free", kStateDir)) == "held\n"; }

  // The journal lines of host i, parsed.
  // Host i's journal: the runs' completion records, or (intents) the intent records each run
  // writes after its backups and before its first change.
  std::vector<nlohmann::json> Journal(std::size_t i, bool intents = false) {
    std::vector<nlohmann::json> out;
    for (const std::string& l : Lines(Out(i, fmt::format("cat {}/journal.jsonl 2>/dev/null; true", kStateDir)))) {
      nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << l;
      if (j.is_discarded()) continue;
      if ((j.value("result", "") == "started") == intents) out.push_back(std::move(j));  // apply::kIntentResult
    }
    return out;
  }

  // How many logins host i's sshd has accepted so far (its log is on this machine).
  int Logins(std::size_t i) {
    std::ifstream log(fmt::format("{}/.testbed/hosts/{}/init.log", tb_->paths().dir, Name(i)));
    EXPECT_TRUE(log.good()) << Name(i);
    int n = 0;
    for (std::string l; std::getline(log, l);) n += Contains(l, "Accepted publickey");
    return n;
  }

  // Polls `command` on host i until it exits 0; false after `limit`.
  bool WaitFor(std::size_t i, const std::string& command, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      Result<CommandOutput> r = testbed::RunCommand(tb_->SshArgv(i, "root", command), std::chrono::seconds(30));
      if (r.ok() && r->exit_code == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // Expects every rendered file of host i to be either what it was (`before`) or the rendered
  // bytes, and no temporary file beside any of them.
  void ExpectOldOrNew(std::size_t i, const std::map<std::string, std::string>& rendered,
                      const std::map<std::string, std::string>& before) {
    std::map<std::string, std::string> now = HostFiles(i, rendered);
    for (const auto& [path, sha] : rendered) {
      EXPECT_TRUE(now[path] == sha || now[path] == before.at(path))
          << Name(i) << ":" << path << " is " << now[path] << ", neither the old " << before.at(path)
          << " nor the new " << sha;
    }
    EXPECT_EQ(TempFiles(i, rendered), "") << Name(i);
  }

  void ExpectConverged(std::size_t i, const std::map<std::string, std::string>& rendered) {
    EXPECT_EQ(HostFiles(i, rendered), rendered) << Name(i);
    EXPECT_EQ(TempFiles(i, rendered), "") << Name(i);
    EXPECT_FALSE(Locked(i)) << Name(i);
  }

  // Starts `apply` (no packages) against host 0 with its nvidia-dcgm start hanging, and returns
  // once the node hangs there: the run's future and the controller's pid.
  void StartApplyHangingAtDcgm(std::future<Result<CommandOutput>>* running, long* pid) {
    Out(0, fmt::format("echo 600 > {}/hang-nvidia-dcgm", kHooks));
    const std::string pidfile = temp_ + "/apply.pid";
    const std::string line =
        fmt::format("echo $$ > {}; exec {}", pidfile, RemoteLine(fmt::format("apply {} --yes", kNoPackages)));
    *running = std::async(std::launch::async, [line] { return testbed::RunCommand({"/bin/sh", "-c", line}, kGuard); });
    ASSERT_TRUE(WaitFor(0, fmt::format("test -e {}/hanging-nvidia-dcgm", kHooks), std::chrono::seconds(120)));
    std::ifstream pid_in(pidfile);
    pid_in >> *pid;
    ASSERT_GT(*pid, 0);
  }

  std::string temp_;  // this machine's scratch dir for the test, in the testbed's (removed with it)
};

// ---- 1. the connection dies mid-apply --------------------------------------------------------

TEST_F(ApplyFaults, SshdKilledMidApplyLeavesFilesOldOrNewAndALockTheRerunNamesUntilRemoved) {
  if (!Up(2)) return;
  const auto rendered = Rendered();
  const auto& want = rendered.at(Name(1));
  Out(1, "printf 'NCCL_DEBUG=WARN\\n' > /etc/nccl.conf");
  const auto before = HostFiles(1, want);
  // Host 1's `systemctl start nvidia-dcgm` hangs (touching hanging-nvidia-dcgm first), so the
  // connection is killed while apply waits on it, after every file was uploaded.
  Out(1, fmt::format("echo 600 > {}/hang-nvidia-dcgm", kHooks));

  std::future<Result<CommandOutput>> running = std::async(std::launch::async, [&] {
    return testbed::RunCommand({"/bin/sh", "-c", RemoteLine(fmt::format("apply {} --yes", kNoPackages))}, kGuard);
  });
  const bool hanging = WaitFor(1, fmt::format("test -e {}/hanging-nvidia-dcgm", kHooks), std::chrono::seconds(120));
  EXPECT_TRUE(hanging) << "apply never reached `systemctl start nvidia-dcgm` on " << Name(1);
  // Every sshd of host 1, the listener and this apply's session alike, as a crash would.
  const std::string pid = std::to_string(tb_->hosts()[1].pid);
  Result<CommandOutput> killed = testbed::RunCommand(
      // A session's sshd may exit between pgrep and kill (another ssh just finished): what
      // matters is that none is left.
      {"nsenter", "-t", pid, "-m", "-p", "sh", "-c",
       "p=$(pgrep -x sshd) || exit 1; kill -KILL $p 2>/dev/null; sleep 0.5; ! pgrep -x sshd"});
  ASSERT_TRUE(killed.ok()) << killed.error().message;
  EXPECT_EQ(killed->exit_code, 0) << killed->output;
  ASSERT_EQ(running.wait_for(kGuard), std::future_status::ready);
  Result<CommandOutput> apply = running.get();
  ASSERT_TRUE(apply.ok()) << apply.error().message;
  ASSERT_TRUE(hanging);

  EXPECT_EQ(apply->exit_code, 1) << apply->output;
  const std::string run = RunIdOf(apply->output);
  EXPECT_NE(run, "") << apply->output;
  EXPECT_TRUE(Contains(apply->output, fmt::format("{} (1): applied: 8 created, 3 changed", Name(0)))) << apply->output;
  EXPECT_TRUE(Contains(apply->output, fmt::format("{0} (1): failed at service nvidia-dcgm: node {0}: connection lost",
                                                  Name(1))))
      << apply->output;
  EXPECT_TRUE(Contains(apply->output, "(and the journal could not be written)")) << apply->output;
  EXPECT_TRUE(Contains(apply->output, "  the lock /var/lib/gpuforge/lock may be left; check and remove it by hand"))
      << apply->output;
  EXPECT_TRUE(Contains(apply->output, fmt::format("Apply {}: 1 applied, 0 unchanged, 1 failed.", run)))
      << apply->output;

  // sshd back; the stand-in systemctl still sleeping in host 1 is ended (by pid) so it cannot
  // mark the unit failed later, and the hook goes.
  Status started = tb_->StartHost(1);
  ASSERT_TRUE(started.ok()) << started.error().message;
  Out(1, fmt::format("for p in $(pgrep -f '^/bin/sh /usr/local/sbin/systemctl start nvidia-dcgm'); do "
                     "c=$(pgrep -P $p); kill -KILL $p $c; done; rm -f {0}/hang-nvidia-dcgm {0}/hanging-nvidia-dcgm",
                     kHooks));
  ExpectOldOrNew(1, want, before);
  ExpectConverged(0, rendered.at(Name(0)));
  EXPECT_EQ(Journal(0).size(), 1u);

  // The killed run's lock is still there: the rerun is refused for that node, naming it.
  ASSERT_TRUE(Locked(1));
  EXPECT_TRUE(Out(1, fmt::format("cat {}/lock/holder", kStateDir)).starts_with(fmt::format("run {} by ", run)));
  CommandOutput refused = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_TRUE(Contains(refused.output, fmt::format("{} (1): no changes", Name(0)))) << refused.output;
  EXPECT_TRUE(Contains(refused.output, fmt::format("{} (1): refused: /var/lib/gpuforge/lock is held: run {} by ",
                                                   Name(1), run)))
      << refused.output;
  EXPECT_TRUE(Contains(refused.output, "; if that run is gone, `gpuforge unlock INVENTORY --run ID` removes its lock"))
      << refused.output;
  EXPECT_TRUE(Locked(1));

  // The operator removes it; the rerun converges.
  Out(1, fmt::format("rm -rf {}/lock", kStateDir));
  CommandOutput rerun = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(Contains(rerun.output, fmt::format("{} (1): applied: ", Name(1)))) << rerun.output;
  EXPECT_TRUE(Contains(rerun.output, fmt::format("{} (1): no changes", Name(0)))) << rerun.output;
  ExpectConverged(1, want);
  EXPECT_EQ(Out(1, "systemctl is-enabled nvidia-dcgm; systemctl is-active nvidia-dcgm"), "enabled\nactive\n");
  std::vector<nlohmann::json> journal = Journal(1);
  ASSERT_FALSE(journal.empty());
  EXPECT_EQ(journal.back()["result"], "applied") << journal.back().dump();
  CommandOutput plan = Remote(fmt::format("plan {} --detailed-exitcode", kNoPackages));
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
}

// The controller itself killed (SIGKILL: a CI runner gone) while a node waits on a step after
// its files were replaced (issue #12, items 3 and 7). Before, the journal line came only at the
// end, so `rollback --run ID` said it changed nothing and exited 0, and the lock could go only
// by `rm`. Now the intent record written after the backups points at them, `unlock --run ID`
// removes that run's lock (and no other), and rollback restores the bytes from the intent.
TEST_F(ApplyFaults, AKilledControllerIsUnlockedByItsRunIdAndRolledBackFromItsIntentRecord) {
  if (!Up(1)) return;
  const auto rendered = Rendered();
  const auto& want = rendered.at(Name(0));
  Out(0, "printf 'NCCL_DEBUG=WARN\\n' > /etc/nccl.conf");
  const auto before = HostFiles(0, want);
  std::future<Result<CommandOutput>> running;
  long pid = 0;
  ASSERT_NO_FATAL_FAILURE(StartApplyHangingAtDcgm(&running, &pid));
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
  ASSERT_EQ(running.wait_for(kGuard), std::future_status::ready);
  (void)running.get();
  // The stand-in systemctl still waits on the node: end it and its hook.
  Out(0, fmt::format("for p in $(pgrep -f '^/bin/sh /usr/local/sbin/systemctl start nvidia-dcgm'); do "
                     "c=$(pgrep -P $p); kill -KILL $p $c; done; rm -f {0}/hang-nvidia-dcgm {0}/hanging-nvidia-dcgm",
                     kHooks));
  // Files are new or old, never partial; the journal has the intent and no completion.
  ExpectOldOrNew(0, want, before);
  EXPECT_TRUE(Journal(0).empty());
  std::vector<nlohmann::json> intent = Journal(0, true);
  ASSERT_EQ(intent.size(), 1u);
  const std::string run = intent[0]["run"].get<std::string>();
  ASSERT_TRUE(Locked(0));

  // unlock with another run's id leaves the lock; with the killed run's id removes it and says
  // the holder's process is gone.
  CommandOutput other = Remote("unlock --run 20261130T000000Z-00000000");
  EXPECT_EQ(other.exit_code, 1) << other.output;
  EXPECT_TRUE(Contains(other.output, fmt::format("{}: lock left in place: it is held by run {} by ", Name(0), run)))
      << other.output;
  EXPECT_TRUE(Locked(0));
  CommandOutput unlocked = Remote("unlock --run " + run);
  EXPECT_EQ(unlocked.exit_code, 0) << unlocked.output;
  EXPECT_TRUE(Contains(unlocked.output, fmt::format("{}: removed the lock of run {} by ", Name(0), run))) << unlocked.output;
  EXPECT_TRUE(Contains(unlocked.output, fmt::format("(pid {} is gone)", pid))) << unlocked.output;
  EXPECT_FALSE(Locked(0));

  CommandOutput back = Remote(fmt::format("rollback --run {} --yes", run));
  EXPECT_EQ(back.exit_code, 0) << back.output;
  EXPECT_TRUE(Contains(back.output, "intent record")) << back.output;
  // /etc/nccl.conf is the old bytes again, and files the run created are gone.
  std::map<std::string, std::string> now = HostFiles(0, want);
  for (const auto& [path, sha] : want) {
    EXPECT_EQ(now[path], before.at(path)) << path;
  }
  EXPECT_FALSE(Locked(0));
}

// SIGTERM (a cancelled CI job) is a first Ctrl-C, not a death (issue #12, item 3): before, the
// default action killed the controller mid-step, leaving replaced files that no journal line
// pointed at. Now the node's running step is stopped, the run ends, its completion record is
// written and its lock released, so rollback works from the journal, not only the intent.
TEST_F(ApplyFaults, SigtermStopsTheRunLikeCtrlCJournalledAndUnlocked) {
  if (!Up(1)) return;
  const auto rendered = Rendered();
  const auto& want = rendered.at(Name(0));
  Out(0, "printf 'NCCL_DEBUG=WARN\\n' > /etc/nccl.conf");
  const auto before = HostFiles(0, want);
  std::future<Result<CommandOutput>> running;
  long pid = 0;
  ASSERT_NO_FATAL_FAILURE(StartApplyHangingAtDcgm(&running, &pid));
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGTERM), 0);
  ASSERT_EQ(running.wait_for(kGuard), std::future_status::ready);
  Result<CommandOutput> apply = running.get();
  ASSERT_TRUE(apply.ok()) << apply.error().message;
  Out(0, fmt::format("rm -f {0}/hang-nvidia-dcgm {0}/hanging-nvidia-dcgm", kHooks));
  // It ended by itself (not rc 143, the signal's default) and says so.
  EXPECT_EQ(apply->exit_code, 1) << apply->output;
  EXPECT_TRUE(Contains(apply->output, "interrupted")) << apply->output;
  const std::string run = RunIdOf(apply->output);
  ASSERT_FALSE(run.empty()) << apply->output;
  // The completion record is there, the lock is gone, files are old or new.
  std::vector<nlohmann::json> done = Journal(0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0]["run"], run);
  EXPECT_FALSE(Locked(0));
  ExpectOldOrNew(0, want, before);

  CommandOutput back = Remote(fmt::format("rollback --run {} --yes", run));
  EXPECT_EQ(back.exit_code, 0) << back.output;
  EXPECT_FALSE(Contains(back.output, "intent record")) << back.output;
  std::map<std::string, std::string> now = HostFiles(0, want);
  for (const auto& [path, sha] : want) {
    EXPECT_EQ(now[path], before.at(path)) << path;
  }
}

// ---- 2. a full disk --------------------------------------------------------------------------

TEST_F(ApplyFaults, DiskFullFailsTheUploadLeavesNoPartialFileJournalsAndUnlocks) {
  if (!Up(2)) return;
  const auto rendered = Rendered();
  const auto& want = rendered.at(Name(1));
  const std::string dir = "/etc/security/limits.d";
  Out(1, fmt::format("mount -t tmpfs -o size=8k,mode=755 gpuforge-test-full {0} && "
                     "{{ dd if=/dev/zero of={0}/filler bs=1k count=64 2>/dev/null; true; }} && "
                     "test \"$(df --output=avail {0} | tail -n 1 | tr -d ' ')\" = 0",
                     dir));
  const auto before = HostFiles(1, want);

  CommandOutput apply = Remote("apply --only files --yes");
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  const std::string run = RunIdOf(apply.output);
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): applied: 8 created, 0 changed, 0 removed", Name(0))))
      << apply.output;
  // SFTP v3 has no "no space" status: the server answers SSH_FX_FAILURE for ENOSPC.
  EXPECT_TRUE(Contains(apply.output,
                       fmt::format("{0} (1): failed at upload {1}/90-gpuforge.conf: node {0}: upload: writing "
                                   "{1}/.90-gpuforge.conf.gpuforge-",
                                   Name(1), dir)))
      << apply.output;
  EXPECT_TRUE(Contains(apply.output, ": failure (disk full, or the path is a directory?)")) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("Apply {}: 1 applied, 0 unchanged, 1 failed.", run)))
      << apply.output;

  // Only the filler in the full directory; every other file old or new; lock released.
  EXPECT_EQ(Out(1, "ls -A " + dir), "filler\n");
  ExpectOldOrNew(1, want, before);
  EXPECT_FALSE(Locked(1));
  std::vector<nlohmann::json> journal = Journal(1);
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(journal[0]["run"], run);
  EXPECT_EQ(journal[0]["result"], "failed");
  // Before the first write, the run said what it was about to change.
  std::vector<nlohmann::json> intent = Journal(1, true);
  ASSERT_EQ(intent.size(), 1u);
  EXPECT_EQ(intent[0]["run"], run);
  EXPECT_FALSE(intent[0]["files"].empty()) << intent[0].dump();
  EXPECT_EQ(journal[0]["failed_step"], "upload " + dir + "/90-gpuforge.conf");
  EXPECT_TRUE(Contains(journal[0]["error"].get<std::string>(), "failure (disk full")) << journal[0].dump();
  ExpectConverged(0, rendered.at(Name(0)));

  // Space again: the rerun converges.
  Out(1, "umount " + dir);
  CommandOutput rerun = Remote("apply --only files --yes");
  EXPECT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(Contains(rerun.output, fmt::format("{} (1): applied: ", Name(1)))) << rerun.output;
  ExpectConverged(1, want);
  CommandOutput plan = Remote("plan --only files --detailed-exitcode");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
}

// ---- 3. a service that fails to start --------------------------------------------------------

TEST_F(ApplyFaults, AFailingServiceStartFailsThatNodeAtItsStepAndTheRerunConverges) {
  if (!Up(2)) return;
  const auto rendered = Rendered();
  Out(1, fmt::format("touch {}/fail-nvidia-dcgm", kHooks));

  CommandOutput apply = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  const std::string run = RunIdOf(apply.output);
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): applied: 8 created, 3 changed", Name(0)))) << apply.output;
  // The stand-in's message (systemd 252's), lines joined with '|'.
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): failed at service nvidia-dcgm: exit 1: ", Name(1))))
      << apply.output;
  EXPECT_TRUE(Contains(apply.output,
                       "|Job for nvidia-dcgm.service failed because the control process exited with error code.|"))
      << apply.output;
  EXPECT_TRUE(Contains(apply.output, "  done before the failure: service nvidia-persistenced\n")) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("Apply {}: 1 applied, 0 unchanged, 1 failed.", run)))
      << apply.output;
  EXPECT_FALSE(Locked(1));
  EXPECT_EQ(Out(1, "systemctl is-active nvidia-dcgm; true"), "failed\n");
  std::vector<nlohmann::json> journal = Journal(1);
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(journal[0]["result"], "failed");
  EXPECT_EQ(journal[0]["failed_step"], "service nvidia-dcgm");
  EXPECT_EQ(journal[0]["done"], nlohmann::json::array({"service nvidia-persistenced"}));
  EXPECT_TRUE(Contains(journal[0]["error"].get<std::string>(), "Job for nvidia-dcgm.service failed"))
      << journal[0].dump();
  ExpectConverged(0, rendered.at(Name(0)));

  Out(1, fmt::format("rm {}/fail-nvidia-dcgm", kHooks));
  CommandOutput rerun = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(rerun.exit_code, 0) << rerun.output;
  // nvidia-dcgm, and the exporter that starts after it.
  EXPECT_TRUE(Contains(rerun.output, fmt::format("{} (1): applied: 0 created, 2 changed", Name(1)))) << rerun.output;
  EXPECT_TRUE(Contains(rerun.output, fmt::format("{} (1): no changes", Name(0)))) << rerun.output;
  ExpectConverged(1, rendered.at(Name(1)));
  EXPECT_EQ(Out(1, "systemctl is-active nvidia-dcgm"), "active\n");
  CommandOutput plan = Remote(fmt::format("plan {} --detailed-exitcode", kNoPackages));
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
}

// A file written before the failure changed the node, but its handler never ran; the rerun finds
// the file already right. The handler must still run once, or the node only looks converged.
TEST_F(ApplyFaults, AHandlerLeftPendingByAFailedRunRunsOnTheRerun) {
  if (!Up(2)) return;
  Out(1, fmt::format("touch {}/fail-nvidia-dcgm", kHooks));
  CommandOutput apply = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): applied: 8 created, 3 changed, 0 removed; ran sysctl --system",
                                                 Name(0))))
      << apply.output;
  // The handler the failed run owes is a change the plan shows, with no file left to change.
  CommandOutput owed = Remote(fmt::format("plan {} --detailed-exitcode", kNoPackages));
  EXPECT_EQ(owed.exit_code, 2) << owed.output;
  EXPECT_TRUE(Contains(owed.output, "pending handler")) << owed.output;
  Out(1, fmt::format("rm {}/fail-nvidia-dcgm", kHooks));
  CommandOutput rerun = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(rerun.exit_code, 0) << rerun.output;
  // The stand-in sysctl logs each call and keeps what --system set.
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(Out(i, fmt::format("grep -cx -- --system {0}/sysctl.log; cat {0}/sysctl/kernel.numa_balancing; true",
                                 kHooks)),
              "1\n0\n")
        << Name(i) << ": /etc/sysctl.d/90-gpuforge.conf was written but `sysctl --system` "
        << (i == 1 ? "never ran after the failed run; rerun output:\n" + rerun.output : "did not run once");
  }
}

// A controller killed between the SFTP write and the rename leaves ".NAME.gpuforge-SUFFIX" in
// /etc (#12 item 13): the next plan lists it (and counts it for --detailed-exitcode), apply
// removes it and nothing else.
TEST_F(ApplyFaults, ALeftoverUploadTemporaryIsPlannedAndRemovedAndNothingElseIs) {
  if (!Up(1)) return;
  CommandOutput first = Remote(fmt::format("apply {} --yes", kNoPackages));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  Out(0, "printf half > /etc/sysctl.d/.90-gpuforge.conf.gpuforge-0123456789ab; printf keep > /etc/sysctl.d/.mine.gpuforge-x");
  CommandOutput plan = Remote(fmt::format("plan {} --detailed-exitcode", kNoPackages));
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_TRUE(Contains(plan.output, "1 leftover temporary to remove")) << plan.output;
  EXPECT_TRUE(Contains(plan.output, "/etc/sysctl.d/.90-gpuforge.conf.gpuforge-0123456789ab")) << plan.output;
  EXPECT_FALSE(Contains(plan.output, ".mine.gpuforge-x")) << plan.output;
  CommandOutput apply = Remote(fmt::format("apply {} --yes", kNoPackages));
  EXPECT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_EQ(Out(0, "ls -a /etc/sysctl.d | grep gpuforge- ; true"), ".mine.gpuforge-x\n");
  CommandOutput again = Remote(fmt::format("plan {} --detailed-exitcode", kNoPackages));
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

// ---- 4. someone else holds the lock ----------------------------------------------------------

TEST_F(ApplyFaults, AForeignLockRefusesThatNodeNamingTheHolderAndIsLeftInPlace) {
  if (!Up(2)) return;
  const auto rendered = Rendered();
  const std::string holder = "run 20261130T060000Z-00000001 by ops@admin at 2026-11-30T06:00:00Z";
  Out(1, fmt::format("mkdir -p {0}/lock && printf '%s\\n' '{1}' > {0}/lock/holder", kStateDir, holder));

  CommandOutput apply = Remote("apply --only files --yes");
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): applied: 8 created", Name(0)))) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): refused: /var/lib/gpuforge/lock is held: {}; if that run is "
                                                 "gone, `gpuforge unlock INVENTORY --run ID` removes its lock\n",
                                                 Name(1), holder)))
      << apply.output;
  EXPECT_TRUE(Contains(apply.output, ": 1 applied, 0 unchanged, 1 failed.")) << apply.output;

  // Host 1: untouched, the foreign lock as it was; host 0: converged and unlocked.
  EXPECT_EQ(Out(1, fmt::format("ls -A {0}; ls -A {0}/lock; cat {0}/lock/holder", kStateDir)),
            fmt::format("lock\nholder\n{}\n", holder));
  const auto& want = rendered.at(Name(1));
  std::map<std::string, std::string> absent;
  for (const auto& [p, sha] : want) absent[p] = "absent";
  EXPECT_EQ(HostFiles(1, want), absent);
  ExpectConverged(0, rendered.at(Name(0)));
  EXPECT_EQ(Journal(0).size(), 1u);
}

// A lock that cannot be made is mkdir's error, not "held" (issue #12, item 7): before, any failed
// mkdir (EACCES, ENOSPC, a read-only file system) read as a lock held by an empty holder. Here
// the state directory is a read-only mount on the test host.
TEST_F(ApplyFaults, ALockThatCannotBeMadeIsMkdirsOwnErrorNotAHeldLock) {
  if (!Up(1)) return;
  Out(0, fmt::format("mkdir -p {0} && mount -t tmpfs -o ro,size=1m gpuforge-ro {0} && echo mounted", kStateDir));
  ASSERT_EQ(Out(0, fmt::format("grep -c ' {} tmpfs ro' /proc/mounts", kStateDir)), "1\n");
  CommandOutput apply = Remote("apply --only files --yes");
  Out(0, fmt::format("umount {}", kStateDir));
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): failed at lock: ", Name(0)))) << apply.output;
  EXPECT_TRUE(Contains(apply.output, "Read-only file system")) << apply.output;
  EXPECT_FALSE(Contains(apply.output, "is held")) << apply.output;
  EXPECT_FALSE(Locked(0));
}

// ---- 5. --max-fail stops the rollout -----------------------------------------------------------

TEST_F(ApplyFaults, MaxFailStopsTheRolloutAndTheNodesNotStartedAreNotTouched) {
  if (!Up(3)) return;
  Out(0, fmt::format("touch {}/fail-nvidia-dcgm", kHooks));
  const int logins1 = Logins(1), logins2 = Logins(2);

  CommandOutput apply = Remote(fmt::format("apply {} --batch 1 --max-fail 1 --yes", kNoPackages));
  EXPECT_EQ(apply.exit_code, 1) << apply.output;
  // Read before any check of ours logs in.
  EXPECT_EQ(Logins(1), logins1) << "apply connected to " << Name(1);
  EXPECT_EQ(Logins(2), logins2) << "apply connected to " << Name(2);
  const std::string run = RunIdOf(apply.output);
  EXPECT_TRUE(Contains(apply.output, fmt::format("{} (1): failed at service nvidia-dcgm: exit 1: ", Name(0))))
      << apply.output;
  EXPECT_EQ(Name(1) + Name(2), "tb02tb03");
  EXPECT_TRUE(Contains(apply.output, "tb[02-03] (2): not started: --max-fail reached or interrupted\n")) << apply.output;
  EXPECT_TRUE(Contains(apply.output, fmt::format("Apply {}: 0 applied, 0 unchanged, 1 failed, 2 not started.", run)))
      << apply.output;
  for (std::size_t i : {1u, 2u}) {
    EXPECT_EQ(Out(i, fmt::format("test -e {} && echo touched || echo untouched; test -e /etc/nccl.conf && echo "
                                 "nccl.conf || echo no nccl.conf; systemctl is-active nvidia-persistenced; true",
                                 kStateDir)),
              "untouched\nno nccl.conf\ninactive\n")
        << Name(i);
  }
  EXPECT_GT(Logins(1), logins1) << "the login count does not see logins";
  std::vector<nlohmann::json> journal = Journal(0);
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(journal[0]["failed_step"], "service nvidia-dcgm");
  EXPECT_FALSE(Locked(0));
}

// ---- 6. rollback -----------------------------------------------------------------------------

TEST_F(ApplyFaults, RollbackRestoresBytesAndModeRemovesCreatedFilesAndRefusesLaterEditsUnlessForced) {
  if (!Up(2)) return;
  const auto rendered = Rendered();
  // Bytes no template would write: no final newline, a non-ASCII byte, a tab.
  Out(0, "printf 'NCCL_DEBUG=WARN\\n# by hand\\t\\303\\251' > /etc/nccl.conf && chmod 0600 /etc/nccl.conf");
  const std::string original = Out(0, "sha256sum < /etc/nccl.conf | cut -c1-64; stat -c '%a %U %G %s' /etc/nccl.conf");
  ASSERT_EQ(Lines(original).size(), 2u);
  EXPECT_TRUE(original.ends_with("\n600 root root 28\n")) << original;

  auto apply_json = [&](const std::string& label) -> std::string {
    const std::string err = fmt::format("{}/{}.stderr", temp_, label);
    Result<CommandOutput> r =
        testbed::RunCommand({"/bin/sh", "-c", RemoteLine("apply --only files --yes --format json", "", err)}, kGuard);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return "";
    EXPECT_EQ(r->exit_code, 0) << r->output;
    nlohmann::json j = nlohmann::json::parse(r->output, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r->output;
    if (!j.is_object()) return "";
    EXPECT_EQ(j["applied"], 2) << r->output;
    return j.value("run", "");
  };
  const std::string run = apply_json("apply1");
  ASSERT_NE(run, "");
  EXPECT_EQ(Out(0, fmt::format("sha256sum < /etc/nccl.conf | cut -c1-64; stat -c %a /etc/nccl.conf; "
                               "sha256sum < {}/backups/{}/etc/nccl.conf | cut -c1-64",
                               kStateDir, run)),
            fmt::format("{}\n644\n{}\n", rendered.at(Name(0)).at("/etc/nccl.conf"), Lines(original)[0]));

  CommandOutput back = Remote(fmt::format("rollback --run {} --yes", run));
  EXPECT_EQ(back.exit_code, 0) << back.output;
  EXPECT_TRUE(Contains(back.output, fmt::format("{} (1): restored /etc/nccl.conf; removed ", Name(0)))) << back.output;
  EXPECT_TRUE(Contains(back.output, fmt::format("{} (1): restored nothing; removed ", Name(1)))) << back.output;
  EXPECT_TRUE(Contains(back.output, fmt::format(" of {}: 2 rolled back, 0 untouched by that run, 0 failed.", run)))
      << back.output;
  EXPECT_EQ(Out(0, "sha256sum < /etc/nccl.conf | cut -c1-64; stat -c '%a %U %G %s' /etc/nccl.conf"), original);
  for (std::size_t i = 0; i < 2; ++i) {
    std::map<std::string, std::string> want;
    for (const auto& [p, sha] : rendered.at(Name(i))) want[p] = "absent";  // every file was created by the run...
    if (i == 0) want["/etc/nccl.conf"] = Lines(original)[0];                // ...but this one, changed
    EXPECT_EQ(HostFiles(i, rendered.at(Name(i))), want) << Name(i);
    EXPECT_EQ(TempFiles(i, rendered.at(Name(i))), "") << Name(i);
    EXPECT_FALSE(Locked(i));
  }

  // Someone edits the file after a second run: rolling that run back is refused on that node,
  // naming the file, and the edit stays; --force restores the backup anyway.
  const std::string run2 = apply_json("apply2");
  ASSERT_NE(run2, "");
  Out(0, "printf 'NCCL_DEBUG=INFO\\n' >> /etc/nccl.conf");
  const std::string edited = Out(0, "sha256sum < /etc/nccl.conf | cut -c1-64");
  CommandOutput refused = Remote(fmt::format("rollback --run {} --yes --nodes {}", run2, Name(0)));
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_TRUE(Contains(refused.output, fmt::format("{} (1): failed at check: changed since run {}: /etc/nccl.conf; "
                                                   "nothing was rolled back here (--force restores them anyway)\n",
                                                   Name(0), run2)))
      << refused.output;
  EXPECT_EQ(Out(0, "sha256sum < /etc/nccl.conf | cut -c1-64"), edited);
  EXPECT_EQ(Out(0, "test -e /etc/sysctl.d/90-gpuforge.conf && echo kept"), "kept\n");
  EXPECT_FALSE(Locked(0));

  CommandOutput forced = Remote(fmt::format("rollback --run {} --yes --force", run2));
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_TRUE(Contains(forced.output, fmt::format("{} (1): restored /etc/nccl.conf; removed ", Name(0))))
      << forced.output;
  EXPECT_EQ(Out(0, "sha256sum < /etc/nccl.conf | cut -c1-64; stat -c '%a %U %G %s' /etc/nccl.conf"), original);
  EXPECT_EQ(Out(0, "test -e /etc/sysctl.d/90-gpuforge.conf && echo kept || echo removed"), "removed\n");
  EXPECT_EQ(TempFiles(0, rendered.at(Name(0))), "");
}

// ---- 7. hostile inventory values -------------------------------------------------------------

TEST_F(ApplyFaults, HostileInventoryValuesAreRefusedBeforeAnyConnection) {
  if (!Up(2)) return;
  std::ifstream in(tb_->paths().inventory);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string inventory = ss.str();
  const std::string anchor = "  nccl: {version: \"2.28.9\"}\n";
  ASSERT_TRUE(Contains(inventory, anchor));
  const std::string pwned = temp_ + "/pwned";
  auto line_of = [](const std::string& text, const std::string& needle) {
    std::size_t at = text.find(needle);
    return at == std::string::npos ? 0 : 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  };
  struct Case {
    std::string name, text, needle, message;
    int col;
  };
  std::vector<Case> cases;
  {
    std::string t = inventory;
    const std::string repo = fmt::format("    - {{name: local, url: \"file:/srv/$(touch {})\", trusted: true}}\n", pwned);
    t.insert(t.find(anchor) + anchor.size(), "  repositories:\n" + repo);
    // The caret belongs on the '$' (column 37); the line is what this test pins.
    cases.push_back({"url", t, repo, "error: 'url' of repository 'local': URL contains '$'", 0});
  }
  {
    std::string t = inventory;
    const std::string from = "address: " + tb_->hosts()[1].address;
    ASSERT_TRUE(Contains(t, from));
    const std::string bad = fmt::format("address: \"{}$(touch {})\"", tb_->hosts()[1].address, pwned);
    t.replace(t.find(from), from.size(), bad);
    cases.push_back({"address", t, bad,
                     fmt::format("error: address '{}$(touch {})' contains '$'", tb_->hosts()[1].address, pwned),
                     static_cast<int>(t.substr(t.rfind('\n', t.find(bad)) + 1).find('$')) + 1});
  }
  {
    std::string t = inventory;
    const std::string env = fmt::format("    env: {{NCCL_DEBUG: \"INFO;touch {}\"}}\n", pwned);
    t.replace(t.find(anchor), anchor.size(), "  nccl:\n    version: \"2.28.9\"\n" + env);
    cases.push_back({"env", t, env, "error: value of NCCL_DEBUG contains ';'", static_cast<int>(env.find(';')) + 1});
  }

  std::vector<int> logins = {Logins(0), Logins(1)};
  for (const Case& c : cases) {
    const std::string file = fmt::format("{}/{}.yaml", temp_, c.name);
    std::ofstream(file) << c.text;
    const std::string where = fmt::format("{}:{}:", file, line_of(c.text, c.needle));
    for (const char* verb : {"apply --yes", "plan", "rollback --run 20261130T060000Z-00000001 --yes"}) {
      CommandOutput r = Remote(verb, file);
      EXPECT_EQ(r.exit_code, 2) << c.name << " " << verb << ": " << r.output;
      EXPECT_TRUE(r.output.starts_with(where)) << c.name << " " << verb << ": " << r.output;
      if (c.col > 0) {
        EXPECT_TRUE(r.output.starts_with(fmt::format("{}{}: {}", where, c.col, c.message)))
            << c.name << " " << verb << ": " << r.output;
      } else {
        EXPECT_TRUE(Contains(r.output.substr(0, r.output.find('\n')), c.message)) << c.name << " " << verb << ": " << r.output;
      }
      EXPECT_TRUE(Contains(r.output, "\n1 error in " + file)) << r.output;
    }
  }
  EXPECT_EQ(Logins(0), logins[0]) << "gpuforge connected to " << Name(0);
  EXPECT_EQ(Logins(1), logins[1]) << "gpuforge connected to " << Name(1);
  EXPECT_FALSE(std::ifstream(pwned).good()) << pwned << " was made here";
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(Out(i, fmt::format("test -e {} && echo touched; test -e {} && echo pwned; true", kStateDir, pwned)), "")
        << Name(i);
  }
  EXPECT_GT(Logins(1), logins[1]) << "the login count does not see logins";
}

}  // namespace
}  // namespace gpuforge::apply
