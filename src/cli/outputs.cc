#include "cli/outputs.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "gpuforge/base/files.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/report/html_report.h"
#include "gpuforge/report/junit.h"
#include "gpuforge/report/prometheus.h"

namespace gpuforge::cli {
namespace {

namespace fs = std::filesystem;

// Why `dir` (a directory to put a file in, perhaps not there yet) cannot take one; "" when it can.
std::string DirProblem(const fs::path& dir) {
  std::error_code ec;
  fs::path d = dir.empty() ? fs::path(".") : dir;
  // The nearest directory that exists: the write creates the rest below it. A relative path
  // ("out/validate.xml") runs out of parents at its first name, below the working directory.
  while (!fs::exists(d, ec)) {
    if (!d.has_parent_path() || d.parent_path() == d) {
      if (d.is_relative()) d = ".";
      break;
    }
    d = d.parent_path();
  }
  if (!fs::is_directory(d, ec)) return fmt::format("{} is not a directory", d.string());
  if (d != (dir.empty() ? fs::path(".") : dir)) {
    // Try it: access(2) says yes to root everywhere, but /proc or a read-only mount still
    // refuses the mkdir the write will need.
    std::string tmpl = (d / ".gpuforge-mkdir-check-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return fmt::format("cannot create a directory in {}: {}", d.string(), std::strerror(errno));
    }
    ::rmdir(tmpl.c_str());
    return "";
  }
  // Where it exists, try: permissions are not the only reason a file cannot be made (a
  // read-only mount, root on an NFS export).
  std::string tmpl = (d / ".gpuforge-write-check-XXXXXX").string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return fmt::format("cannot create a file in {}: {}", d.string(), std::strerror(errno));
  ::close(fd);
  ::unlink(tmpl.c_str());
  return "";
}

}  // namespace

bool CheckOutputFile(Context& ctx, std::string_view flag, const std::string& path) {
  if (path.empty()) return true;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    ctx.Error(fmt::format("{} {}: is a directory", flag, path));
    return false;
  }
  if (std::string why = DirProblem(fs::path(path).parent_path()); !why.empty()) {
    ctx.Error(fmt::format("{} {}: {}", flag, path, why));
    return false;
  }
  return true;
}

void AddFormatWithJunit(CLI::App& app, Format* format) {
  const std::map<std::string, Format> choices = {
      {"text", Format::kText}, {"json", Format::kJson}, {"junit", Format::kJunit}};
  CompleteAs(app.add_option("--format", *format, "Output format: text, json or junit (JUnit XML for CI)"),
             Values::kChoices, {"text", "json", "junit"})
      ->transform(CLI::CheckedTransformer(choices, CLI::ignore_case))
      ->option_text("FORMAT");
}

void AddJunitOption(CLI::App& app, OutputFlags* f) {
  CompleteAs(app.add_option("--junit", f->junit, "Also write the results as JUnit XML to FILE (for CI test reports)"), Values::kFile)
      ->option_text("FILE");
}

void AddResultOptions(CLI::App& app, OutputFlags* f) {
  CompleteAs(app.add_option("--prometheus", f->prometheus,
                 "Also write the results for node_exporter's textfile collector to FILE (NAME.prom)"), Values::kFile)
      ->option_text("FILE");
  CompleteAs(app.add_option("--report", f->report,
                 "Also write a self-contained HTML acceptance report to FILE (verdict, plots, every node's checks)"), Values::kFile)
      ->option_text("FILE");
  CompleteAs(app.add_option("--save-results", f->save_results, "Keep this run's results in DIR/CLUSTER-TIME.json (a baseline)"), Values::kDir)
      ->option_text("DIR");
  CompleteAs(app.add_option("--baseline", f->baseline,
                 "Compare with a saved run: a value worse by more than the tolerance is a regression (exit 1)"), Values::kFile)
      ->option_text("FILE");
  app.add_option("--baseline-tolerance", f->tolerance_pct, "Percent a value may be worse than the baseline (default 10)")
      ->check(CLI::Range(0.0, 1000.0))
      ->option_text("PCT");
}

bool CheckOutputs(Context& ctx, const OutputFlags& f) {
  if (!CheckOutputFile(ctx, "--junit", f.junit) || !CheckOutputFile(ctx, "--prometheus", f.prometheus) ||
      !CheckOutputFile(ctx, "--report", f.report)) {
    return false;
  }
  if (!f.save_results.empty()) {
    std::error_code ec;
    if (fs::exists(f.save_results, ec) && !fs::is_directory(f.save_results, ec)) {
      ctx.Error(fmt::format("--save-results {}: is not a directory", f.save_results));
      return false;
    }
    if (std::string why = DirProblem(f.save_results); !why.empty()) {
      ctx.Error(fmt::format("--save-results {}: {}", f.save_results, why));
      return false;
    }
  }
  return true;
}

std::optional<report::Baseline> LoadBaseline(Context& ctx, const OutputFlags& f, std::string_view cluster,
                                             bool* refused) {
  *refused = false;
  if (f.baseline.empty()) return std::nullopt;
  Result<std::string> text = base::ReadInputFile({.path = f.baseline, .what = "baseline"});
  Result<report::Baseline> b = text.ok() ? report::ParseBaseline(*text, f.baseline, cluster)
                                         : Result<report::Baseline>(text.error());
  if (!b.ok()) {
    ctx.Error(fmt::format("--baseline: {}", b.error().message));
    *refused = true;
    return std::nullopt;
  }
  return std::move(*b);
}

bool WriteOutput(Context& ctx, std::string_view flag, const std::string& path, const std::string& content) {
  if (Status s = base::WriteFileAtomically(path, content); !s.ok()) {
    ctx.Error(fmt::format("{}: {}", flag, s.error().message));
    return false;
  }
  return true;
}

bool WriteValidateFiles(Context& ctx, const OutputFlags& outputs, const report::RunInfo& info, const model::Cluster& c,
                        const std::vector<validate::Verdict>& verdicts, const std::optional<report::Comparison>& compared) {
  bool written = true;
  if (!outputs.junit.empty()) written &= WriteOutput(ctx, "--junit", outputs.junit, report::ValidateJunit(info, verdicts));
  if (!outputs.prometheus.empty()) {
    written &= WriteOutput(ctx, "--prometheus", outputs.prometheus, report::ValidatePrometheus(info, verdicts));
  }
  if (!outputs.report.empty()) {
    written &= WriteOutput(ctx, "--report", outputs.report, report::ValidateHtml(info, c, verdicts, compared));
  }
  if (!outputs.save_results.empty()) {
    const std::string path = (std::filesystem::path(outputs.save_results) / report::SavedResultsName(info)).string();
    written &= WriteOutput(ctx, "--save-results", path, report::SavedResults(info, verdicts).dump(2) + "\n");
    if (written && ctx.verbosity >= 0) ctx.Err(fmt::format("validate: results saved to {}\n", path));
  }
  return written;
}

}  // namespace gpuforge::cli
