#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "apply/internal.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/base/names.h"
#include "gpuforge/base/schemas.h"
#include "remote/command.h"

namespace gpuforge::apply {
using namespace internal;  // text helpers shared with apply.cc
using remote::ShellQuote;

std::string JournalReadScript(std::string_view run_id) {
  // The journal is written by nlohmann's compact dump: "run":"ID" with no spaces.
  return fmt::format("if [ -f {0} ]; then grep -F -e {1} -e {2} -- {0} || true; fi\n", ShellQuote(kJournal),
                     ShellQuote(fmt::format("\"run\":\"{}\"", run_id)),
                     ShellQuote(fmt::format("\"rollback_of\":\"{}\"", run_id)));
}

Result<JournalRun> ParseJournal(std::string_view node, std::string_view output, std::string_view run_id) {
  JournalRun out;
  std::vector<JournalFile> intent;
  bool intent_seen = false, done_seen = false;
  std::size_t pos = 0, line = 0;
  const std::string prefix = fmt::format("{}/backups/{}/", kStateDir, run_id);
  while (pos < output.size()) {
    std::size_t nl = output.find('\n', pos);
    if (nl == std::string_view::npos) nl = output.size();
    std::string_view l = output.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    auto bad = [&](std::string_view why) {
      return Error{fmt::format("node {}: journal line {} for run {}: {}: '{}'", node, line, run_id, why, Visible(l, 80))};
    };
    nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad("not JSON");
    // Lines written before the journal named its schema have none; a line of another major
    // version is not read as this one.
    if (j.contains("schema") && j["schema"] != schemas::kJournal) {
      return bad(fmt::format("schema is not {}", schemas::kJournal));
    }
    if (j.contains("rollback_of") && j["rollback_of"] == run_id) {
      // A rollback of this run; when it finished, the run is undone here already.
      if (j.contains("result") && j["result"] == "applied" && j.contains("run") && j["run"].is_string()) {
        out.rolled_back_by = Visible(j["run"].get<std::string>(), 40);
      }
      continue;
    }
    if (!j.contains("run") || j["run"] != run_id) continue;  // grep matched elsewhere in the line
    if (j.contains("rollback_of")) continue;                 // a rollback is not undone from here
    if (!j.contains("files") || !j["files"].is_array()) return bad("no files list");
    const bool is_intent = j.contains("result") && j["result"] == kIntentResult;
    (is_intent ? intent_seen : done_seen) = true;
    std::vector<JournalFile>& into = is_intent ? intent : out.files;
    for (const nlohmann::json& f : j["files"]) {
      if (!f.is_object()) return bad("a file entry is not an object");
      JournalFile jf;
      auto str = [&](const char* key) { return f.contains(key) && f[key].is_string() ? f[key].get<std::string>() : std::string(); };
      jf.path = str("path");
      jf.action = str("action");
      jf.backup = str("backup");
      jf.sha256 = str("sha256");
      if (names::CheckPath(jf.path) || jf.path.front() != '/') return bad("a path gpuforge would not have written");
      if (jf.action != "create" && jf.action != "change" && jf.action != "remove") return bad("unknown action");
      if (jf.action != "create" && jf.backup != prefix + jf.path.substr(1)) return bad("backup is not this run's");
      if (jf.action != "remove" &&
          (jf.sha256.size() != 64 || jf.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)) {
        return bad("no SHA-256 of what the run wrote");
      }
      into.push_back(std::move(jf));
    }
  }
  if (!done_seen && intent_seen) {
    out.files = std::move(intent);
    out.from_intent = true;
  }
  return out;
}

std::string RestoreScript(std::string_view backup, std::string_view path) {
  const std::string b = ShellQuote(backup), p = ShellQuote(path);
  return fmt::format(
      "set -e\n"
      "[ -f {0} ] || {{ echo \"backup {2} is missing\" >&2; exit 1; }}\n"
      "mkdir -p -- {3}\n"
      "t=$(mktemp {4})\n"
      "trap 'rm -f \"$t\"' EXIT\n"
      "cp -p -- {0} \"$t\"\n"
      "mv -fT -- \"$t\" {1}\n"
      "trap - EXIT\n",
      b, p, Visible(backup, kShownChars), ShellQuote(Parent(path)), ShellQuote(std::string(path) + ".gpuforge-rollback.XXXXXX"));
}

NodeApply RollbackNode(remote::Session& s, const RollbackOptions& o) {
  NodeApply out;
  const std::string& node = s.target().node;
  remote::ExecOptions eo;
  eo.sudo = o.apply.sudo;
  auto fail = [&](std::string step, std::string detail) {
    out.state = NodeApply::State::kFailed;
    out.step = std::move(step);
    out.detail = std::move(detail);
  };
  auto exec = [&](const std::string& step, const std::string& command) -> std::optional<std::string> {
    Result<remote::ExecResult> r = s.Exec(command, eo);
    if (!r.ok()) {
      fail(step, r.error().message);
      return std::nullopt;
    }
    if (!r->Succeeded()) {
      std::string text = Trimmed(r->err + r->out);
      fail(step, remote::DescribeEnd(*r, eo) + (text.empty() ? "" : ": " + Visible(text, 2000)));
      return std::nullopt;
    }
    return r->out;
  };

  Result<remote::ExecResult> lock = s.Exec(LockScript(o.apply.holder), eo);
  if (!lock.ok()) {
    fail("lock", lock.error().message);
    return out;
  }
  if (lock->end == remote::ExecEnd::kExited && lock->exit_status == kLockHeldExit) {
    out.state = NodeApply::State::kLocked;
    out.step = "lock";
    out.detail = fmt::format("{} is held: {}", kLockDir, Visible(Trimmed(lock->out), kShownChars));
    return out;
  }
  if (!lock->Succeeded()) {
    fail("lock", remote::DescribeEnd(*lock, eo) + ": " + Visible(Trimmed(lock->err), kShownChars));
    return out;
  }

  std::vector<JournalFile> files;
  [&] {
    std::optional<std::string> journal = exec("read journal", JournalReadScript(o.target_run));
    if (!journal) return;
    Result<JournalRun> parsed = ParseJournal(node, *journal, o.target_run);
    if (!parsed.ok()) return fail("read journal", parsed.error().message);
    files = std::move(parsed->files);
    if (!parsed->rolled_back_by.empty()) {
      out.state = NodeApply::State::kUnchanged;
      out.detail = fmt::format("run {} was already rolled back here by {}", o.target_run, parsed->rolled_back_by);
      return;
    }
    if (files.empty()) {
      out.state = NodeApply::State::kUnchanged;
      out.detail = fmt::format("run {} changed no files here", o.target_run);
      return;
    }
    // Each file must still be what the run left; a later change is someone's work. After an
    // interrupted run (its intent record only), a file may also still be as it was before the
    // run: the backup's content, or absent for one it was to create.
    const bool from_intent = parsed->from_intent;
    std::vector<std::string> paths;
    for (const JournalFile& f : files) paths.push_back(f.path);
    if (from_intent) {
      for (const JournalFile& f : files) paths.push_back(f.backup.empty() ? f.path : f.backup);
    }
    std::optional<std::string> state = exec("read state", StateScript(paths));
    if (!state) return;
    Result<std::vector<ActualFile>> actual = ParseState(node, *state, paths.size());
    if (!actual.ok()) return fail("read state", actual.error().message);
    std::vector<std::string> moved;
    std::vector<bool> untouched(files.size(), false);  // still as before the run: nothing to undo
    for (std::size_t i = 0; i < files.size(); ++i) {
      const ActualFile& a = (*actual)[i];
      const bool regular = a.kind == ActualFile::Kind::kRegular;
      bool as_left = files[i].action == "remove" ? a.kind == ActualFile::Kind::kAbsent
                                                 : regular && a.sha256 == files[i].sha256;
      if (from_intent && !as_left) {
        const ActualFile& before = (*actual)[files.size() + i];
        const bool as_before = files[i].action == "create"
                                   ? a.kind == ActualFile::Kind::kAbsent
                                   : regular && before.kind == ActualFile::Kind::kRegular && a.sha256 == before.sha256;
        untouched[i] = as_before;
        as_left = as_before;
      }
      if (!as_left) moved.push_back(files[i].path);
    }
    if (!moved.empty() && !o.force) {
      return fail("check", fmt::format("changed since run {}: {}; nothing was rolled back here (--force restores "
                                       "them anyway)",
                                       o.target_run, fmt::join(moved, ", ")));
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      const JournalFile& f = files[i];
      if (untouched[i]) continue;
      if (f.action == "create") {
        if (!exec("remove " + f.path, RemoveScript(std::span<const std::string>(&f.path, 1)))) return;
        out.removed.push_back(f.path);
      } else {
        if (!exec("restore " + f.path, RestoreScript(f.backup, f.path))) return;
        out.written.push_back(f.path);
      }
    }
    std::vector<std::string> handlers;
    for (const plan::ImpactRule& r : plan::ImpactTable()) {
      if (r.handler.empty()) continue;
      bool hit = false;
      for (std::size_t i = 0; i < files.size(); ++i) hit = hit || (!untouched[i] && &plan::ImpactFor(files[i].path) == &r);
      std::string h(r.handler);
      if (hit && std::find(handlers.begin(), handlers.end(), h) == handlers.end()) handlers.push_back(h);
    }
    for (const std::string& h : handlers) {
      if (IsClusterHandler(h)) {
        out.deferred.push_back(h);
        continue;
      }
      if (!exec("handler " + h, h)) return;
      out.handlers.push_back(h);
    }
    out.state = NodeApply::State::kApplied;
    if (from_intent) {
      out.detail = fmt::format("from run {}'s intent record: it never finished here (interrupted or its link lost)",
                               o.target_run);
    }
  }();

  if (!out.written.empty() || !out.removed.empty()) {
    // The manifest follows: created files are no longer gpuforge's, restored ones are again.
    std::string script = fmt::format("touch {0}\n", ShellQuote(kManifest));
    for (const std::string& p : out.removed) {
      script += fmt::format("grep -vxF -- {0} {1} > {1}.new || true; mv -fT {1}.new {1}\n", ShellQuote(p), ShellQuote(kManifest));
    }
    for (const JournalFile& f : files) {
      if (f.action == "remove" && std::find(out.written.begin(), out.written.end(), f.path) != out.written.end()) {
        script += fmt::format("grep -qxF -- {0} {1} || printf '%s\\n' {0} >> {1}\n", ShellQuote(f.path), ShellQuote(kManifest));
      }
    }
    const NodeApply before = out;
    if (!exec("manifest", script) && before.state == NodeApply::State::kFailed) {
      out.step = before.step;
      out.detail = before.detail;
    }
    nlohmann::ordered_json j = {{"schema", schemas::kJournal}, {"run", o.apply.run_id}, {"time", o.apply.time_utc}, {"node", node},
                                {"rollback_of", o.target_run}, {"result", ToString(out.state)},
                                {"restored", out.written}, {"removed", out.removed}, {"handlers", out.handlers}};
    if (out.state == NodeApply::State::kFailed) {
      j["failed_step"] = out.step;
      j["error"] = out.detail;
    }
    const NodeApply before_journal = out;
    if (!exec("journal", JournalScript(j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace))) &&
        before_journal.state == NodeApply::State::kFailed) {
      out.step = before_journal.step;
      out.detail = before_journal.detail + " (and the journal could not be written)";
    }
  }
  if (Result<remote::ExecResult> u = s.Exec(UnlockScript(o.apply.holder), eo); !u.ok() || !u->Succeeded()) {
    out.lock_left = true;
    if (out.state != NodeApply::State::kFailed) fail("unlock", u.ok() ? remote::DescribeEnd(*u, eo) : u.error().message);
  }
  return out;
}

}  // namespace gpuforge::apply
