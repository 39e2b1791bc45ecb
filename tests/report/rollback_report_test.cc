// rollback's text and JSON from a hand-built run: restored, untouched, failed and unreachable
// nodes, folded, with the cluster handlers and the totals.

#include "gpuforge/report/rollback_report.h"

#include <gtest/gtest.h>

namespace gpuforge::report {
namespace {

using State = apply::NodeApply::State;

apply::RollbackRun Sample() {
  apply::RollbackRun r;
  r.run_id = "20261130T070000Z-00000002";
  r.rollback_of = "20261130T064252Z-0000abcd";
  apply::NodeApply done;
  done.state = State::kApplied;
  done.written = {"/etc/nccl.conf"};
  done.removed = {"/etc/gpuforge/x.conf"};
  done.handlers = {"sysctl --system"};
  r.nodes.push_back({"gpu01", done, ""});
  r.nodes.push_back({"gpu02", done, ""});
  apply::NodeApply same;
  same.state = State::kUnchanged;
  same.detail = "run 20261130T064252Z-0000abcd changed no files here";
  r.nodes.push_back({"gpu03", same, ""});
  apply::NodeApply failed;
  failed.state = State::kLocked;
  failed.step = "lock";
  failed.detail = "/var/lib/gpuforge/lock is held: another run";
  r.nodes.push_back({"gpu04", failed, ""});
  r.nodes.push_back({"gpu05", std::nullopt, "node gpu05: connection refused"});
  r.handler_lines = {"ran `scontrol reconfigure` once, on gpu01"};
  r.rolled_back = 2;
  r.untouched = 1;
  r.failed = 2;
  return r;
}

TEST(RollbackReport, Text) {
  EXPECT_EQ(RollbackText(Sample(), Style{}),
            "gpu[01-02] (2): restored /etc/nccl.conf; removed /etc/gpuforge/x.conf; ran sysctl --system\n"
            "gpu03 (1): run 20261130T064252Z-0000abcd changed no files here\n"
            "gpu04 (1): failed at lock: /var/lib/gpuforge/lock is held: another run\n"
            "gpu05 (1): unreachable: node gpu05: connection refused\n"
            "ran `scontrol reconfigure` once, on gpu01\n"
            "Rollback 20261130T070000Z-00000002 of 20261130T064252Z-0000abcd: 2 rolled back, 1 untouched by that "
            "run, 2 failed.\n");
}

TEST(RollbackReport, NothingRestored) {
  apply::RollbackRun r;
  apply::NodeApply done;
  done.state = State::kApplied;
  r.nodes.push_back({"gpu01", done, ""});
  EXPECT_TRUE(RollbackText(r, Style{}).starts_with("gpu01 (1): restored nothing\n"));
}

TEST(RollbackReport, Json) {
  EXPECT_EQ(RollbackJson(Sample()).dump(),
            R"({"schema":"gpuforge.rollback/v1","run":"20261130T070000Z-00000002",)"
            R"("rollback_of":"20261130T064252Z-0000abcd","rolled_back":2,"untouched":1,"failed":2,)"
            R"("cluster_handlers":["ran `scontrol reconfigure` once, on gpu01"],"nodes":[)"
            R"({"node":"gpu01","state":"applied","restored":["/etc/nccl.conf"],"removed":["/etc/gpuforge/x.conf"],)"
            R"("handlers":["sysctl --system"]},)"
            R"({"node":"gpu02","state":"applied","restored":["/etc/nccl.conf"],"removed":["/etc/gpuforge/x.conf"],)"
            R"("handlers":["sysctl --system"]},)"
            R"({"node":"gpu03","state":"unchanged","restored":[],"removed":[],"handlers":[],)"
            R"("detail":"run 20261130T064252Z-0000abcd changed no files here"},)"
            R"({"node":"gpu04","state":"locked","restored":[],"removed":[],"handlers":[],"step":"lock",)"
            R"("detail":"/var/lib/gpuforge/lock is held: another run"},)"
            R"({"node":"gpu05","state":"unreachable","error":"node gpu05: connection refused"}]})");
}

}  // namespace
}  // namespace gpuforge::report
