// Shell completion (cli/completion.h): the candidates `gpuforge __complete` prints, in-process,
// and the bash, fish and zsh scripts run by the real shells.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::cli {
namespace {

using test_support::RunCli;
using test_support::RunResult;

const std::string kExample = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::vector<std::string> Complete(std::vector<std::string> words) {
  words.insert(words.begin(), "__complete");
  RunResult r = RunCli(words);
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  return Lines(r.out);
}

bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(Completion, CommandsComeFromTheTable) {
  std::vector<std::string> c = Complete({""});
  for (const Command& cmd : Commands()) EXPECT_TRUE(Has(c, std::string(cmd.name))) << cmd.name;
  EXPECT_FALSE(Has(c, "__complete"));
  EXPECT_EQ(c.size(), Commands().size());
  EXPECT_EQ(Complete({"v"}), (std::vector<std::string>{"validate", "version"}));
  // A command's own subcommands.
  EXPECT_EQ(Complete({"hostlist", ""}), (std::vector<std::string>{"expand", "fold"}));
}

TEST(Completion, FlagsOfTheCommandAndOfGpuforge) {
  EXPECT_EQ(Complete({"lint", "--fo"}), (std::vector<std::string>{"--format"}));
  std::vector<std::string> v = Complete({"validate", kExample, "--"});
  for (const char* f : {"--checks", "--param", "--nodes", "--junit", "--color", "--verbose", "--help"}) {
    EXPECT_TRUE(Has(v, f)) << f;
  }
  // Another command's flag is not offered.
  EXPECT_FALSE(Has(v, "--offline"));
  EXPECT_FALSE(Has(v, "--templates"));
}

TEST(Completion, ChoicesOfAFlagSpaceOrEquals) {
  EXPECT_EQ(Complete({"estimate", "--format", ""}), (std::vector<std::string>{"json", "text"}));
  EXPECT_EQ(Complete({"lint", "--format", ""}), (std::vector<std::string>{"text", "json", "junit"}));
  EXPECT_EQ(Complete({"inventory", "show", "--format", "y"}), (std::vector<std::string>{"yaml"}));
  EXPECT_EQ(Complete({"validate", "--format", "j"}), (std::vector<std::string>{"json", "junit"}));
  EXPECT_EQ(Complete({"estimate", "--format=j"}), (std::vector<std::string>{"--format=json"}));
  EXPECT_EQ(Complete({"--color", ""}), (std::vector<std::string>{"auto", "always", "never"}));
  EXPECT_EQ(Complete({"completion", ""}), (std::vector<std::string>{"bash", "zsh", "fish"}));
}

TEST(Completion, FilesWhereAFileOrDirectoryGoes) {
  EXPECT_EQ(Complete({"lint", ""}), (std::vector<std::string>{":file"}));
  EXPECT_EQ(Complete({"render", kExample, "--out", ""}), (std::vector<std::string>{":dir"}));
  EXPECT_EQ(Complete({"validate", kExample, "--junit", "x"}), (std::vector<std::string>{":file"}));
  // After the inventory, lint takes no more words: nothing but flags.
  EXPECT_EQ(Complete({"lint", kExample, ""}), (std::vector<std::string>{}));
  // A flag's value is not taken for the positional: --format's "json" is not the inventory.
  EXPECT_EQ(Complete({"lint", "--format", "json", ""}), (std::vector<std::string>{":file"}));
  // A flag that takes no value leaves the next word to the positional.
  EXPECT_EQ(Complete({"lint", "-v", ""}), (std::vector<std::string>{":file"}));
  EXPECT_EQ(Complete({"validate", "--strict", ""}), (std::vector<std::string>{":file"}));
}

TEST(Completion, NodesAndGroupsFromTheInventoryOnTheLine) {
  std::vector<std::string> n = Complete({"run", kExample, "--nodes", ""});
  for (const char* s : {"gpu001", "gpu004", "head01", "login01", "@train", "@role:compute", "@rack:r02", "@profile:hgx-h200"}) {
    EXPECT_TRUE(Has(n, s)) << s;
  }
  EXPECT_EQ(Complete({"run", kExample, "--nodes", "gpu00"}),
            (std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu004"}));
  // The item after a set operator, with what comes before it kept.
  EXPECT_EQ(Complete({"validate", kExample, "--nodes", "@role:compute!gpu003,l"}),
            (std::vector<std::string>{"@role:compute!gpu003,login01"}));
  EXPECT_EQ(Complete({"validate", kExample, "--nodes=@ra"}),
            (std::vector<std::string>{"--nodes=@rack:r01", "--nodes=@rack:r02"}));
  // A range being typed is not a name.
  EXPECT_EQ(Complete({"run", kExample, "--nodes", "gpu[00"}), (std::vector<std::string>{}));
}

TEST(Completion, AnInventoryThatCannotBeReadCompletesNothingQuietly) {
  EXPECT_EQ(Complete({"run", "/nonexistent/inv.yaml", "--nodes", ""}), (std::vector<std::string>{}));
  EXPECT_EQ(Complete({"run", "--nodes", ""}), (std::vector<std::string>{}));
  const std::string bad = (std::filesystem::temp_directory_path() / "gpuforge-completion-bad.yaml").string();
  std::ofstream(bad) << "nodes: [\n";
  EXPECT_EQ(Complete({"run", bad, "--nodes", ""}), (std::vector<std::string>{}));
  // Standard input is never read for a completion.
  EXPECT_EQ(Complete({"run", "-", "--nodes", ""}), (std::vector<std::string>{}));
}

TEST(Completion, CheckKeysPrefixesAndParameters) {
  std::vector<std::string> c = Complete({"validate", kExample, "--checks", ""});
  for (const validate::CheckInfo& info : validate::Checks()) EXPECT_TRUE(Has(c, std::string(info.key))) << info.key;
  EXPECT_TRUE(Has(c, "gpu"));
  EXPECT_TRUE(Has(c, "storage"));
  EXPECT_EQ(Complete({"validate", kExample, "--checks", "gpu,storage.r"}), (std::vector<std::string>{"gpu,storage.read"}));
  std::vector<std::string> p = Complete({"validate", kExample, "--param", "storage.read."});
  EXPECT_TRUE(Has(p, "storage.read.size=")) << fmt::format("{}", fmt::join(p, " "));
  EXPECT_EQ(Complete({"validate", kExample, "--param", "storage.read.size=8"}), (std::vector<std::string>{}));
  EXPECT_EQ(Complete({"plan", kExample, "--only", "files,pa"}), (std::vector<std::string>{"files,packages"}));
}

TEST(Completion, NothingAfterTheDoubleDash) {
  EXPECT_EQ(Complete({"run", kExample, "--", "nvidia-smi", "-"}), (std::vector<std::string>{}));
}

// --- the scripts, in the real shells ---

std::string Shell(const std::string& script) {
  const std::string bin_dir = std::filesystem::path(GPUFORGE_BINARY).parent_path().string();
  const std::string cmd = fmt::format("cd '{}' && PATH='{}':\"$PATH\" {} 2>&1", GPUFORGE_SOURCE_DIR, bin_dir, script);
  std::string out;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int st = ::pclose(p);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) out += fmt::format("\n[exit {}]", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return out;
}

std::string ScriptFile(const std::string& shell) {
  RunResult r = RunCli({"completion", shell});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  const std::string path = (std::filesystem::temp_directory_path() / ("gpuforge-completion." + shell)).string();
  std::ofstream(path) << r.out;
  return path;
}

bool HaveShell(const char* shell) { return Shell(fmt::format("command -v {} >/dev/null", shell)).empty(); }

// What bash's programmable completion puts in COMPREPLY for the line typed up to its end: the
// function `complete -p gpuforge` names, called with COMP_LINE, COMP_POINT, COMP_WORDS and
// COMP_CWORD as readline sets them (COMP_WORDS split at COMP_WORDBREAKS).
std::string BashComplete(const std::string& script, const std::string& line) {
  const std::string program = fmt::format(
      R"(source '{}'
spec=$(complete -p gpuforge) || exit 9
fn=${{spec#*-F }}; fn=${{fn%% *}}
COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}
COMP_WORDS=(); w=""
for ((i = 0; i < ${{#COMP_LINE}}; i++)); do
  c=${{COMP_LINE:i:1}}
  if [[ $c == " " ]]; then [[ -n $w ]] && COMP_WORDS+=("$w"); w=""
  elif [[ $COMP_WORDBREAKS == *"$c"* ]]; then [[ -n $w ]] && COMP_WORDS+=("$w"); COMP_WORDS+=("$c"); w=""
  else w+=$c; fi
done
COMP_WORDS+=("$w"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
"$fn" gpuforge "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}" | sort
)",
      script, line);
  const std::string file = (std::filesystem::temp_directory_path() / "gpuforge-completion-drive.bash").string();
  std::ofstream(file) << program;
  return Shell("bash --norc --noprofile " + file);
}

TEST(CompletionShells, BashCompletesThroughCompleteDashP) {
  ASSERT_TRUE(HaveShell("bash"));
  const std::string s = ScriptFile("bash");
  EXPECT_EQ(BashComplete(s, "gpuforge li"), "lint\n");
  EXPECT_EQ(BashComplete(s, "gpuforge lint --form"), "--format\n");
  EXPECT_EQ(BashComplete(s, "gpuforge estimate --format "), "json\ntext\n");
  EXPECT_EQ(BashComplete(s, "gpuforge lint inventories/examples/h200-ib"), "inventories/examples/h200-ib-32gpu.yaml\n");
  EXPECT_EQ(BashComplete(s, "gpuforge run inventories/examples/h200-ib-32gpu.yaml --nodes gpu00"),
            "gpu001\ngpu002\ngpu003\ngpu004\n");
  // ':' breaks bash's words: only the part after it is replaced, so that is what is offered.
  EXPECT_EQ(BashComplete(s, "gpuforge run inventories/examples/h200-ib-32gpu.yaml --nodes @rack:r0"), "r01\nr02\n");
  EXPECT_EQ(BashComplete(s, "gpuforge estimate --format=js"), "json\n");
}

TEST(CompletionShells, FishCompletesWithCompleteDashC) {
  if (!HaveShell("fish")) GTEST_SKIP() << "fish is not installed (scripts/deps.sh --test installs it)";
  const std::string s = ScriptFile("fish");
  const auto fish = [&](const std::string& line) {
    return Shell(fmt::format("fish --no-config -c \"source '{}'; complete -C '{}'\" | cut -f1 | sort", s, line));
  };
  EXPECT_EQ(fish("gpuforge li"), "lint\n");
  EXPECT_EQ(fish("gpuforge validate --checks gpu.he"), "gpu.health\n");
  EXPECT_EQ(fish("gpuforge run inventories/examples/h200-ib-32gpu.yaml --nodes @role:c"), "@role:compute\n@role:controller\n");
  EXPECT_EQ(fish("gpuforge lint inventories/examples/h200-ib"), "inventories/examples/h200-ib-32gpu.yaml\n");
}

TEST(CompletionShells, ZshReadsTheScript) {
  if (!HaveShell("zsh")) GTEST_SKIP() << "zsh is not installed (scripts/deps.sh --test installs it)";
  const std::string s = ScriptFile("zsh");
  // Parsed by zsh, and loaded by compinit's compdef with the function defined.
  EXPECT_EQ(Shell(fmt::format("zsh -n '{}'", s)), "");
  EXPECT_EQ(Shell(fmt::format("zsh -f -c \"autoload -Uz compinit && compinit -u -D && source '{}' && "
                              "print -r -- \\$_comps[gpuforge]\"",
                              s)),
            "_gpuforge\n");
}

}  // namespace
}  // namespace gpuforge::cli
