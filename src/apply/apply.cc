#include "gpuforge/apply/apply.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "apply/internal.h"
#include "gpuforge/base/sha256.h"
#include "remote/command.h"

namespace gpuforge::apply {
using namespace plan;      // the plan this stage carries out
using namespace internal;  // text helpers shared with rollback.cc
namespace {

using remote::ShellQuote;

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
                          std::span<const std::string> backups, std::span<const std::string> handlers) {
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
  if (!handlers.empty()) {
    std::string lines;
    for (const std::string& h : handlers) lines += h + "\n";
    s += fmt::format("mkdir -p -- {}\nprintf '%s' {} > {}\n", ShellQuote(kStateDir), ShellQuote(lines),
                     ShellQuote(kPendingHandlers));
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
    case NodeApply::State::kStale: return "stale";
    case NodeApply::State::kFailed: return "failed";
  }
  return "?";
}


namespace {

constexpr std::string_view kStateFunctions = R"SH(# gpuforge node state: reads only
LC_ALL=C; export LC_ALL
f=/etc/os-release; [ -r "$f" ] || f=/usr/lib/os-release
kv() { sed -n "s/^$1=//p" "$f" 2>/dev/null | head -n 1 | tr -d "\"'"; }
echo "os $(kv ID)"
echo "like $(kv ID_LIKE)"
echo "arch $(uname -m)"
st() {
  if [ -L "$1" ]; then echo O
  elif [ -f "$1" ]; then
    m=$(stat -c '%a %U %s' -- "$1") && h=$(sha256sum < "$1") || exit 3
    echo "F $m ${h%% *}"
  elif [ -e "$1" ]; then echo O
  else echo N
  fi
}
pkg() {
  if command -v dpkg-query >/dev/null 2>&1; then
    v=$(dpkg-query -W -f '${db:Status-Abbrev}|${Version}\n' "$1" 2>/dev/null | head -n 1)
    case $v in ii*) echo "P ${v#*|}" ;; *) echo "P -" ;; esac
  elif command -v rpm >/dev/null 2>&1; then
    if v=$(rpm -q --qf '%{VERSION}-%{RELEASE}\n' "$1" 2>/dev/null | head -n 1) && [ -n "$v" ]; then echo "P $v"; else echo "P -"; fi
  else echo "P ?"
  fi
}
mod() { if [ -d "/sys/module/$1" ]; then echo "M 1"; else echo "M 0"; fi; }
sc() { if v=$(sysctl -n "$1" 2>/dev/null); then printf 'S %s\n' "$(printf '%s' "$v" | tr '\t\n' '  ')"; else echo "S ?"; fi; }
svc() {
  if command -v systemctl >/dev/null 2>&1; then
    e=$(systemctl is-enabled "$1" 2>/dev/null | head -n 1); a=$(systemctl is-active "$1" 2>/dev/null | head -n 1)
    echo "U ${e:-not-found} ${a:-unknown}"
  else echo "U ? ?"
  fi
}
)SH";

std::string Loop(std::string_view fn, const std::vector<std::string>& words) {
  if (words.empty()) return "";
  std::string s = "for x in";
  for (const std::string& w : words) s += " " + ShellQuote(w);
  return s + "; do " + std::string(fn) + " \"$x\"; done\n";
}

bool Printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

constexpr std::string_view kWordChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._ -";
constexpr std::string_view kVersionChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+~:-";
constexpr std::string_view kPathChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+@%-";

}  // namespace

std::string NodeStateScript(const DesiredNode& d) {
  std::string s(kStateFunctions);
  std::vector<std::string> paths, pkgs, mods, keys;
  for (const DesiredFile& f : d.files) paths.push_back(f.path);
  for (const plan::DesiredPackage& p : d.packages) pkgs.push_back(p.name);
  for (const std::string& m : d.modules) {
    std::string sys = m;
    std::replace(sys.begin(), sys.end(), '-', '_');  // /sys/module names use '_'
    mods.push_back(sys);
  }
  for (const plan::DesiredSysctl& k : d.sysctls) keys.push_back(k.key);
  s += Loop("st", paths) + Loop("pkg", pkgs) + Loop("mod", mods) + Loop("sc", keys) + Loop("svc", d.services);
  s += fmt::format("if [ -f {0} ]; then while IFS= read -r p; do echo \"G $p\"; st \"$p\"; done < {0}; fi\n",
                   ShellQuote(kManifest));
  s += fmt::format("if [ -f {0} ]; then while IFS= read -r h; do echo \"H $h\"; done < {0}; fi\necho end\n",
                   ShellQuote(kPendingHandlers));
  return s;
}

Result<ActualNode> ParseNodeState(std::string_view node, std::string_view output, const DesiredNode& d) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos < output.size()) {
    std::size_t nl = output.find('\n', pos);
    if (nl == std::string_view::npos) nl = output.size();
    lines.push_back(output.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::size_t i = 0;
  auto bad = [&](std::string_view why) {
    std::string_view l = i < lines.size() ? lines[i] : std::string_view("(end of output)");
    return Error{fmt::format("node {}: unexpected output from the node state script, line {} ({}): '{}'", node, i + 1,
                             why, Visible(l, 80))};
  };
  // The value after "TAG ", or nullopt.
  auto take = [&](std::string_view tag) -> std::optional<std::string_view> {
    if (i >= lines.size() || !lines[i].starts_with(tag) || lines[i].size() < tag.size() + 1 || lines[i][tag.size()] != ' ') {
      return std::nullopt;
    }
    return lines[i].substr(tag.size() + 1);
  };
  auto word = [&](std::string_view tag, std::string_view alphabet, std::string* out) -> Status {
    std::optional<std::string_view> v = take(tag);
    if (!v && i < lines.size() && lines[i] == tag) v = std::string_view();
    if (!v) return bad(fmt::format("expected '{} ...'", tag));
    if (v->size() > 128 || v->find_first_not_of(alphabet) != std::string_view::npos) return bad("unexpected characters");
    *out = std::string(*v);
    ++i;
    return {};
  };
  ActualNode a;
  if (Status st = word("os", kWordChars, &a.os_id); !st.ok()) return st.error();
  if (Status st = word("like", kWordChars, &a.os_like); !st.ok()) return st.error();
  if (Status st = word("arch", kWordChars, &a.arch); !st.ok()) return st.error();
  auto file_state = [&](ActualFile* f) -> Status {
    if (i >= lines.size()) return bad("a file state line is missing");
    Result<std::vector<ActualFile>> one = ParseState(node, std::string(lines[i]) + "\n", 1);
    if (!one.ok()) return bad("not a file state (N, O or F MODE OWNER SIZE SHA256)");
    *f = (*one)[0];
    ++i;
    return {};
  };
  for (std::size_t k = 0; k < d.files.size(); ++k) {
    ActualFile f;
    if (Status st = file_state(&f); !st.ok()) return st.error();
    a.files.push_back(std::move(f));
  }
  for (std::size_t k = 0; k < d.packages.size(); ++k) {
    std::string v;
    if (Status st = word("P", std::string(kVersionChars) + "?", &v); !st.ok()) return st.error();
    if (v == "?") {
      return Error{fmt::format("node {}: neither dpkg-query nor rpm is there, so gpuforge cannot manage packages "
                               "(leave them out with --only)",
                               node)};
    }
    a.packages.push_back(v == "-" ? "" : v);
  }
  for (std::size_t k = 0; k < d.modules.size(); ++k) {
    std::string v;
    if (Status st = word("M", "01", &v); !st.ok()) return st.error();
    a.modules.push_back(v == "1");
  }
  for (std::size_t k = 0; k < d.sysctls.size(); ++k) {
    std::optional<std::string_view> v = take("S");
    if (!v || v->size() > 256 || !Printable(*v)) return bad("expected 'S VALUE' or 'S ?'");
    a.sysctls.push_back(*v == "?" ? std::nullopt : std::optional<std::string>(*v));
    ++i;
  }
  for (std::size_t k = 0; k < d.services.size(); ++k) {
    std::string v;
    if (Status st = word("U", "abcdefghijklmnopqrstuvwxyz- ?", &v); !st.ok()) return st.error();
    std::size_t sp = v.find(' ');
    if (sp == std::string::npos || v.find(' ', sp + 1) != std::string::npos) {
      --i;
      return bad("expected 'U ENABLED ACTIVE'");
    }
    if (v == "? ?") {
      return Error{fmt::format("node {}: systemctl is not there, so gpuforge cannot manage services (leave them out "
                               "with --only)",
                               node)};
    }
    a.services.push_back({v.substr(0, sp), v.substr(sp + 1)});
  }
  while (i < lines.size() && lines[i].starts_with("G ")) {
    std::string_view path = lines[i].substr(2);
    if (path.empty() || path.front() != '/' || path.size() > 1024 || path.find_first_not_of(kPathChars) != std::string_view::npos ||
        path.find("/../") != std::string_view::npos) {
      return bad(fmt::format("{} lists a path gpuforge would not have written", kManifest));
    }
    ++i;
    ActualFile f;
    if (Status st = file_state(&f); !st.ok()) return st.error();
    a.managed.emplace_back(path);
    a.managed_files.push_back(std::move(f));
  }
  while (i < lines.size() && lines[i].starts_with("H ")) {
    std::string_view h = lines[i].substr(2);
    if (!plan::IsHandler(h)) return bad(fmt::format("{} lists a command that is not a handler", kPendingHandlers));
    a.pending.emplace_back(h);
    ++i;
  }
  if (i >= lines.size() || lines[i] != "end") return bad("expected 'end'");
  if (++i != lines.size()) return bad("output after 'end'");
  return a;
}

Result<NodePlan> ReadNodePlan(remote::Session& s, const DesiredNode& d, bool sudo, std::string* state_sha256) {
  remote::ExecOptions eo;
  eo.sudo = sudo;
  eo.output_cap = 4 << 20;
  eo.input = NodeStateScript(d);
  const std::string& node = s.target().node;
  Result<remote::ExecResult> r = s.Exec("sh -s", eo);
  if (!r.ok()) return r.error();
  if (!r->Succeeded()) {
    return Error{fmt::format("node {}: the node state script failed ({}): {}", node, remote::DescribeEnd(*r, eo),
                             Visible(Trimmed(r->err)))};
  }
  Result<ActualNode> actual = ParseNodeState(node, r->out, d);
  if (!actual.ok()) return actual.error();
  if (state_sha256 != nullptr) *state_sha256 = base::Sha256Hex(r->out);
  return PlanNodeState(node, d, *actual);
}

std::string PackagesScript(plan::OsFamily family, std::span<const std::string> repository_files,
                           std::span<const std::string> specs) {
  std::string list;
  for (const std::string& spec : specs) list += " " + ShellQuote(spec);
  if (family == plan::OsFamily::kRhel) {
    return "set -e\ndnf -y -q --setopt=install_weak_deps=False install" + list + "\n";
  }
  std::string s = "set -e\nDEBIAN_FRONTEND=noninteractive; export DEBIAN_FRONTEND\n";
  if (repository_files.empty()) {
    s += "apt-get -q update\n";
  } else {
    // Only gpuforge's lists: the node's other repositories are neither contacted nor cleaned.
    for (const std::string& f : repository_files) {
      s += fmt::format("apt-get -q update -o Dir::Etc::sourcelist={} -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0\n",
                       ShellQuote(f));
    }
  }
  s += "apt-get -q -y install --no-install-recommends --allow-downgrades -o Dpkg::Options::=--force-confdef "
       "-o Dpkg::Options::=--force-confold" +
       list + "\n";
  return s;
}

std::string ItemScript(const plan::ItemChange& item) {
  using K = plan::ItemChange::Kind;
  switch (item.kind) {
    case K::kPackage: return "";  // one transaction for all: PackagesScript
    case K::kModule: return "modprobe " + ShellQuote(item.id) + "\n";
    case K::kSysctl: return "sysctl -q -w " + ShellQuote(item.id + "=" + item.want) + "\n";
    case K::kService: {
      std::string s;
      if (item.want.find("enable") != std::string::npos) s += "systemctl enable " + ShellQuote(item.id) + "\n";
      if (item.want.find("start") != std::string::npos) s += "systemctl start " + ShellQuote(item.id) + "\n";
      return s.empty() ? s : "set -e\n" + s;
    }
  }
  return "";
}

std::string RemoveScript(std::span<const std::string> paths) {
  std::string s = "rm -f --";
  for (const std::string& p : paths) s += " " + ShellQuote(p);
  return s + "\n";
}

bool IsClusterHandler(std::string_view handler) { return handler == "scontrol reconfigure"; }

NodeApply ApplyNode(remote::Session& s, const DesiredNode& desired, const ApplyOptions& o) {
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
  auto run = [&](const std::string& step, const std::string& command, const remote::ExecOptions& opts) {
    Result<remote::ExecResult> r = s.Exec(command, opts);
    if (!r.ok()) {
      fail(step, r.error().message);
      return false;
    }
    if (r->Succeeded()) return true;
    std::string text = Trimmed(r->err + (r->err.empty() || r->out.empty() ? "" : "\n") + r->out);
    // The end of a long output (apt's) is where the reason is.
    if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
    fail(step, remote::DescribeEnd(*r, opts) + (text.empty() ? "" : ": " + Visible(text, 2000)));
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

  bool read = false;
  [&] {
    std::string state_sha;
    Result<NodePlan> plan = ReadNodePlan(s, desired, o.sudo, &state_sha);
    if (!plan.ok()) return fail("read state", plan.error().message);
    read = true;
    out.plan = std::move(*plan);
    if (!o.expect_state_sha256.empty() && state_sha != o.expect_state_sha256) {
      out.state = NodeApply::State::kStale;
      out.step = "read state";
      out.detail = "the node changed since the plan was made; nothing was done here (run plan again)";
      return;
    }
    if (!out.plan.HasChanges()) {
      out.state = NodeApply::State::kUnchanged;
      return;
    }
    std::vector<std::string> touched, backups, removals;
    for (const FileChange& f : out.plan.files) {
      if (f.action == Action::kCreate || f.action == Action::kChange) touched.push_back(f.path);
      if (f.action == Action::kChange || f.action == Action::kRemove) backups.push_back(f.path);
      if (f.action == Action::kRemove) removals.push_back(f.path);
    }
    const std::vector<std::string> owed = out.plan.Handlers();
    if (!run("backup", PrepareScript(o.run_id, touched, backups, owed), eo)) return;
    auto upload = [&](bool repositories) {
      for (std::size_t i = 0; i < desired.files.size(); ++i) {
        const FileChange& f = out.plan.files[i];
        const bool repo = std::find(desired.repository_files.begin(), desired.repository_files.end(), f.path) !=
                          desired.repository_files.end();
        if (f.action == Action::kNone || repo != repositories) continue;
        remote::UploadOptions uo;
        uo.mode = desired.files[i].mode;
        uo.owner = "root:root";
        uo.sudo = o.sudo;
        if (Status st = s.Upload(desired.files[i].Content(), f.path, uo); !st.ok()) {
          fail("upload " + f.path, st.error().message);
          return false;
        }
        out.written.push_back(f.path);
      }
      return true;
    };
    if (!upload(true)) return;
    std::vector<std::string> specs;
    for (const plan::ItemChange& it : out.plan.items) {
      if (it.kind == plan::ItemChange::Kind::kPackage && it.action != Action::kNone) specs.push_back(it.want);
    }
    if (!specs.empty()) {
      remote::ExecOptions po = eo;
      po.timeout = o.package_timeout;
      po.output_cap = 16 << 20;
      if (!run("packages", PackagesScript(desired.family, desired.repository_files, specs), po)) return;
      for (const plan::ItemChange& it : out.plan.items) {
        if (it.kind != plan::ItemChange::Kind::kPackage || it.action == Action::kNone) continue;
        out.items.push_back("package " + it.want);
        out.reboot_needed = out.reboot_needed || it.impact == plan::Impact::kReboot;
      }
    }
    if (!upload(false)) return;
    if (!removals.empty()) {
      if (!run("remove", RemoveScript(removals), eo)) return;
      out.removed = removals;
    }
    std::vector<std::string> started;
    for (const plan::ItemChange& it : out.plan.items) {
      if (it.kind == plan::ItemChange::Kind::kPackage || it.action == Action::kNone) continue;
      const std::string step = fmt::format("{} {}", plan::ToString(it.kind), it.id);
      if (!run(step, ItemScript(it), eo)) return;
      out.items.push_back(step);
      if (it.kind == plan::ItemChange::Kind::kService && it.want.find("start") != std::string::npos) started.push_back(it.id);
    }
    for (const std::string& h : out.plan.Handlers()) {
      if (IsClusterHandler(h)) {
        out.deferred.push_back(h);
        continue;
      }
      // A service started in this run read the new files already.
      bool fresh = std::any_of(started.begin(), started.end(),
                               [&](const std::string& u) { return h == "systemctl restart " + u; });
      if (fresh) continue;
      if (!run("handler " + h, h, eo)) return;
      out.handlers.push_back(h);
    }
    if (!owed.empty() && !run("handlers done", "rm -f -- " + ShellQuote(kPendingHandlers) + "\n", eo)) return;
    for (const FileChange& f : out.plan.files) {
      if (f.action != Action::kNone) out.reboot_needed = out.reboot_needed || f.impact == plan::Impact::kReboot;
    }
    out.state = NodeApply::State::kApplied;
  }();

  if (read && desired.manage_removals && out.state != NodeApply::State::kStale) {
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
        fail("manifest", st.error().message);
      }
    }
  }

  if (out.state != NodeApply::State::kUnchanged && out.state != NodeApply::State::kStale) {
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
    nlohmann::ordered_json j = {{"run", o.run_id},   {"time", o.time_utc}, {"node", node},
                                {"result", ToString(out.state)}, {"files", files}, {"items", items},
                                {"done", out.items}, {"handlers", out.handlers}};
    if (out.state == NodeApply::State::kFailed) {
      j["failed_step"] = out.step;
      j["error"] = out.detail;
    }
    const NodeApply before = out;
    const std::string line = j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
    if (!run("journal", JournalScript(line), eo) && before.state == NodeApply::State::kFailed) {
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
