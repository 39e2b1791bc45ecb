#pragma once

// Hand-built node plans for the report tests: nodes whose plan has one file change, and one
// node that could not be read.

#include <string>
#include <vector>

#include "gpuforge/apply/read_plans.h"

namespace gpuforge::report::testing {

// gpu01..gpuNN each with `action` on /etc/nccl.conf, then gpu(N+1) refusing the connection.
inline std::vector<apply::NodePlanRead> SampleReads(int planned, plan::Action action) {
  std::vector<apply::NodePlanRead> reads(static_cast<std::size_t>(planned) + 1);
  for (int i = 0; i <= planned; ++i) reads[i].node = "gpu0" + std::to_string(i + 1);
  for (int i = 0; i < planned; ++i) {
    reads[i].plan.emplace();
    reads[i].plan->node = reads[i].node;
    plan::FileChange f;
    f.path = "/etc/nccl.conf";
    f.action = action;
    f.content = action == plan::Action::kChange;
    reads[i].plan->files.push_back(f);
  }
  reads[planned].error = "node " + reads[planned].node + ": connection refused";
  return reads;
}

}  // namespace gpuforge::report::testing
