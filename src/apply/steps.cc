#include "apply/steps.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "apply/internal.h"
#include "gpuforge/base/schemas.h"
#include "remote/command.h"

namespace gpuforge::apply::internal {
using namespace plan;  // the plan this stage carries out
using remote::ShellQuote;

NodeRun::NodeRun(remote::Session& session, const DesiredNode& wanted, const ApplyOptions& options)
    : s(session), desired(wanted), o(options), node(session.target().node) {
  eo.sudo = o.sudo;
  step_eo = eo;
  step_eo.cancel = o.cancel;
}

bool NodeRun::StopsBefore(const std::string& step) {
  if (o.cancel == nullptr || !o.cancel->load()) return false;
  Fail(step, "not started: interrupted");
  return true;
}

void NodeRun::Fail(std::string step, std::string detail) {
  out.state = NodeApply::State::kFailed;
  out.step = std::move(step);
  out.detail = std::move(detail);
}

bool NodeRun::Run(const std::string& step, const std::string& command, const remote::ExecOptions& opts) {
  if (opts.cancel != nullptr && StopsBefore(step)) return false;
  Result<remote::ExecResult> r = s.Exec(command, opts);
  if (!r.ok()) {
    Fail(step, r.error().message);
    return false;
  }
  if (r->Succeeded()) return true;
  std::string text = Trimmed(r->err + (r->err.empty() || r->out.empty() ? "" : "\n") + r->out);
  // The end of a long output (apt's) is where the reason is.
  if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
  Fail(step, remote::DescribeEnd(*r, opts) + (text.empty() ? "" : ": " + Visible(text, 2000)));
  return false;
}

bool NodeRun::TakeLock() {
  Result<remote::ExecResult> lock = s.Exec(LockScript(o.holder), eo);
  if (!lock.ok()) {
    Fail("lock", lock.error().message);
    return false;
  }
  if (lock->end == remote::ExecEnd::kExited && lock->exit_status == kLockHeldExit) {
    out.state = NodeApply::State::kLocked;
    out.step = "lock";
    out.detail = fmt::format("{} is held: {}; if that run is gone, `gpuforge unlock INVENTORY --run ID` removes "
                             "its lock",
                             kLockDir, Visible(Trimmed(lock->out), kShownChars));
    return false;
  }
  if (!lock->Succeeded()) {
    std::string text = Trimmed(lock->err);
    Fail("lock", remote::DescribeEnd(*lock, eo) + (text.empty() ? "" : ": " + Visible(text, kShownChars)));
    return false;
  }
  return true;
}

bool NodeRun::ReadState() {
  std::string state_sha;
  Result<NodePlan> plan = ReadNodePlan(s, desired, o.sudo, &state_sha);
  if (!plan.ok()) {
    Fail("read state", plan.error().message);
    return false;
  }
  read = true;
  out.plan = std::move(*plan);
  if (!o.expect_state_sha256.empty() && state_sha != o.expect_state_sha256) {
    out.state = NodeApply::State::kStale;
    out.step = "read state";
    out.detail = "the node changed since the plan was made; nothing was done here (run plan again)";
    return false;
  }
  if (!out.plan.HasChanges()) {
    out.state = NodeApply::State::kUnchanged;
    return false;
  }
  return true;
}

bool NodeRun::BackUp(std::span<const std::string> touched, std::span<const std::string> backups,
                     std::span<const std::string> owed) {
  // The intent record goes in the same invocation as the backups, after them and before the
  // first write: a run killed anywhere later (SIGKILL, a lost link) leaves a journal line that
  // points at its backups, and rollback works from it (issue #12, item 3).
  return Run("backup", PrepareScript(o.run_id, touched, backups, owed) + JournalScript(IntentLine()), step_eo);
}

std::string NodeRun::IntentLine() const {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < out.plan.files.size(); ++i) {
    const FileChange& f = out.plan.files[i];
    if (f.action == Action::kNone) continue;
    nlohmann::ordered_json e = {{"path", f.path}, {"action", ToString(f.action)},
                                {"backup", f.action == Action::kCreate ? "" : BackupPath(o.run_id, f.path)}};
    if (f.action != Action::kRemove && i < desired.files.size()) e["sha256"] = desired.files[i].Sha256();
    files.push_back(std::move(e));
  }
  nlohmann::ordered_json j = {{"schema", schemas::kJournal}, {"run", o.run_id}, {"time", o.time_utc}, {"node", node},
                              {"result", std::string(kIntentResult)}, {"files", files}};
  return j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

bool NodeRun::UploadFiles(bool repositories) {
  for (std::size_t i = 0; i < desired.files.size(); ++i) {
    const FileChange& f = out.plan.files[i];
    const bool repo = std::find(desired.repository_files.begin(), desired.repository_files.end(), f.path) !=
                      desired.repository_files.end();
    if (f.action == Action::kNone || repo != repositories) continue;
    remote::UploadOptions uo;
    uo.mode = desired.files[i].mode;
    uo.owner = desired.files[i].owner;
    uo.sudo = o.sudo;
    if (StopsBefore("upload " + f.path)) return false;
    if (Status st = s.Upload(desired.files[i].Content(), f.path, uo); !st.ok()) {
      Fail("upload " + f.path, st.error().message);
      return false;
    }
    out.written.push_back(f.path);
  }
  return true;
}

bool NodeRun::InstallPackages() {
  std::vector<std::string> specs;
  for (const plan::ItemChange& it : out.plan.items) {
    if (it.kind == plan::ItemChange::Kind::kPackage && it.action != Action::kNone) specs.push_back(it.want);
  }
  if (!specs.empty()) {
    // Not stopped once begun: apt or dnf killed mid-transaction leaves dpkg "interrupted" and
    // the node needing `dpkg --configure -a`; an interrupt waits for it (its own timeout holds).
    if (StopsBefore("packages")) return false;
    remote::ExecOptions po = eo;
    po.timeout = o.package_timeout;
    po.output_cap = 16 << 20;
    if (!Run("packages", PackagesScript(desired.family, desired.repository_files, specs), po)) return false;
    for (const plan::ItemChange& it : out.plan.items) {
      if (it.kind != plan::ItemChange::Kind::kPackage || it.action == Action::kNone) continue;
      out.items.push_back("package " + it.want);
      out.reboot_needed = out.reboot_needed || it.impact == plan::Impact::kReboot;
    }
  }
  return true;
}

bool NodeRun::RemoveFiles(const std::vector<std::string>& removals) {
  if (!removals.empty()) {
    if (!Run("remove", RemoveScript(removals), step_eo)) return false;
    out.removed = removals;
  }
  return true;
}

bool NodeRun::RemoveLeftovers() {
  if (out.plan.leftovers.empty()) return true;
  // Listed by the state script read under this lock; removed only while still a plain file
  // (rm on a link would remove the link, but gpuforge promises to touch nothing it did not write).
  std::string script = "for p in";
  for (const std::string& p : out.plan.leftovers) script += " " + ShellQuote(p);
  script += "; do if [ -f \"$p\" ] && [ ! -L \"$p\" ]; then rm -f -- \"$p\" || exit 1; fi; done\n";
  if (!Run("remove leftover temporaries", script, step_eo)) return false;
  for (const std::string& p : out.plan.leftovers) out.items.push_back("leftover temporary " + p + " removed");
  return true;
}

bool NodeRun::CarryOutItems(std::vector<std::string>* started) {
  for (const plan::ItemChange& it : out.plan.items) {
    if (it.kind == plan::ItemChange::Kind::kPackage || it.action == Action::kNone) continue;
    const std::string step = fmt::format("{} {}", plan::ToString(it.kind), it.id);
    if (!Run(step, ItemScript(it), step_eo)) return false;
    out.items.push_back(step);
    if (it.kind == plan::ItemChange::Kind::kService && it.want.find("start") != std::string::npos) started->push_back(it.id);
  }
  return true;
}

bool NodeRun::RunHandlers(const std::vector<std::string>& started, const std::vector<std::string>& owed) {
  for (const std::string& h : out.plan.Handlers()) {
    if (IsClusterHandler(h)) {
      out.deferred.push_back(h);
      continue;
    }
    // A service started in this run read the new files already.
    bool fresh = std::any_of(started.begin(), started.end(),
                             [&](const std::string& u) { return h == "systemctl restart " + u; });
    if (fresh) continue;
    if (!Run("handler " + h, h, step_eo)) return false;
    out.handlers.push_back(h);
  }
  if (!owed.empty() && !Run("handlers done", "rm -f -- " + ShellQuote(kPendingHandlers) + "\n", step_eo)) return false;
  return true;
}

void NodeRun::WriteManifest() {
  std::vector<std::string> next = plan::NextManifest(desired, out.plan.managed, out.written, out.removed,
                                                     out.state == NodeApply::State::kApplied ||
                                                         out.state == NodeApply::State::kUnchanged);
  std::vector<std::string> had = out.plan.managed;
  std::sort(had.begin(), had.end());
  if (next != had) {
    std::string text;
    for (const std::string& p : next) text += p + "\n";
    remote::UploadOptions uo;
    uo.mode = 0644;
    uo.owner = "root:root";
    uo.sudo = o.sudo;
    if (Status st = s.Upload(text, std::string(kManifest), uo); !st.ok() && out.state != NodeApply::State::kFailed) {
      Fail("manifest", st.error().message);
    }
  }
}

void NodeRun::WriteJournal() {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < out.plan.files.size(); ++i) {
    const FileChange& f = out.plan.files[i];
    const bool written = std::find(out.written.begin(), out.written.end(), f.path) != out.written.end();
    const bool removed = std::find(out.removed.begin(), out.removed.end(), f.path) != out.removed.end();
    if (!written && !removed) continue;
    nlohmann::ordered_json e = {{"path", f.path}, {"action", ToString(f.action)},
                                {"backup", f.action == Action::kCreate ? "" : BackupPath(o.run_id, f.path)}};
    if (written && i < desired.files.size()) e["sha256"] = desired.files[i].Sha256();
    files.push_back(std::move(e));
  }
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const plan::ItemChange& it : out.plan.items) {
    if (it.action == Action::kNone) continue;
    items.push_back({{"kind", plan::ToString(it.kind)}, {"id", it.id}, {"from", it.from}, {"to", it.to}});
  }
  nlohmann::ordered_json j = {{"schema", schemas::kJournal}, {"run", o.run_id}, {"time", o.time_utc}, {"node", node},
                              {"result", ToString(out.state)}, {"files", files}, {"items", items},
                              {"done", out.items}, {"handlers", out.handlers}};
  if (out.state == NodeApply::State::kFailed) {
    j["failed_step"] = out.step;
    j["error"] = out.detail;
  }
  const NodeApply before = out;
  const std::string line = j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
  if (!Run("journal", JournalScript(line), eo) && before.state == NodeApply::State::kFailed) {
    // The first failure is the one to report.
    out.step = before.step;
    out.detail = before.detail + " (and the journal could not be written)";
  }
}

void NodeRun::ReleaseLock() {
  if (Result<remote::ExecResult> u = s.Exec(UnlockScript(o.holder), eo); !u.ok() || !u->Succeeded()) {
    out.lock_left = true;
    if (out.state != NodeApply::State::kFailed) {
      Fail("unlock", u.ok() ? remote::DescribeEnd(*u, eo) + ": " + Visible(Trimmed(u->err), kShownChars) : u.error().message);
    }
  }
}

}  // namespace gpuforge::apply::internal
