#pragma once

// validate's verdicts as a node_exporter textfile-collector file (Prometheus text format
// 0.0.4), so that monitoring keeps the last acceptance run and an alert rule can page once for
// a node that failed it. Every series is a gauge labelled cluster, node, check and entity:
//   gpuforge_validate_value          the measured value (label unit), where one was measured
//   gpuforge_validate_pass_mark      the threshold's number (label op: ">=", "<=", "=="), where
//                                    the threshold states one in the value's unit
//   gpuforge_validate_state          1 for the verdict's state, 0 for the other four (label state)
//   gpuforge_validate_failure_info   1 per non-PASS verdict, with its code
//   gpuforge_validate_node_ok        per node: 1 when none of its verdicts failed the run
//   gpuforge_validate_last_run_timestamp_seconds, _run_duration_seconds, _exit_code: the run.
// No sample carries a timestamp: the textfile collector drops a whole file that has one
// (node_exporter collector/textfile.go, processFile / hasTimestamps). docs/cli.md lists the
// series with an alert rule.

#include <optional>
#include <span>
#include <string>

#include "gpuforge/report/run_info.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::report {

std::string ValidatePrometheus(const RunInfo& run, std::span<const validate::Verdict> verdicts);

// The number a threshold text holds a value against: ">= 1.5 GB/s (guide ...)" in unit "GB/s"
// gives {">=", 1.5}. nullopt when the text states no comparison and number, or the number is in
// another unit than the value ("ACTIVE, 4X, >= 400 Gb/s" for a value without a unit).
struct PassMark {
  std::string op;  // ">=", "<=", "=="
  double value = 0;
};
std::optional<PassMark> ParsePassMark(std::string_view threshold, std::string_view unit);

}  // namespace gpuforge::report
