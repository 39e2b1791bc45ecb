#pragma once

// JUnit XML for CI (Jenkins, GitLab, GitHub test reporters): validate's, facts --check's and
// lint's results as test cases, so a pipeline gating node bring-up shows each failed check
// as a failed test. The shape is the Ant/Surefire one that Jenkins' junit-10.xsd describes
// (tests/data/report/junit-10.xsd, the schema the tests validate against):
//   <testsuites> one <testsuite> per node, one more for pair and group checks;
//   <testcase name="CHECK ENTITY" classname="gpuforge.validate.CHECK"> per verdict;
//   FAIL -> <failure type=CODE message="CODE: VALUE (THRESHOLD)"> with detail and next step;
//   ERROR -> <error>; SKIP -> <skipped message=REASON> (never a pass); WARN passes with the
//   warning in <system-out>, and fails like FAIL with --strict.
// `time` on <testsuites> is the whole run's; on a validate <testcase>, the run that gave the
// verdict (every attempt), where one ran on a node.

#include <span>
#include <string>

#include "gpuforge/facts/cabling.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/report/run_info.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::report {

std::string ValidateJunit(const RunInfo& run, std::span<const validate::Verdict> verdicts);

// facts --check: per node, one test case per drift finding (FAIL with its code, expected and
// found) or one passing "no drift" case; a node not gathered is an <error> node.unreachable.
std::string FactsJunit(const RunInfo& run, const model::Cluster& c, const facts::Collected& collected);
// The verdicts FactsJunit reports (also what --prometheus writes for facts).
std::vector<validate::Verdict> FactsVerdicts(const model::Cluster& c, const facts::Collected& collected);

// lint: one suite; per rule one passing case, or one case per finding: an error-severity
// finding fails, a warning or info passes with its message in <system-out>; a rule the
// inventory disabled is <skipped>.
std::string LintJunit(const RunInfo& run, const model::Cluster& cluster, const lint::LintResult& result);

// cabling: one suite per network, one case per designed cable ("gpu001:mlx5_0 -> leaf1:1")
// and per UNEXPECTED one. MISSING, MISWIRED and SWAPPED fail; DEGRADED, PORT-UNKNOWN and
// UNEXPECTED pass with the finding in <system-out>, and fail with `strict`; UNMEASURED is
// <skipped> with its reason.
std::string CablingJunit(const RunInfo& run, std::string_view cluster, const facts::CablingResult& r, bool strict);

}  // namespace gpuforge::report
