// `gpuforge unlock --run ID` on the recording fake: only the named run's lock goes, another
// holder is shown and left, and liveness is read from the holder line. The end-to-end case (a
// controller killed by SIGKILL, then unlock and rollback) is ApplyFaults in apply_faults_e2e_test.

#include "gpuforge/apply/unlock.h"

#include <gtest/gtest.h>

#include "gpuforge/apply/apply.h"
#include "gpuforge/report/unlock_report.h"
#include "remote/fake_session.h"
#include "remote/fake_targets.h"

namespace gpuforge::apply {
namespace {

using remote::testing::FakeConnector;
using remote::testing::Targets;

const std::string kRun = "20261130T064252Z-0000abcd";

remote::ExecResult Exited(int status, std::string out = "") {
  remote::ExecResult r;
  r.exit_status = status;
  r.out = std::move(out);
  return r;
}

bool AliveNever(long) { return false; }
bool AliveAlways(long) { return true; }

TEST(Unlock, OnlyTheNamedRunsLockGoesAndAnotherIsShown) {
  FakeConnector c;
  const std::string mine = "run " + kRun + " by ops@admin (pid 4242) at 2026-11-30T06:42:52Z";
  const std::string theirs = "run 20261130T070000Z-00000002 by ana@laptop (pid 77) at 2026-11-30T07:00:00Z";
  c.nodes["n01"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
    EXPECT_EQ(cmd, UnlockRunScript(kRun));
    return Exited(0, mine + "\n");
  };
  c.nodes["n02"].exec = [&](const std::string&) -> Result<remote::ExecResult> { return Exited(kLockHeldExit, theirs + "\n"); };
  c.nodes["n03"].exec = [&](const std::string&) -> Result<remote::ExecResult> { return Exited(kNoLockExit); };
  c.nodes["n04"].connect_error = "node n04: connection refused";
  UnlockRun run = UnlockNodes(c, Targets({"n01", "n02", "n03", "n04"}), kRun, {});
  ASSERT_EQ(run.nodes.size(), 4u);
  EXPECT_EQ(run.nodes[0].state, NodeUnlock::State::kRemoved);
  EXPECT_EQ(run.nodes[0].holder, mine);
  EXPECT_EQ(run.nodes[1].state, NodeUnlock::State::kOtherHolder);
  EXPECT_EQ(run.nodes[2].state, NodeUnlock::State::kNoLock);
  EXPECT_EQ(run.nodes[3].state, NodeUnlock::State::kFailed);
  EXPECT_EQ(run.nodes[3].detail, "node n04: connection refused");
  EXPECT_FALSE(run.ok());

  EXPECT_EQ(report::UnlockText(run, report::Style{}, "admin", AliveNever),
            "n01: removed the lock of " + mine + " (pid 4242 is gone)\n"
            "n02: lock left in place: it is held by " + theirs + " (pid 77 on laptop: check there whether it still runs)\n"
            "n03: no lock\n"
            "n04: failed: node n04: connection refused\n"
            "Unlock " + kRun + ": 1 removed, 1 without a lock, 1 held by another run, 1 failed.\n");
  EXPECT_NE(report::UnlockText(run, report::Style{}, "admin", AliveAlways).find("(pid 4242 still runs here)"),
            std::string::npos);
  nlohmann::ordered_json j = report::UnlockJson(run);
  EXPECT_EQ(j["schema"], "gpuforge.unlock/v1");
  EXPECT_EQ(j["nodes"][1]["state"], "other_holder");
}

TEST(Unlock, TheScriptsCompareTheHolder) {
  // Removal only for the run's own line; the rollback's own id counts too.
  const std::string s = UnlockRunScript(kRun);
  EXPECT_NE(s.find("'run " + kRun + " '*|'rollback " + kRun + " '*)"), std::string::npos) << s;
  // A run releases only its own lock: a slow run must not delete the next run's.
  const std::string u = UnlockScript("run X by a@b (pid 1) at t");
  EXPECT_NE(u.find("= 'run X by a@b (pid 1) at t' ]; then rm -f"), std::string::npos) << u;
  EXPECT_NE(u.find("the lock is held by another run now"), std::string::npos);
  // A failed mkdir that left no lock is mkdir's error, not "held" with an empty holder.
  const std::string l = LockScript("h");
  EXPECT_NE(l.find("if [ -d '/var/lib/gpuforge/lock' ]; then cat"), std::string::npos) << l;
  EXPECT_NE(l.find("printf '%s\\n' \"$err\" >&2"), std::string::npos) << l;
}

TEST(Unlock, HolderLinesNameTheirProcess) {
  HolderProcess p;
  ASSERT_TRUE(ParseHolderProcess("run " + kRun + " by ops@admin (pid 4242) at t", &p));
  EXPECT_EQ(p.host, "admin");
  EXPECT_EQ(p.pid, 4242);
  EXPECT_FALSE(ParseHolderProcess("run " + kRun + " by ops@admin at t", &p));  // before pids were recorded
  EXPECT_FALSE(ParseHolderProcess("run x by ops@admin (pid -1) at t", &p));
  EXPECT_FALSE(ParseHolderProcess("", &p));
}

}  // namespace
}  // namespace gpuforge::apply
