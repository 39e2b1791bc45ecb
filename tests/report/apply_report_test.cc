// apply's text and JSON from a hand-built rollout: every kind of node outcome, folding, the
// cluster handlers, the reboot line and the rollback hint; and the screen before the question.

#include "gpuforge/report/apply_report.h"

#include <gtest/gtest.h>

#include "report/sample_plans.h"

namespace gpuforge::report {
namespace {

using State = apply::NodeApply::State;

apply::NodeOutcome Applied(const std::string& node, bool reboot = false) {
  apply::NodeApply a;
  a.state = State::kApplied;
  a.plan.files.push_back({});
  a.plan.files.back().path = "/etc/nccl.conf";
  a.plan.files.back().action = plan::Action::kCreate;
  a.written = {"/etc/nccl.conf"};
  a.handlers = {"sysctl --system"};
  a.reboot_needed = reboot;
  return {node, a, ""};
}

apply::RolloutResult Sample() {
  apply::RolloutResult r;
  r.run_id = "20261130T064252Z-0000abcd";
  r.nodes.push_back(Applied("gpu01"));
  r.nodes.push_back(Applied("gpu02"));
  apply::NodeApply failed;
  failed.state = State::kFailed;
  failed.step = "upload /etc/b";
  failed.detail = "disk full";
  failed.written = {"/etc/a"};
  failed.lock_left = true;
  r.nodes.push_back({"gpu03", failed, ""});
  r.nodes.push_back({"gpu04", std::nullopt, "node gpu04: connection refused"});
  r.nodes.push_back({"gpu05", std::nullopt, ""});
  r.handler_lines = {"ran `scontrol reconfigure` once, on gpu01"};
  r.applied = 2;
  r.failed = 2;
  r.not_started = 1;
  r.reboot_needed = {"gpu01", "gpu02"};
  return r;
}

TEST(ApplyReport, Text) {
  EXPECT_EQ(ApplyText(Sample(), "cluster.yaml", Style{}),
            "gpu[01-02] (2): applied: 1 created, 0 changed, 0 removed; ran sysctl --system\n"
            "gpu03 (1): failed at upload /etc/b: disk full\n"
            "  written before the failure: /etc/a\n"
            "  the lock /var/lib/gpuforge/lock may be left; check and remove it by hand\n"
            "gpu04 (1): unreachable: node gpu04: connection refused\n"
            "gpu05 (1): not started: --max-fail reached or interrupted\n"
            "ran `scontrol reconfigure` once, on gpu01\n"
            "Reboot needed (drain first): gpu[01-02]\n"
            "Apply 20261130T064252Z-0000abcd: 2 applied, 0 unchanged, 2 failed, 1 not started.\n"
            "Undo the file changes with: gpuforge rollback cluster.yaml --run 20261130T064252Z-0000abcd\n");
}

TEST(ApplyReport, TextWithNothingApplied) {
  apply::RolloutResult r;
  r.run_id = "20261130T064252Z-0000abcd";
  apply::NodeApply same;
  same.state = State::kUnchanged;
  r.nodes.push_back({"gpu01", same, ""});
  r.unchanged = 1;
  EXPECT_EQ(ApplyText(r, "cluster.yaml", Style{}),
            "gpu01 (1): no changes\n"
            "Apply 20261130T064252Z-0000abcd: 0 applied, 1 unchanged, 0 failed.\n");
}

TEST(ApplyReport, Json) {
  const nlohmann::ordered_json j = ApplyJson(Sample());
  EXPECT_EQ(j.dump(),
            R"({"schema":"gpuforge.apply/v1","run":"20261130T064252Z-0000abcd","applied":2,"unchanged":0,"failed":2,)"
            R"("not_started":1,"cluster_handlers":["ran `scontrol reconfigure` once, on gpu01"],)"
            R"("reboot_needed":["gpu01","gpu02"],"nodes":[)"
            R"({"node":"gpu01","state":"applied","written":["/etc/nccl.conf"],"removed":[],"done":[],)"
            R"("handlers":["sysctl --system"],"reboot_needed":false,"lock_left":false},)"
            R"({"node":"gpu02","state":"applied","written":["/etc/nccl.conf"],"removed":[],"done":[],)"
            R"("handlers":["sysctl --system"],"reboot_needed":false,"lock_left":false},)"
            R"({"node":"gpu03","state":"failed","written":["/etc/a"],"removed":[],"done":[],"handlers":[],)"
            R"("reboot_needed":false,"step":"upload /etc/b","error":"disk full","lock_left":true},)"
            R"({"node":"gpu04","state":"unreachable","error":"node gpu04: connection refused"},)"
            R"({"node":"gpu05","state":"not-started"}]})");
}

TEST(ApplyReport, PreviewFoldsPlansAndAsks) {
  const std::vector<apply::NodePlanRead> reads = testing::SampleReads(2, plan::Action::kCreate);
  const std::string text = ApplyPreviewText(reads, 2, Style{});
  EXPECT_TRUE(text.starts_with("gpu[01-02] (2): 1 to add, 0 to change, 0 to destroy; takes effect: ")) << text;
  EXPECT_NE(text.find("\n    + /etc/nccl.conf (mode 0644)"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu03 (1): error: node gpu03: connection refused\n"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\n2 changes on 3 nodes, in batches of 2. Apply them? Only 'yes' is accepted: ")) << text;
}

}  // namespace
}  // namespace gpuforge::report
