#include "gpuforge/apply/apply.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "remote/command.h"

namespace gpuforge::apply {
using namespace plan;  // the file plan this stage carries out
namespace {

using remote::ShellQuote;

std::string Parent(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? std::string("/") : std::string(path.substr(0, slash));
}

// Node output shown in a message: printable ASCII only, one line, bounded.
std::string Visible(std::string_view text, std::size_t cap = 200) {
  std::string out;
  for (char c : text.substr(0, cap)) out.push_back(c >= 0x20 && c < 0x7f ? c : (c == '\n' ? '|' : '?'));
  if (text.size() > cap) out += "...";
  return out;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool AllOf(std::string_view s, std::string_view alphabet) {
  return !s.empty() && s.find_first_not_of(alphabet) == std::string_view::npos;
}

constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kOctal = "01234567";
constexpr std::string_view kHex = "0123456789abcdef";
constexpr std::string_view kUserChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

}  // namespace

std::string MakeRunId(std::chrono::system_clock::time_point now, std::uint32_t random) {
  return fmt::format("{:%Y%m%dT%H%M%SZ}-{:08x}", std::chrono::floor<std::chrono::seconds>(now), random);
}

bool IsRunId(std::string_view id) {
  // 20261130T064252Z-1a2b3c4d
  if (id.size() != 25 || id[8] != 'T' || id[15] != 'Z' || id[16] != '-') return false;
  return AllOf(id.substr(0, 8), kDigits) && AllOf(id.substr(9, 6), kDigits) && AllOf(id.substr(17), kHex);
}

std::string BackupPath(std::string_view run_id, std::string_view path) {
  return fmt::format("{}/backups/{}{}", kStateDir, run_id, path);
}

std::string StateScript(std::span<const std::string> paths) {
  std::string list;
  for (const std::string& p : paths) list += " " + ShellQuote(p);
  // Paths never come back in the output: each line answers the path at its position.
  return fmt::format(
      "for p in{}; do\n"
      "  if [ -L \"$p\" ]; then echo O\n"
      "  elif [ -f \"$p\" ]; then\n"
      "    m=$(stat -c '%a %U %s' -- \"$p\") && h=$(sha256sum < \"$p\") || exit 3\n"
      "    echo \"F $m ${{h%% *}}\"\n"
      "  elif [ -e \"$p\" ]; then echo O\n"
      "  else echo N\n"
      "  fi\n"
      "done\n",
      list);
}

Result<std::vector<ActualFile>> ParseState(std::string_view node, std::string_view output, std::size_t count) {
  auto bad = [&](std::size_t line, std::string_view text, std::string_view why) {
    return Error{fmt::format("node {}: unexpected output from the file state script, line {} ({}): '{}'", node,
                             line, why, Visible(text, 80))};
  };
  std::vector<ActualFile> out;
  std::size_t pos = 0, line = 0;
  while (pos < output.size()) {
    std::size_t nl = output.find('\n', pos);
    if (nl == std::string_view::npos) return bad(line + 1, output.substr(pos), "no end of line");
    std::string_view l = output.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (out.size() == count) return bad(line, l, fmt::format("more than the {} lines expected", count));
    ActualFile a;
    if (l == "N") {
      a.kind = ActualFile::Kind::kAbsent;
    } else if (l == "O") {
      a.kind = ActualFile::Kind::kOther;
    } else {
      // F MODE OWNER SIZE SHA256
      std::vector<std::string_view> f;
      std::size_t p = 0;
      while (p <= l.size()) {
        std::size_t sp = l.find(' ', p);
        if (sp == std::string_view::npos) sp = l.size();
        f.push_back(l.substr(p, sp - p));
        p = sp + 1;
      }
      if (f.size() != 5 || f[0] != "F") return bad(line, l, "not N, O or F MODE OWNER SIZE SHA256");
      if (!AllOf(f[1], kOctal) || f[1].size() > 4) return bad(line, l, "mode is not octal");
      if (!AllOf(f[2], kUserChars) || f[2].size() > 32) return bad(line, l, "owner is not a user name");
      if (!AllOf(f[3], kDigits) || f[3].size() > 19) return bad(line, l, "size is not a number");
      if (f[4].size() != 64 || !AllOf(f[4], kHex)) return bad(line, l, "not a SHA-256");
      a.kind = ActualFile::Kind::kRegular;
      a.mode = static_cast<unsigned>(std::stoul(std::string(f[1]), nullptr, 8));
      a.owner = std::string(f[2]);
      a.size = std::stoull(std::string(f[3]));
      a.sha256 = std::string(f[4]);
    }
    out.push_back(std::move(a));
  }
  if (out.size() != count) {
    return Error{fmt::format("node {}: the file state script answered {} of {} paths", node, out.size(), count)};
  }
  return out;
}

std::string LockScript(std::string_view holder) {
  const std::string dir = ShellQuote(kStateDir), lock = ShellQuote(kLockDir),
                    file = ShellQuote(std::string(kLockDir) + "/holder");
  return fmt::format(
      "umask 022\n"
      "mkdir -p {0} || exit 1\n"
      "if mkdir {1} 2>/dev/null; then\n"
      "  printf '%s\\n' {3} > {2} || {{ rm -rf {1}; exit 1; }}\n"
      "  exit 0\n"
      "fi\n"
      "cat {2} 2>/dev/null\n"
      "exit {4}\n",
      dir, lock, file, ShellQuote(holder), kLockHeldExit);
}

std::string UnlockScript() {
  return fmt::format("rm -f {} && rmdir {}\n", ShellQuote(std::string(kLockDir) + "/holder"), ShellQuote(kLockDir));
}

std::string PrepareScript(std::string_view run_id, std::span<const std::string> paths,
                          std::span<const std::string> backups) {
  std::string s = "set -e\numask 022\n";
  std::set<std::string> dirs;
  for (const std::string& p : paths) dirs.insert(Parent(p));
  for (const std::string& d : dirs) s += fmt::format("mkdir -p -- {}\n", ShellQuote(d));
  if (!backups.empty()) {
    const std::string root = fmt::format("{}/backups", kStateDir);
    s += fmt::format("mkdir -p -- {0}\nchmod 0700 {0}\n", ShellQuote(root));
    for (const std::string& p : backups) {
      const std::string to = BackupPath(run_id, p);
      s += fmt::format("mkdir -p -- {}\ncp -p -- {} {}\n", ShellQuote(Parent(to)), ShellQuote(p), ShellQuote(to));
    }
  }
  return s;
}

std::string JournalScript(std::string_view json_line) {
  return fmt::format("umask 022\nmkdir -p {} && printf '%s\\n' {} >> {}\n", ShellQuote(kStateDir),
                     ShellQuote(json_line), ShellQuote(kJournal));
}

const char* ToString(NodeApply::State s) {
  switch (s) {
    case NodeApply::State::kApplied: return "applied";
    case NodeApply::State::kUnchanged: return "unchanged";
    case NodeApply::State::kLocked: return "locked";
    case NodeApply::State::kFailed: return "failed";
  }
  return "?";
}

Result<NodePlan> ReadPlan(remote::Session& s, std::span<const DesiredFile> desired, bool sudo) {
  std::vector<std::string> paths;
  for (const DesiredFile& d : desired) paths.push_back(d.path);
  remote::ExecOptions eo;
  eo.sudo = sudo;
  eo.output_cap = 1 << 20;
  const std::string& node = s.target().node;
  Result<remote::ExecResult> r = s.Exec(StateScript(paths), eo);
  if (!r.ok()) return r.error();
  if (!r->Succeeded()) {
    return Error{fmt::format("node {}: the file state script failed ({}): {}", node, remote::DescribeEnd(*r, eo),
                             Visible(Trimmed(r->err)))};
  }
  Result<std::vector<ActualFile>> actual = ParseState(node, r->out, desired.size());
  if (!actual.ok()) return actual.error();
  return PlanNode(node, desired, *actual);
}

NodeApply ApplyNode(remote::Session& s, std::span<const DesiredFile> desired, const ApplyOptions& o) {
  NodeApply out;
  const std::string& node = s.target().node;
  remote::ExecOptions eo;
  eo.sudo = o.sudo;
  auto fail = [&](std::string step, std::string detail) {
    out.state = NodeApply::State::kFailed;
    out.step = std::move(step);
    out.detail = std::move(detail);
  };
  // Runs one step's command; false (and the node failed) unless it exited 0.
  auto run = [&](const std::string& step, const std::string& command) {
    Result<remote::ExecResult> r = s.Exec(command, eo);
    if (!r.ok()) {
      fail(step, r.error().message);
      return false;
    }
    if (r->Succeeded()) return true;
    std::string text = Trimmed(r->err + (r->err.empty() || r->out.empty() ? "" : "\n") + r->out);
    fail(step, remote::DescribeEnd(*r, eo) + (text.empty() ? "" : ": " + Visible(text, 2000)));
    return false;
  };

  Result<remote::ExecResult> lock = s.Exec(LockScript(o.holder), eo);
  if (!lock.ok()) {
    fail("lock", lock.error().message);
    return out;
  }
  if (lock->end == remote::ExecEnd::kExited && lock->exit_status == kLockHeldExit) {
    out.state = NodeApply::State::kLocked;
    out.step = "lock";
    out.detail = fmt::format("{} is held: {}; if that run is gone, remove the directory by hand", kLockDir,
                             Visible(Trimmed(lock->out)));
    return out;
  }
  if (!lock->Succeeded()) {
    std::string text = Trimmed(lock->err);
    fail("lock", remote::DescribeEnd(*lock, eo) + (text.empty() ? "" : ": " + Visible(text)));
    return out;
  }

  [&] {
    Result<NodePlan> plan = ReadPlan(s, desired, o.sudo);
    if (!plan.ok()) return fail("read state", plan.error().message);
    out.plan = std::move(*plan);
    if (!out.plan.HasChanges()) {
      out.state = NodeApply::State::kUnchanged;
      return;
    }
    std::vector<std::string> touched, backups;
    for (const FileChange& f : out.plan.files) {
      if (f.action != Action::kNone) touched.push_back(f.path);
      if (f.action == Action::kChange) backups.push_back(f.path);
    }
    if (!run("backup", PrepareScript(o.run_id, touched, backups))) return;
    for (std::size_t i = 0; i < out.plan.files.size(); ++i) {
      const FileChange& f = out.plan.files[i];
      if (f.action == Action::kNone) continue;
      remote::UploadOptions uo;
      uo.mode = desired[i].mode;
      uo.owner = "root:root";
      uo.sudo = o.sudo;
      if (Status st = s.Upload(desired[i].content, f.path, uo); !st.ok()) return fail("upload " + f.path, st.error().message);
      out.written.push_back(f.path);
    }
    for (const std::string& h : out.plan.Handlers()) {
      if (!run("handler " + h, h)) return;
      out.handlers.push_back(h);
    }
    out.state = NodeApply::State::kApplied;
  }();

  {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const FileChange& f : out.plan.files) {
      if (std::find(out.written.begin(), out.written.end(), f.path) == out.written.end()) continue;
      files.push_back({{"path", f.path}, {"action", ToString(f.action)},
                       {"backup", f.action == Action::kChange ? BackupPath(o.run_id, f.path) : ""}});
    }
    nlohmann::ordered_json j = {{"run", o.run_id}, {"time", o.time_utc}, {"node", node},
                                {"result", ToString(out.state)}, {"files", files}, {"handlers", out.handlers}};
    if (out.state == NodeApply::State::kFailed) {
      j["failed_step"] = out.step;
      j["error"] = out.detail;
    }
    const NodeApply before = out;
    const std::string line = j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
    if (!run("journal", JournalScript(line)) && before.state == NodeApply::State::kFailed) {
      // The first failure is the one to report.
      out.step = before.step;
      out.detail = before.detail + " (and the journal could not be written)";
    }
  }
  if (Result<remote::ExecResult> u = s.Exec(UnlockScript(), eo); !u.ok() || !u->Succeeded()) {
    out.lock_left = true;
    if (out.state != NodeApply::State::kFailed) {
      fail("unlock", u.ok() ? remote::DescribeEnd(*u, eo) + ": " + Visible(Trimmed(u->err)) : u.error().message);
    }
  }
  return out;
}

}  // namespace gpuforge::apply
