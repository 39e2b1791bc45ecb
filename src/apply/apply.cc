#include "gpuforge/apply/apply.h"

#include <string>
#include <string_view>
#include <vector>

#include "apply/steps.h"

namespace gpuforge::apply {
using namespace plan;  // the plan this stage carries out
namespace {

// The changes themselves, in order; the first step that fails or finds nothing to do stops them.
void ApplyChanges(internal::NodeRun& r) {
  if (r.StopsBefore("read state") || !r.ReadState()) return;
  std::vector<std::string> touched, backups, removals;
  for (const FileChange& f : r.out.plan.files) {
    if (f.action == Action::kCreate || f.action == Action::kChange) touched.push_back(f.path);
    if (f.action == Action::kChange || f.action == Action::kRemove) backups.push_back(f.path);
    if (f.action == Action::kRemove) removals.push_back(f.path);
  }
  const std::vector<std::string> owed = r.out.plan.Handlers();
  if (!r.BackUp(touched, backups, owed)) return;
  if (!r.UploadFiles(true)) return;
  if (!r.InstallPackages()) return;
  if (!r.UploadFiles(false)) return;
  if (!r.RemoveFiles(removals)) return;
  if (!r.RemoveLeftovers()) return;
  std::vector<std::string> started;
  if (!r.CarryOutItems(&started)) return;
  if (!r.RunHandlers(started, owed)) return;
  for (const FileChange& f : r.out.plan.files) {
    if (f.action != Action::kNone) r.out.reboot_needed = r.out.reboot_needed || f.impact == plan::Impact::kReboot;
  }
  r.out.state = NodeApply::State::kApplied;
}

}  // namespace

const char* ToString(NodeApply::State s) {
  switch (s) {
    case NodeApply::State::kApplied: return "applied";
    case NodeApply::State::kUnchanged: return "unchanged";
    case NodeApply::State::kLocked: return "locked";
    case NodeApply::State::kStale: return "stale";
    case NodeApply::State::kFailed: return "failed";
  }
  return "?";
}

bool IsClusterHandler(std::string_view handler) { return handler == "scontrol reconfigure"; }

NodeApply ApplyNode(remote::Session& s, const DesiredNode& desired, const ApplyOptions& o) {
  internal::NodeRun r(s, desired, o);
  if (!r.TakeLock()) return r.out;
  ApplyChanges(r);
  if (r.read && desired.manage_removals && r.out.state != NodeApply::State::kStale) r.WriteManifest();
  if (r.out.state != NodeApply::State::kUnchanged && r.out.state != NodeApply::State::kStale) r.WriteJournal();
  r.ReleaseLock();
  return r.out;
}

}  // namespace gpuforge::apply
