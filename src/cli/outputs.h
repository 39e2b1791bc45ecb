#pragma once

// The report files a command writes beside what it prints (--junit, --prometheus,
// --report, --save-results) and the baseline it compares with (--baseline): their flags, the checks that
// make a bad path a usage error before any node is touched, and the atomic writes.

#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/report/baseline.h"
#include "gpuforge/report/run_info.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::cli {

struct OutputFlags {
  std::string junit;         // --junit FILE
  std::string prometheus;    // --prometheus FILE
  std::string report;        // --report FILE.html (validate's acceptance report)
  std::string save_results;  // --save-results DIR
  std::string baseline;      // --baseline FILE
  double tolerance_pct = 10; // --baseline-tolerance PCT
};

// --format text|json|junit.
void AddFormatWithJunit(CLI::App& app, Format* format);
void AddJunitOption(CLI::App& app, OutputFlags* flags);
// --prometheus, --report, --save-results, --baseline and --baseline-tolerance (validate).
void AddResultOptions(CLI::App& app, OutputFlags* flags);

// Whether every file and directory the flags name can be written: the file is not a
// directory, and its directory (or the nearest one that exists, which the write creates the
// rest under) takes a new file. Prints the error naming the flag and the path.
bool CheckOutputs(Context& ctx, const OutputFlags& flags);
// One output file flag, checked the same way before anything runs: not a directory, and its
// directory can take a new file (tried). False, with the error printed, when it cannot.
bool CheckOutputFile(Context& ctx, std::string_view flag, const std::string& path);

// --baseline read and checked against the cluster; nullopt with the error printed when it is
// refused, and nullopt without one when no --baseline was given (`refused` tells them apart).
std::optional<report::Baseline> LoadBaseline(Context& ctx, const OutputFlags& flags, std::string_view cluster,
                                             bool* refused);

// Writes `content` to `path` atomically (a temporary sibling renamed over it, the way the
// node_exporter textfile collector asks files to be written); prints the error and returns
// false when it fails.
bool WriteOutput(Context& ctx, std::string_view flag, const std::string& path, const std::string& content);

// validate's --junit, --prometheus, --report and --save-results, each written whatever the
// format printed; false (each error printed) when one could not be written.
bool WriteValidateFiles(Context& ctx, const OutputFlags& outputs, const report::RunInfo& info, const model::Cluster& c,
                        const std::vector<validate::Verdict>& verdicts, const std::optional<report::Comparison>& compared);

}  // namespace gpuforge::cli
