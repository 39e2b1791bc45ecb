// Reading what a node has: the file state script and the node state script (one round trip,
// read-only), their strict parsers, and the plan made from what the node reported.

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "apply/internal.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/base/sha256.h"
#include "remote/command.h"

namespace gpuforge::apply {
using namespace plan;      // the plan this stage carries out
using namespace internal;  // text helpers shared with rollback.cc
namespace {

using remote::ShellQuote;

constexpr std::string_view kOctal = "01234567";
constexpr std::string_view kUserChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

}  // namespace

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
lo() { for t in "$1"/.*.gpuforge-* "$1"/*.gpuforge-rollback.*; do if [ -f "$t" ] && [ ! -L "$t" ]; then echo "T $t"; fi; done; }
)SH";

std::string Loop(std::string_view fn, const std::vector<std::string>& words) {
  if (words.empty()) return "";
  std::string s = "for x in";
  for (const std::string& w : words) s += " " + ShellQuote(w);
  return s + "; do " + std::string(fn) + " \"$x\"; done\n";
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
  s.resize(s.size() - std::string_view("echo end\n").size());
  // Leftover temporaries sit beside the files gpuforge writes: the desired ones and those the
  // manifest lists. Only the upload and rollback name patterns are listed (plan::IsLeftoverTemporary).
  std::set<std::string> dirs;
  for (const DesiredFile& f : d.files) dirs.insert(Parent(f.path));
  s += "{ ";
  for (const std::string& dir : dirs) s += "echo " + ShellQuote(dir) + "; ";
  s += fmt::format("if [ -f {0} ]; then sed 's|/[^/]*$||' {0}; fi; }} | sort -u | while IFS= read -r x; do lo \"$x\"; done\n",
                   ShellQuote(kManifest));
  s += "echo end\n";
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
    if (!v || v->size() > 256 || !text::IsPrintable(*v)) return bad("expected 'S VALUE' or 'S ?'");
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
  std::set<std::string, std::less<>> dirs;
  for (const DesiredFile& f : d.files) dirs.insert(Parent(f.path));
  for (const std::string& m : a.managed) dirs.insert(Parent(m));
  while (i < lines.size() && lines[i].starts_with("T ")) {
    std::string_view path = lines[i].substr(2);
    if (path.empty() || path.front() != '/' || path.size() > 1024 || path.find("/../") != std::string_view::npos ||
        !dirs.contains(Parent(path))) {
      return bad("not a gpuforge temporary beside a managed file");
    }
    // The shell's glob is wider than gpuforge's names: a file someone else named
    // ".keep.gpuforge-x" is not a leftover, is not listed and is never removed.
    if (path.find_first_not_of(kPathChars) == std::string_view::npos && plan::IsLeftoverTemporary(path)) {
      a.leftovers.emplace_back(path);
    }
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
                             Visible(Trimmed(r->err), kShownChars))};
  }
  Result<ActualNode> actual = ParseNodeState(node, r->out, d);
  if (!actual.ok()) return actual.error();
  if (state_sha256 != nullptr) *state_sha256 = base::Sha256Hex(r->out);
  return PlanNodeState(node, d, *actual);
}

}  // namespace gpuforge::apply
