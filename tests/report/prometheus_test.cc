#include "gpuforge/report/prometheus.h"

#include <gtest/gtest.h>

#include "report/consumers.h"

namespace gpuforge::report {
namespace {

using gpuforge::testing::Have;
using gpuforge::testing::ScratchDir;
using gpuforge::testing::Sh;
using validate::State;
using validate::Verdict;

Verdict V(std::string check, std::string node, std::string entity, State st, std::optional<double> value = std::nullopt,
          std::string threshold = "", std::string code = "") {
  Verdict v;
  v.check = std::move(check);
  v.node = std::move(node);
  v.entity = std::move(entity);
  v.state = st;
  v.measured = value;
  v.unit = value ? "GB/s" : "";
  v.threshold = std::move(threshold);
  v.code = std::move(code);
  return v;
}

RunInfo Info() {
  RunInfo r;
  r.cluster = "lab";
  r.started = std::chrono::system_clock::from_time_t(1'800'000'000);
  r.seconds = 3.5;
  return r;
}

TEST(ReportPrometheus, PassMarkIsTheThresholdsNumberInTheValuesUnit) {
  EXPECT_EQ(ParsePassMark(">= 1.5 GB/s (guide 000)", "GB/s")->value, 1.5);
  EXPECT_EQ(ParsePassMark(">= 1.5 GB/s (guide 000)", "GB/s")->op, ">=");
  EXPECT_EQ(ParsePassMark("<= 0 (ib.counters.max_errors default)", "")->op, "<=");
  EXPECT_EQ(ParsePassMark("== 8 (inventory)", "")->value, 8);
  EXPECT_FALSE(ParsePassMark(">= 400 Gb/s", "GB/s"));           // another unit
  EXPECT_FALSE(ParsePassMark("ACTIVE, 4X, >= 400 Gb/s", ""));  // a state, not a number
  EXPECT_FALSE(ParsePassMark("NET/IB in use", ""));
  EXPECT_FALSE(ParsePassMark(">= fast", ""));
}

TEST(ReportPrometheus, OneGaugePerCheckAndEntityThatPromtoolAccepts) {
  std::vector<Verdict> v = {
      V("storage.read", "gpu01", "/mnt/data", State::kPass, 12.5, ">= 1 GB/s (guide)"),
      V("storage.read", "gpu02", "/mnt/data", State::kFail, 0.5, ">= 1 GB/s (guide)", "threshold.below"),
      V("storage.read", "gpu02", "/mnt/data", State::kPass, 0.9, ">= 0.1 GB/s"),  // a second metric, same entity
      V("gpu.bandwidth", "gpu02", "gpu0 \"odd\\name\"\n", State::kSkip, std::nullopt, "", "gpu.no_cuda_driver"),
      V("ssh", "gpu03", "node", State::kError, std::nullopt, "", "node.unreachable"),
  };
  const std::string text = ValidatePrometheus(Info(), v);
  for (const char* line : {
           "# TYPE gpuforge_validate_value gauge\n",
           "gpuforge_validate_value{cluster=\"lab\",node=\"gpu01\",check=\"storage.read\",entity=\"/mnt/data\",unit=\"GB/s\"} 12.5\n",
           "gpuforge_validate_pass_mark{cluster=\"lab\",node=\"gpu02\",check=\"storage.read\",entity=\"/mnt/data\",unit=\"GB/s\",op=\">=\"} 1\n",
           "gpuforge_validate_value{cluster=\"lab\",node=\"gpu02\",check=\"storage.read\",entity=\"/mnt/data #2\",unit=\"GB/s\"} 0.9\n",
           "gpuforge_validate_state{cluster=\"lab\",node=\"gpu02\",check=\"storage.read\",entity=\"/mnt/data\",state=\"FAIL\"} 1\n",
           "gpuforge_validate_state{cluster=\"lab\",node=\"gpu02\",check=\"storage.read\",entity=\"/mnt/data\",state=\"PASS\"} 0\n",
           "entity=\"gpu0 \\\"odd\\\\name\\\"?\",state=\"SKIP\"} 1\n",
           "gpuforge_validate_failure_info{cluster=\"lab\",node=\"gpu03\",check=\"ssh\",entity=\"node\",code=\"node.unreachable\",state=\"ERROR\"} 1\n",
           "gpuforge_validate_node_ok{cluster=\"lab\",node=\"gpu01\"} 1\n",
           "gpuforge_validate_node_ok{cluster=\"lab\",node=\"gpu02\"} 0\n",
           "gpuforge_validate_node_ok{cluster=\"lab\",node=\"gpu03\"} 0\n",
           "gpuforge_validate_last_run_timestamp_seconds{cluster=\"lab\"} 1800000000\n",
           "gpuforge_validate_run_duration_seconds{cluster=\"lab\"} 3.5\n",
           "gpuforge_validate_exit_code{cluster=\"lab\"} 2\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  if (!Have("promtool")) GTEST_SKIP() << "promtool (prometheus) is not installed";
  ScratchDir dir("prom-test");
  const std::string file = dir.Write("gpuforge.prom", text);
  gpuforge::testing::Ran check = Sh(fmt::format("promtool check metrics < '{}'", file));
  EXPECT_EQ(check.code, 0) << check.out << text;
  EXPECT_EQ(check.out, "") << check.out;
}

// An alert rule (the shape of the rendered ones, #10) over these series: promtool's rule
// tests evaluate it against the file's samples, and it fires once per failed node.
TEST(ReportPrometheus, AnAlertRuleOnNodeOkFiresOncePerFailedNode) {
  if (!Have("promtool")) GTEST_SKIP() << "promtool (prometheus) is not installed";
  std::vector<Verdict> v = {
      V("storage.read", "gpu01", "/mnt/data", State::kPass, 12.5, ">= 1 GB/s"),
      V("storage.read", "gpu02", "/mnt/data", State::kFail, 0.5, ">= 1 GB/s", "threshold.below"),
      V("nccl.allreduce", "gpu02", "node", State::kFail, 10, ">= 300 GB/s", "threshold.below"),
  };
  const std::string text = ValidatePrometheus(Info(), v);
  // The file's series, as promtool's input_series for one evaluation.
  std::string series;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line[0] == '#' || line.find("gpuforge_validate_node_ok") != 0) continue;
    const std::size_t sp = line.rfind(' ');
    series += fmt::format("      - series: '{}'\n        values: '{}x3'\n", line.substr(0, sp), line.substr(sp + 1));
  }
  ScratchDir dir("prom-rule-test");
  dir.Write("rules.yml",
            "groups:\n  - name: gpuforge\n    rules:\n      - alert: GpuforgeValidateFailed\n"
            "        expr: gpuforge_validate_node_ok == 0\n        labels: {severity: page}\n");
  const std::string tests = dir.Write(
      "tests.yml", "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n" +
                       series +
                       "    alert_rule_test:\n      - eval_time: 2m\n        alertname: GpuforgeValidateFailed\n"
                       "        exp_alerts:\n          - exp_labels: {severity: page, cluster: lab, node: gpu02}\n");
  gpuforge::testing::Ran r = Sh(fmt::format("cd '{}' && promtool test rules '{}'", dir.path().string(), tests));
  EXPECT_EQ(r.code, 0) << r.out << series;
}

}  // namespace
}  // namespace gpuforge::report
