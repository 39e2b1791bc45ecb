#pragma once

// The isolation tests on fakes (isolate_fakes_test.cc, isolate_nccl_fakes_test.cc): the measure
// validate --isolate plans for `check` over every node of the cluster, as the CLI does
// (SetUpRun, PlanRun, PlanIsolationMeasure with the --param words). Where a step refuses, a
// test failure naming why and an empty measure (no `runs`).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuforge/model/cluster.h"
#include "gpuforge/validate/isolate_run.h"
#include "gpuforge/validate/prepare.h"

namespace gpuforge::validate {

inline std::vector<std::string> NodeNames(const model::Cluster& c) {
  std::vector<std::string> out;
  for (const model::Node& n : c.nodes) out.push_back(n.name);
  return out;
}

inline IsolationMeasure PlanMeasureForTest(const model::Cluster& c, const std::string& check,
                                           const std::vector<std::string>& params, Thresholds* thresholds) {
  Result<RunSetup> setup = SetUpRun(c, {{check}, false, "", params});
  if (!setup.ok()) {
    ADD_FAILURE() << setup.error().message;
    return {};
  }
  *thresholds = setup->thresholds;
  std::vector<remote::Target> targets;
  for (const model::Node& n : c.nodes) {
    remote::Target t;
    t.node = n.name;
    targets.push_back(t);
  }
  Result<ValidatePlan> plan = PlanRun(c, targets, setup->checks, setup->probe_params);
  if (!plan.ok()) {
    ADD_FAILURE() << plan.error().message;
    return {};
  }
  Result<IsolationMeasure> m = PlanIsolationMeasure(c, *thresholds, *plan, NodeNames(c), setup->probe_params);
  if (!m.ok()) {
    ADD_FAILURE() << m.error().message;
    return {};
  }
  return *m;
}

}  // namespace gpuforge::validate
