// What a node answers to apply's state scripts: the node state script (ParseNodeState, then
// PlanNodeState on what it read) and the file state script (ParseState, as rollback reads it).
// The first byte chooses the desired node the output answers (how many files, packages,
// modules, sysctl keys and services); the rest is the output. A state that parses answers
// every desired item, in order, and planning from it does not crash.

#include <string>

#include "fuzz_check.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/plan/node_plan.h"

namespace apply = gpuforge::apply;
namespace plan = gpuforge::plan;

namespace {

plan::DesiredNode Desired(unsigned shape) {
  shape %= 216;
  plan::DesiredNode d;
  d.family = shape % 2 ? plan::OsFamily::kRhel : plan::OsFamily::kDebian;
  const unsigned files = (shape / 2) % 3, packages = (shape / 6) % 3, modules = (shape / 18) % 2,
                 sysctls = (shape / 36) % 2, services = (shape / 72) % 3;
  for (unsigned i = 0; i < files; ++i) d.files.push_back({"/etc/gpuforge-fuzz/f" + std::to_string(i), "x\n", 0644});
  for (unsigned i = 0; i < packages; ++i) {
    d.packages.push_back({"pkg" + std::to_string(i), i ? "2.28.9" : "", plan::Impact::kLive, "", ""});
  }
  if (modules) d.modules.push_back("nvidia-peermem");
  if (sysctls) d.sysctls.push_back({"kernel.numa_balancing", "0"});
  for (unsigned i = 0; i < services; ++i) d.services.push_back("svc" + std::to_string(i));
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const plan::DesiredNode d = Desired(data[0]);
  const std::string_view output = gpuforge::fuzz::AsText(data + 1, size - 1);

  if (auto a = apply::ParseNodeState("n1", output, d); a.ok()) {
    FUZZ_CHECK(a->files.size() == d.files.size() && a->packages.size() == d.packages.size() &&
                   a->modules.size() == d.modules.size() && a->sysctls.size() == d.sysctls.size() &&
                   a->services.size() == d.services.size(),
               "the state does not answer every desired item");
    FUZZ_CHECK(a->managed.size() == a->managed_files.size(), "%zu managed paths, %zu states", a->managed.size(),
               a->managed_files.size());
    (void)plan::ReportedFamily(*a);
    auto p = plan::PlanNodeState("n1", d, *a);
    if (!p.ok()) FUZZ_CHECK(!p.error().message.empty(), "a plan error without a message");
  } else {
    FUZZ_CHECK(a.error().message.starts_with("node n1: "), "an error without the node: %s", a.error().message.c_str());
  }

  std::size_t lines = 0;
  for (char c : output) lines += c == '\n';
  if (auto files = apply::ParseState("n1", output, lines); files.ok()) {
    FUZZ_CHECK(files->size() == lines, "%zu file states for %zu lines", files->size(), lines);
    for (const plan::ActualFile& f : *files) {
      if (f.kind == plan::ActualFile::Kind::kRegular) {
        FUZZ_CHECK(f.sha256.size() == 64 && f.mode <= 07777, "a regular file with sha256 '%s' mode %o",
                   f.sha256.c_str(), f.mode);
      }
    }
  }
  return 0;
}
