#include "cli/completion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "cli/remote_options.h"
#include "gpuforge/base/build_info.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/probe/probe.h"
#include "gpuforge/validate/thresholds.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::cli {

namespace {

bool IsPositional(const CLI::Option* o) { return !o->nonpositional(); }
// Flags are added with expected(0) (CLI/App.hpp _add_flag_internal); an option expects a value.
bool TakesValue(const CLI::Option* o) { return o->get_expected_max() > 0; }
bool Hidden(const CLI::App* a) { return a->get_group().empty(); }
bool Hidden(const CLI::Option* o) { return o->get_group().empty(); }

// The option `word` names ("--format", "--format=json", "-v") on `at` or a command above it (the
// subcommands fall through to their parents' flags).
const CLI::Option* FindOption(const CLI::App* at, std::string_view word) {
  std::string_view name = word.substr(0, word.find('='));
  for (; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option* o : at->get_options()) {
      if (name.starts_with("--")) {
        for (const std::string& l : o->get_lnames()) {
          if (name.substr(2) == l) return o;
        }
      } else if (name.size() == 2 && name[0] == '-') {
        for (const std::string& s : o->get_snames()) {
          if (name.substr(1) == s) return o;
        }
      }
    }
  }
  return nullptr;
}

std::vector<const CLI::Option*> Positionals(const CLI::App* at) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : at->get_options()) {
    if (IsPositional(o)) out.push_back(o);
  }
  return out;
}

void AddMatching(std::vector<std::string>* out, std::string_view prefix, std::string_view item_prefix,
                 std::string_view item) {
  if (item.starts_with(item_prefix)) out->push_back(std::string(prefix) + std::string(item));
}

// A list value ("gpu,storage.re"): the part before the item being typed, and that item.
std::pair<std::string_view, std::string_view> SplitList(std::string_view cur, std::string_view separators) {
  const std::size_t at = cur.find_last_of(separators);
  if (at == std::string_view::npos) return {"", cur};
  return {cur.substr(0, at + 1), cur.substr(at + 1)};
}

std::optional<model::Cluster> QuietLoad(const std::string& path) {
  // Standard input is the user's, not completion's to read.
  if (path.empty() || path == "-") return std::nullopt;
  inventory::LoadOutcome outcome = inventory::LoadFile(path);
  return std::move(outcome.cluster);
}

std::vector<std::string> ValuesOf(const CLI::Option* opt, std::string_view cur, const std::string& inventory) {
  const ValueCompletion v = CompletionOf(opt);
  std::vector<std::string> out;
  switch (v.kind) {
    case Values::kNone:
      break;
    case Values::kChoices:
      for (const std::string& c : v.choices) AddMatching(&out, "", cur, c);
      break;
    case Values::kFile:
    case Values::kInventory:
      out.push_back(":file");
      break;
    case Values::kDir:
      out.push_back(":dir");
      break;
    case Values::kNodes: {
      // Node sets: ',' and ' ' join, '!' takes away, '&' intersects, '^' is either-or; a name
      // inside brackets ("gpu[001-") is a range, not a name to complete.
      auto [head, item] = SplitList(cur, ",!&^ ");
      if (item.find('[') != std::string_view::npos) break;
      std::optional<model::Cluster> cluster = QuietLoad(inventory);
      if (!cluster) break;
      for (const model::Node& n : cluster->nodes) AddMatching(&out, head, item, n.name);
      for (const auto& [group, members] : NodeGroups(*cluster)) {
        if (group != "*") AddMatching(&out, head, item, "@" + group);
      }
      break;
    }
    case Values::kChecks: {
      // Keys and the prefixes `--checks` takes ("gpu" selects every gpu.* check).
      auto [head, item] = SplitList(cur, ",");
      std::set<std::string> keys;
      for (const validate::CheckInfo& c : validate::Checks()) {
        keys.insert(std::string(c.key));
        keys.insert(std::string(c.key.substr(0, c.key.find('.'))));
      }
      for (const std::string& k : keys) AddMatching(&out, head, item, k);
      break;
    }
    case Values::kParts: {
      auto [head, item] = SplitList(cur, ",");
      for (plan::Part p : plan::AllParts()) AddMatching(&out, head, item, plan::ToString(p));
      break;
    }
    case Values::kProbes:
      for (const auto& p : probe::AllProbes()) AddMatching(&out, "", cur, p->key());
      break;
    case Values::kProfiles: {
      std::optional<model::Cluster> cluster = QuietLoad(inventory);
      if (!cluster) break;
      std::set<std::string> used;
      for (const model::Node& n : cluster->nodes) used.insert(n.profile);
      for (const std::string& p : used) AddMatching(&out, "", cur, p);
      break;
    }
    case Values::kThresholdKeys:
      if (cur.find('=') != std::string_view::npos) break;
      for (const validate::ThresholdDefault& d : validate::DefaultThresholds()) {
        AddMatching(&out, "", cur, std::string(d.key) + "=");
      }
      break;
    case Values::kCheckParams: {
      // CHECK.NAME= for every parameter of every check's probe; the value is the user's.
      if (cur.find('=') != std::string_view::npos) break;
      for (const validate::CheckInfo& c : validate::Checks()) {
        if (c.probe.empty()) continue;
        std::unique_ptr<probe::Probe> p = probe::FindProbe(c.probe);
        if (p == nullptr) continue;
        for (const probe::Param& param : p->params()) AddMatching(&out, "", cur, fmt::format("{}.{}=", c.key, param.name));
      }
      // The thresholds validate --param sets too.
      for (const validate::ThresholdDefault& d : validate::DefaultThresholds()) {
        AddMatching(&out, "", cur, std::string(d.key) + "=");
      }
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> CompleteWords(CLI::App& root, std::span<const std::string> words) {
  if (words.empty()) return {};
  const CLI::App* at = &root;
  std::size_t positional = 0;
  std::string inventory;
  const CLI::Option* pending = nullptr;  // a flag whose value is the next word
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (pending != nullptr) {
      if (CompletionOf(pending).kind == Values::kInventory) inventory = w;
      pending = nullptr;
      continue;
    }
    if (w == "--") return {};  // the rest is a command for the nodes (`run INV -- CMD`)
    if (w.size() > 1 && w[0] == '-') {
      const CLI::Option* o = FindOption(at, w);
      if (o != nullptr && TakesValue(o) && w.find('=') == std::string::npos) pending = o;
      continue;
    }
    bool entered = false;
    for (const CLI::App* sub : at->get_subcommands({})) {
      if (sub->get_name() == w) {
        at = sub;
        positional = 0;
        entered = true;
        break;
      }
    }
    if (entered) continue;
    const std::vector<const CLI::Option*> pos = Positionals(at);
    if (positional < pos.size()) {
      if (CompletionOf(pos[positional]).kind == Values::kInventory) inventory = w;
      if (pos[positional]->get_expected_max() <= 1) ++positional;
    }
  }

  const std::string& cur = words.back();
  std::vector<std::string> out;
  if (pending != nullptr) return ValuesOf(pending, cur, inventory);
  if (cur.starts_with("--") && cur.find('=') != std::string::npos) {
    const CLI::Option* o = FindOption(at, cur);
    if (o == nullptr || !TakesValue(o)) return {};
    const std::string head = cur.substr(0, cur.find('=') + 1);
    for (const std::string& v : ValuesOf(o, cur.substr(head.size()), inventory)) {
      out.push_back(v.starts_with(':') ? v : head + v);
    }
    return out;
  }
  if (cur.starts_with("-")) {
    std::set<std::string> seen;
    for (const CLI::App* a = at; a != nullptr; a = a->get_parent()) {
      for (const CLI::Option* o : a->get_options()) {
        if (IsPositional(o) || Hidden(o)) continue;
        for (const std::string& l : o->get_lnames()) {
          if (seen.insert("--" + l).second) AddMatching(&out, "", cur, "--" + l);
        }
        for (const std::string& s : o->get_snames()) {
          if (seen.insert("-" + s).second) AddMatching(&out, "", cur, "-" + s);
        }
      }
    }
    return out;
  }
  for (const CLI::App* sub : at->get_subcommands({})) {
    if (!Hidden(sub)) AddMatching(&out, "", cur, sub->get_name());
  }
  const std::vector<const CLI::Option*> pos = Positionals(at);
  if (positional < pos.size()) {
    for (std::string& v : ValuesOf(pos[positional], cur, inventory)) out.push_back(std::move(v));
  }
  return out;
}

namespace {

// Text for roff: backslashes and hyphens escaped, and no line may begin with a control
// character ('.' or '\'') that roff would read as a request.
std::string Roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string ValueName(const CLI::Option* o) {
  std::string name = o->get_option_text().empty() ? o->get_type_name() : o->get_option_text();
  return name.substr(0, name.find(':'));
}

// One .TP entry per option, as `--help` lists them (the same tree, the same descriptions).
std::string OptionsSection(const CLI::App* app) {
  std::string out;
  for (const CLI::Option* o : app->get_options()) {
    if (IsPositional(o) || Hidden(o)) continue;
    std::vector<std::string> names;
    for (const std::string& s : o->get_snames()) names.push_back("\\fB" + Roff("-" + s) + "\\fR");
    for (const std::string& l : o->get_lnames()) names.push_back("\\fB" + Roff("--" + l) + "\\fR");
    std::string head = fmt::format("{}", fmt::join(names, ", "));
    if (TakesValue(o)) head += " \\fI" + Roff(ValueName(o)) + "\\fR";
    out += ".TP\n" + head + "\n" + Roff(o->get_description()) + "\n";
  }
  return out;
}

std::string ArgumentsSection(const CLI::App* app) {
  std::string out;
  for (const CLI::Option* o : Positionals(app)) {
    out += ".TP\n\\fI" + Roff(o->get_name(true)) + "\\fR\n" + Roff(o->get_description()) + "\n";
  }
  return out;
}

std::string Synopsis(const CLI::App* app, const std::string& path) {
  std::string out = ".B " + Roff(path) + "\n";
  for (const CLI::Option* o : Positionals(app)) {
    const std::string n = "\\fI" + Roff(o->get_name(true)) + "\\fR" + (o->get_expected_max() > 1 ? "..." : "");
    out += o->get_required() ? n + "\n" : "[" + n + "]\n";
  }
  out += "[\\fIOPTIONS\\fR]\n";
  return out;
}

constexpr std::string_view kExitStatus =
    ".SH EXIT STATUS\n"
    ".TP\n.B 0\nno error findings, every check passed\n"
    ".TP\n.B 1\nerror findings, a failed check or node, or drift\n"
    ".TP\n.B 2\nbad flags, or an input that cannot be read or is invalid\n";

std::string Header(std::string_view name, std::string_view date) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format(".\\\" Written by `gpuforge __man` from the command tree that parses the flags; do not edit.\n"
                     ".TH {} 1 \"{}\" \"gpuforge {}\" \"User Commands\"\n",
                     Roff(upper), Roff(date), Roff(GetBuildInfo().version));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ManPages(CLI::App& root, std::string_view date) {
  std::vector<std::pair<std::string, std::string>> pages;
  std::vector<std::string> see_also;
  std::string commands;
  for (const CLI::App* sub : root.get_subcommands({})) {
    if (Hidden(sub)) continue;
    const std::string page = "gpuforge-" + sub->get_name();
    see_also.push_back("\\fB" + Roff(page) + "\\fR(1)");
    commands += ".TP\n.B " + Roff(sub->get_name()) + "\n" + Roff(sub->get_description()) + " See \\fB" + Roff(page) +
                "\\fR(1).\n";
    std::string text = Header(page, date);
    text += ".SH NAME\n" + Roff(page) + " \\- " + Roff(sub->get_description()) + "\n";
    text += ".SH SYNOPSIS\n";
    std::string subs;
    for (const CLI::App* s : sub->get_subcommands({})) {
      if (Hidden(s)) continue;
      const std::string path = "gpuforge " + sub->get_name() + " " + s->get_name();
      text += Synopsis(s, path) + ".br\n";
      subs += ".SS " + Roff(path) + "\n" + Roff(s->get_description()) + "\n";
      if (!Positionals(s).empty()) subs += ".PP\nArguments:\n" + ArgumentsSection(s);
      if (std::string o = OptionsSection(s); !o.empty()) subs += ".PP\nOptions:\n" + o;
    }
    if (subs.empty()) text += Synopsis(sub, "gpuforge " + sub->get_name());
    text += ".SH DESCRIPTION\n" + Roff(sub->get_description()) + "\n";
    if (!subs.empty()) text += ".SH COMMANDS\n" + subs;
    if (std::string a = ArgumentsSection(sub); !a.empty()) text += ".SH ARGUMENTS\n" + a;
    if (std::string o = OptionsSection(sub); !o.empty()) text += ".SH OPTIONS\n" + o;
    text += ".PP\nThe options of \\fBgpuforge\\fR(1) (\\fB\\-\\-color\\fR, \\fB\\-v\\fR, \\fB\\-q\\fR) apply too.\n";
    text += std::string(kExitStatus);
    text += ".SH SEE ALSO\n\\fBgpuforge\\fR(1); /usr/share/doc/gpuforge/ (docs/cli.md and one page per command)\n";
    pages.emplace_back(page + ".1", std::move(text));
  }
  std::string text = Header("gpuforge", date);
  text += ".SH NAME\ngpuforge \\- " + Roff(root.get_description().substr(root.get_description().find(':') + 2)) + "\n";
  text += ".SH SYNOPSIS\n.B gpuforge\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGUMENTS\\fR]\n";
  text += ".SH DESCRIPTION\n" + Roff(root.get_description()) +
          ". It reads a YAML inventory of nodes, GPUs, NICs, switches, networks, storage and scheduler, lints the "
          "design, renders and applies the nodes' configuration over SSH, and validates the nodes with built-in "
          "probes.\n";
  text += ".SH COMMANDS\n" + commands;
  text += ".SH OPTIONS\n" + OptionsSection(&root);
  text += std::string(kExitStatus);
  text += ".SH ENVIRONMENT\n"
          ".TP\n.B NO_COLOR\nset and not empty: no colour with \\fB\\-\\-color auto\\fR\n"
          ".TP\n.B GPUFORGE_TEMPLATES\nthe template directory render reads instead of the installed one\n"
          ".TP\n.B GPUFORGE_VALIDATION_DATA\nthe GPU model table validate reads instead of the installed one\n"
          ".TP\n.B GPUFORGE_MUNGE_KEY\nthe munge key file plan and apply push to a Slurm cluster's nodes\n";
  text += ".SH FILES\n"
          ".TP\n.I /usr/share/gpuforge/templates\nthe bundled templates render reads\n"
          ".TP\n.I /usr/share/gpuforge/validation/gpu-models.yaml\nthe per-GPU-model pass marks validate reads\n";
  text += ".SH SEE ALSO\n" + fmt::format("{}", fmt::join(see_also, ", ")) + "\n";
  pages.emplace(pages.begin(), "gpuforge.1", std::move(text));
  return pages;
}

std::string CompletionScript(std::string_view shell) {
  if (shell == "bash") {
    return R"(# bash completion for gpuforge, written by `gpuforge completion bash`.
# Install: gpuforge completion bash > /etc/bash_completion.d/gpuforge
# (or add `source <(gpuforge completion bash)` to ~/.bashrc).
# Candidates come from `gpuforge __complete WORD...`: commands, flags and their choices from
# the command tree, node names, @groups and check keys from the inventory on the line.
_gpuforge_complete() {
  local line=${COMP_LINE:0:COMP_POINT} reply c i prefix="" files=""
  local -a words more
  read -r -a words <<<"$line"
  if [[ ${#words[@]} -eq 0 || $line =~ [[:space:]]$ ]]; then words+=(""); fi
  local cur=${words[${#words[@]}-1]}
  reply=$("${words[0]}" __complete "${words[@]:1}" 2>/dev/null) || return 0
  # bash replaces only what follows the word's last break character (':' and '=' by default,
  # COMP_WORDBREAKS): each candidate loses the part before it.
  for ((i = ${#cur} - 1; i >= 0; i--)); do
    if [[ $COMP_WORDBREAKS == *"${cur:i:1}"* ]]; then prefix=${cur:0:i+1}; break; fi
  done
  COMPREPLY=()
  while IFS= read -r c; do
    case $c in
      :file) files=f ;;
      :dir) files=d ;;
      "") ;;
      *) COMPREPLY+=("${c#"$prefix"}") ;;
    esac
  done <<<"$reply"
  if [[ -n $files ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t more < <(compgen -"$files" -- "${cur#"$prefix"}")
    COMPREPLY+=("${more[@]}")
  fi
  # "storage.read.size=" waits for its value: no space after it.
  if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then compopt -o nospace 2>/dev/null; fi
  return 0
}
complete -F _gpuforge_complete gpuforge
)";
  }
  if (shell == "zsh") {
    return R"(#compdef gpuforge
# zsh completion for gpuforge, written by `gpuforge completion zsh`.
# Install: gpuforge completion zsh > "${fpath[1]}/_gpuforge", then restart zsh
# (or add `source <(gpuforge completion zsh)` to ~/.zshrc after compinit).
_gpuforge() {
  local -a reply cands
  local c files=""
  reply=("${(@f)$(${(Q)words[1]} __complete "${(@Q)words[2,CURRENT]}" 2>/dev/null)}")
  for c in "${reply[@]}"; do
    case $c in
      :file) files=f ;;
      :dir) files=d ;;
      '') ;;
      *) cands+=("$c") ;;
    esac
  done
  (( ${#cands} )) && compadd -Q -S '' -- "${(@)cands:#*[^=]}"
  (( ${#cands} )) && compadd -Q -- "${(@M)cands:#*[^=]}"
  [[ $files == f ]] && _files
  [[ $files == d ]] && _files -/
  return 0
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _gpuforge "$@"
else
  compdef _gpuforge gpuforge
fi
)";
  }
  if (shell == "fish") {
    return R"(# fish completion for gpuforge, written by `gpuforge completion fish`.
# Install: gpuforge completion fish > ~/.config/fish/completions/gpuforge.fish
function __gpuforge_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -q cur[1]; or set cur ''
    for c in ($words[1] __complete $words[2..-1] $cur 2>/dev/null)
        switch $c
            case :file
                __fish_complete_path $cur
            case :dir
                __fish_complete_directories $cur
            case '*'
                printf '%s\n' $c
        end
    end
end
complete -c gpuforge -f -a '(__gpuforge_complete)'
)";
  }
  return "";
}

}  // namespace gpuforge::cli
