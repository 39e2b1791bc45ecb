#pragma once

// The acceptance report (`validate --report FILE.html`): one self-contained HTML file a team
// signs a hardware delivery off with. Verdict and cluster summary first; then the plots people
// would rather look at than read (per-check bars of each node's value against the pass mark,
// NCCL busbw against message size with the pass mark, a heat map of the pairwise bandwidth
// checks); then every node's checks with value and threshold, the drift found by facts, and
// the inventory, gpuforge version and timestamps.
//
// Self-contained means the file loads nothing: no script, no font, no image URL. The plots are
// inline SVG drawn here, the style is one inline <style>, and a Content-Security-Policy of
// default-src 'none' makes a browser refuse (and log) anything else, which the headless
// Chromium test looks for. Print-friendly: no fixed heights, page breaks between node sections.

#include <optional>
#include <span>
#include <string>

#include "gpuforge/model/cluster.h"
#include "gpuforge/report/baseline.h"
#include "gpuforge/report/run_info.h"
#include "gpuforge/validate/isolate_run.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::report {

// `isolation`: validate --isolate's rounds, drawn as a pair matrix (and a node-by-rail map for
// per-rail RDMA) after the summary.
std::string ValidateHtml(const RunInfo& run, const model::Cluster& c, std::span<const validate::Verdict> verdicts,
                         const std::optional<Comparison>& baseline = std::nullopt,
                         const validate::IsolationResult* isolation = nullptr);

}  // namespace gpuforge::report
