#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/run_cli.h"

namespace gpuforge::cli {
namespace {

const std::string kExample = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml";
const std::string kExampleKey = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/munge.key.example";

using test_support::RunCli;
using test_support::RunResult;

std::string WriteTemp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "gpuforge-cli-test";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// #12 item 6: text output passes one terminal gate. A file name (or any value a report
// repeats) carrying an OSC title and a clear-screen reaches the terminal as '?'s.
TEST(Cli, TextOutputPassesTheTerminalGate) {
  std::string path = WriteTemp("inv\x1b]0;owned\x07\x1b[2J.yaml", "cluster: [\n");
  RunResult r = RunCli({"lint", "--color", "always", path});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("inv?]0;owned??[2J.yaml"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\x1b]"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\x1b[2J"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\x1b[31;1merror\x1b[0m:"), std::string::npos) << r.err;  // our own colour survives
  std::filesystem::remove(path);
}

// libssh opens the ssh config by path: a FIFO there hung every node's thread (issue #12, item
// 9). It is refused before any connection, with what it is.
TEST(Cli, AnSshConfigThatIsNotARegularFileIsRefusedUpFront) {
  const std::string fifo = (std::filesystem::temp_directory_path() / "gpuforge-cli-test-ssh-config-fifo").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = RunCli({"run", kExample, "--ssh-config", fifo, "--nodes", "gpu001", "--", "true"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err, "gpuforge: error: --ssh-config: cannot read ssh config " + fifo + ": it is a FIFO, not a regular file\n");
  std::filesystem::remove(fifo);
}

TEST(Cli, HelpListsEveryCommandFromTheTable) {
  RunResult r = RunCli({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const Command& c : Commands()) {
    EXPECT_NE(r.out.find(std::string(c.name)), std::string::npos) << c.name;
    EXPECT_NE(r.out.find(std::string(c.help)), std::string::npos) << c.help;
  }
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(Cli, NoCommandPrintsHelpAndIsAUsageError) {
  RunResult r = RunCli({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.out.find("Subcommands"), std::string::npos);
}

TEST(Cli, CommandHelpShowsItsFlags) {
  RunResult r = RunCli({"lint", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("--format"), std::string::npos);
  EXPECT_NE(r.out.find("INVENTORY"), std::string::npos);
}

TEST(Cli, MistypedCommandGetsASuggestion) {
  RunResult r = RunCli({"lnt", kExample});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "gpuforge: error: unknown command 'lnt'; did you mean 'lint'?\n"
            "Run 'gpuforge --help' for usage.\n");
}

TEST(Cli, MistypedFlagGetsASuggestion) {
  RunResult r = RunCli({"lint", "--formt", "json", kExample});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "gpuforge: error: unknown option '--formt' for 'lint'; did you mean '--format'?\n"
            "Run 'gpuforge lint --help' for usage.\n");
}

TEST(Cli, BadFormatValueIsAUsageError) {
  RunResult r = RunCli({"lint", "--format", "xml", kExample});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--format"), std::string::npos);
}

TEST(Cli, VersionSaysWhatWasBuilt) {
  RunResult r = RunCli({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out.rfind("gpuforge 0.1.0 (", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("CUDA "), std::string::npos);
  EXPECT_NE(r.out.find("NCCL "), std::string::npos);
  EXPECT_NE(r.out.find("ibverbs "), std::string::npos);
}

TEST(Cli, LintCleanExampleExitsZero) {
  RunResult r = RunCli({"lint", "--color", "never", kExample});
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("lint PASS: 0 errors"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);
}

TEST(Cli, LintJsonHasTheDocumentedShape) {
  RunResult r = RunCli({"lint", "--format", "json", kExample});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuforge.lint/v1");
  EXPECT_EQ(j["cluster"], "sivaro-h200");
  EXPECT_EQ(j["summary"]["errors"], 0);
  EXPECT_TRUE(j["findings"].is_array());
}

TEST(Cli, LintErrorsExitOneWithFindingsInJson) {
  std::string bad = WriteTemp("bad-driver.yaml", R"(cluster: {name: t}
profiles:
  p: {gpus: {model: H100, count: 8}, memory: 1TB}
nodes:
  - {name: "n[1-2]", profile: p}
software:
  driver: {branch: "535", version: "535.104.05"}
)");
  RunResult r = RunCli({"lint", "--format", "json", bad});
  EXPECT_EQ(r.code, kExitFindings) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& f : j["findings"]) {
    if (f["rule"] == "software.driver_branch") {
      found = true;
      EXPECT_EQ(f["severity"], "error");
      EXPECT_FALSE(f["source"].get<std::string>().empty());
    }
  }
  EXPECT_TRUE(found) << r.out;
}

TEST(Cli, InvalidInventoryIsAnInputErrorWithPosition) {
  std::string bad = WriteTemp("broken.yaml", "cluster: {name: t}\nnodes: [\n");
  RunResult r = RunCli({"lint", bad});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find(bad + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, MissingInventoryFileIsAnInputError) {
  RunResult r = RunCli({"estimate", "/nonexistent/inventory.yaml"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("/nonexistent/inventory.yaml: error: cannot read inventory"), std::string::npos) << r.err;
}

TEST(Cli, ColorAlwaysAndNever) {
  RunResult on = RunCli({"--color", "always", "lint", kExample});
  EXPECT_NE(on.out.find("\x1b["), std::string::npos);
  RunResult off = RunCli({"--color", "never", "lint", kExample});
  EXPECT_EQ(off.out.find("\x1b["), std::string::npos);
}

TEST(Cli, NoColorIsHonouredInAutoMode) {
  setenv("NO_COLOR", "1", 1);
  RunResult r = RunCli({"lint", kExample});
  unsetenv("NO_COLOR");
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);
}

TEST(Cli, EstimateJsonCarriesFormulas) {
  RunResult r = RunCli({"estimate", "--format", "json", kExample});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuforge.estimate/v1");
  bool cluster_power = false;
  for (const auto& s : j["sections"]) {
    for (const auto& f : s["figures"]) {
      if (f["key"] == "power.cluster_w") {
        cluster_power = true;
        EXPECT_DOUBLE_EQ(f["value"].get<double>(), 33000.0);  // with login01
        EXPECT_FALSE(f["formula"].get<std::string>().empty());
      }
    }
  }
  EXPECT_TRUE(cluster_power);
}

TEST(Cli, InventoryShowYamlParsesBackToTheResolvedModel) {
  RunResult r = RunCli({"inventory", "show", kExample});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  YAML::Node y = YAML::Load(r.out);
  ASSERT_TRUE(y["nodes"].IsSequence());
  EXPECT_EQ(y["nodes"].size(), 6u);  // head01, gpu001-004, login01
  EXPECT_EQ(y["nodes"][1]["name"].as<std::string>(), "gpu001");
  EXPECT_EQ(y["nodes"][1]["address"].as<std::string>(), "198.18.0.11");
  EXPECT_EQ(y["totals"]["gpus"].as<int>(), 32);
}

TEST(Cli, InventoryShowJson) {
  RunResult r = RunCli({"inventory", "show", "--format", "json", kExample});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuforge.inventory/v1");
  EXPECT_EQ(j["links"].size(), 64u);
}

TEST(Cli, InventoryWithoutSubcommandIsAUsageError) {
  RunResult r = RunCli({"inventory"});
  EXPECT_EQ(r.code, kExitUsage);
}

TEST(Cli, HostlistExpandAndFold) {
  RunResult e = RunCli({"hostlist", "expand", "gpu[001-003],login1"});
  EXPECT_EQ(e.code, kExitOk);
  EXPECT_EQ(e.out, "gpu001\ngpu002\ngpu003\nlogin1\n");
  RunResult f = RunCli({"hostlist", "fold", "gpu003", "gpu001", "gpu002", "gpu007"});
  EXPECT_EQ(f.code, kExitOk);
  EXPECT_EQ(f.out, "gpu[001-003,007]\n");
  RunResult bad = RunCli({"hostlist", "expand", "gpu[5-1]"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_NE(bad.err.find("reversed range"), std::string::npos) << bad.err;
  // #28 item 24: a bare bracket group is a hostlist, not CLI11's array syntax ("1-3" before), as
  // `scontrol show hostnames '[1-3]'` and `nodeset -e '[1-3]'` read it.
  RunResult bare = RunCli({"hostlist", "expand", "[1-3]", "[7,9]", "-s", ","});
  EXPECT_EQ(bare.code, kExitOk) << bare.err;
  EXPECT_EQ(bare.out, "1,2,3,7,9\n");
  RunResult folded = RunCli({"hostlist", "fold", "[1-3]", "4"});
  EXPECT_EQ(folded.out, "[1-4]\n");
}

// #28 item 24: the hints point at the command that was typed, and a flag is never a name.
TEST(Cli, HostlistMistakesNameTheRightCommand) {
  RunResult typo = RunCli({"hostlist", "expnd", "gpu1"});
  EXPECT_EQ(typo.code, kExitUsage);
  EXPECT_EQ(typo.err,
            "gpuforge: error: unknown command 'expnd'; did you mean 'expand'?\nRun 'gpuforge hostlist --help' for usage.\n");
  RunResult none = RunCli({"hostlist"});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_EQ(none.err,
            "gpuforge: error: 'gpuforge hostlist' needs a command: expand, fold\nRun 'gpuforge hostlist --help' for usage.\n");
  RunResult flag = RunCli({"hostlist", "expand", "--sep", ",", "gpu[1-2]"});
  EXPECT_EQ(flag.code, kExitUsage);
  EXPECT_EQ(flag.out, "");
  EXPECT_EQ(flag.err,
            "gpuforge: error: unknown option '--sep' for 'expand'; did you mean '--separator'?\n"
            "Run 'gpuforge hostlist expand --help' for usage.\n");
  RunResult show = RunCli({"inventory"});
  EXPECT_EQ(show.code, kExitUsage);
  EXPECT_NE(show.err.find("'gpuforge inventory' needs a command: show"), std::string::npos) << show.err;
  RunResult other = RunCli({"lint", kExample, "--bogus"});
  EXPECT_NE(other.err.find("Run 'gpuforge lint --help' for usage."), std::string::npos) << other.err;
}

TEST(Cli, PlanOfflineShowsLintEstimatesAndFoldedDesiredState) {
  RunResult r = RunCli({"plan", "--offline", "--color", "never", kExample});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("lint PASS"), std::string::npos);
  EXPECT_NE(r.out.find("Cluster power at full load"), std::string::npos);
  EXPECT_NE(r.out.find("gpu[001-004] (4 nodes, profile hgx-h200)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/etc/nccl.conf"), std::string::npos);
  EXPECT_NE(r.out.find("nvidia-fabricmanager"), std::string::npos);
  EXPECT_NE(r.out.find("Plan: "), std::string::npos);
  EXPECT_NE(r.out.find(" to add, 0 to change, 0 to destroy."), std::string::npos);
}

TEST(Cli, PlanJson) {
  RunResult r = RunCli({"plan", "--offline", "--format", "json", kExample});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuforge.plan/v1");
  EXPECT_EQ(j["mode"], "offline");
  ASSERT_EQ(j["nodes"].size(), 3u);  // head01, gpu[001-004], login01
  EXPECT_EQ(j["nodes"][1]["nodes"], "gpu[001-004]");
  EXPECT_EQ(j["nodes"][2]["nodes"], "login01");
  EXPECT_GT(j["summary"]["add"].get<int>(), 0);
}

// #28 item 18: a bare file name ("out.xml") is the working directory's: it used to pass the check
// and then fail at the end of the run ("cannot create directory: Invalid argument"), losing the
// results. plan --out is checked before any node is read, like validate's file flags.
TEST(Cli, BareOutputNamesAreWrittenAndPlanOutIsCheckedFirst) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpuforge-cli-bare-names";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  RunResult r = RunCli({"lint", "--color", "never", (was / kExample).lexically_normal().string(), "--junit", "lint.xml"});
  std::filesystem::current_path(was);
  EXPECT_NE(r.code, kExitUsage) << r.err;
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "lint.xml")) << r.err;
  EXPECT_EQ(r.err.find("cannot create directory"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);

  RunResult plan = RunCli({"plan", kExample, "--out", "/proc/gpuforge-plan.json"});
  EXPECT_EQ(plan.code, kExitUsage) << plan.out;
  EXPECT_NE(plan.err.find("--out /proc/gpuforge-plan.json: cannot create a file in /proc"), std::string::npos)
      << plan.err;
  EXPECT_TRUE(plan.out.empty()) << plan.out;
}

// #28 item 17: a saved plan (an artifact that travels) edited to name another file: an absolute
// path is refused, and a relative one is only hashed; a digest that differs is "stale", and not
// one line of the file is quoted (a root job used to parse it and print its lines in errors).
TEST(Cli, ATamperedSavedPlanNeverShowsTheFileItNames) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpuforge-cli-tampered-plan";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "secret.txt") << "root:$6$hash-that-must-not-be-shown:19000:0:99999:7:::\n";
  auto plan = [&](const std::string& inventory) {
    const std::string path = (dir / "plan.json").string();
    std::ofstream(path) << fmt::format(
        R"({{"schema": "gpuforge.saved-plan/v1", "created": "2026-12-04T00:00:00Z", "inventory": "{}",
 "inventory_sha256": "{}", "only": "", "nodes": []}})",
        inventory, std::string(64, 'a'));
    return path;
  };
  RunResult absolute = RunCli({"apply", plan("/etc/shadow"), "--yes"});
  EXPECT_EQ(absolute.code, kExitUsage) << absolute.err;
  EXPECT_NE(absolute.err.find("names its inventory as '/etc/shadow'; a saved plan names it relative to the plan's own "
                              "directory"),
            std::string::npos)
      << absolute.err;
  RunResult relative = RunCli({"apply", plan("secret.txt"), "--yes"});
  EXPECT_EQ(relative.code, kExitFindings) << relative.err;
  EXPECT_NE(relative.err.find("the plan is stale: " + (dir / "secret.txt").string() + " changed since the plan was made"),
            std::string::npos)
      << relative.err;
  EXPECT_EQ(relative.err.find("must-not-be-shown"), std::string::npos) << relative.err;
  EXPECT_EQ(relative.out.find("must-not-be-shown"), std::string::npos) << relative.out;
  std::filesystem::remove_all(dir);
}

// #28 item 11: --nodes selects whose desired state the offline plan shows, and an unknown name
// is refused as the online plan refuses it; lint and the estimates stay the whole design's.
TEST(Cli, PlanOfflineHonoursNodes) {
  RunResult some = RunCli({"plan", "--offline", "--format", "json", kExample, "--nodes", "gpu[002-003]"});
  ASSERT_EQ(some.code, kExitOk) << some.err;
  auto j = nlohmann::json::parse(some.out);
  ASSERT_EQ(j["nodes"].size(), 1u) << some.out;
  EXPECT_EQ(j["nodes"][0]["nodes"], "gpu[002-003]");
  EXPECT_EQ(j["nodes"][0]["count"], 2);
  RunResult bad = RunCli({"plan", "--offline", kExample, "--nodes", "nosuch"});
  EXPECT_EQ(bad.code, kExitUsage) << bad.out;
  EXPECT_NE(bad.err.find("--nodes: "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("nosuch"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
}

// The munge key (#14): the examples' public key is named and warned about; a Slurm cluster
// without one, or with a file munged would refuse, is refused before anything is planned;
// GPUFORGE_MUNGE_KEY wins over the inventory.
// The example inventory's text, its database password file named by its whole path, so the
// copies these tests write elsewhere still find it.
std::string ExampleText() {
  std::ifstream in(kExample);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string pass = "storage_pass_file: slurmdbd.pass.example";
  EXPECT_NE(text.find(pass), std::string::npos);
  if (std::size_t at = text.find(pass); at != std::string::npos) {
    text.replace(at, pass.size(), "storage_pass_file: " + kExample.substr(0, kExample.rfind('/')) + "/slurmdbd.pass.example");
  }
  return text;
}

std::string WithKeyLine(const std::string& name, const std::string& line) {
  std::string text = ExampleText();
  const std::string from = "    munge_key: munge.key.example\n";
  EXPECT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), line);
  return WriteTemp(name, text);
}

TEST(CliMungeKey, TheExampleKeyIsUsedWithAWarning) {
  RunResult r = RunCli({"plan", "--offline", "--color", "never", kExample});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("/etc/munge/munge.key"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: " + kExample.substr(0, kExample.rfind('/')) + "/h200-ib-32gpu.yaml:"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("munge.key.example is gpuforge's public example munge key; anyone can forge this cluster's "
                       "credentials with it"),
            std::string::npos)
      << r.err;
  // Not one line of the key file is printed.
  std::ifstream key(kExampleKey);
  for (std::string line; std::getline(key, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(r.out.find(line), std::string::npos);
    EXPECT_EQ(r.err.find(line), std::string::npos);
  }
}

// The example names a public database password too (software.scheduler.accounting): used, so
// the example plans as a real cluster would, with a warning naming where it is set.
TEST(CliMungeKey, TheExampleDatabasePasswordIsUsedWithAWarning) {
  RunResult r = RunCli({"plan", "--offline", "--color", "never", kExample});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("warning: " + kExample + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": software.scheduler.accounting.storage_pass_file: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("slurmdbd.pass.example is gpuforge's public example database password"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("/etc/slurm/slurmdbd-storage-pass.conf"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("example-slurmdbd-password"), std::string::npos) << "the password itself is never shown";
  // Another password file: no warning.
  const std::string own = WriteTemp("own.pass", "a-site-password\n");
  std::string text = ExampleText();
  const std::string example_pass = kExample.substr(0, kExample.rfind('/')) + "/slurmdbd.pass.example";
  text.replace(text.find(example_pass), example_pass.size(), own);
  text.replace(text.find("munge_key: munge.key.example"), std::string("munge_key: munge.key.example").size(),
               "munge_key: " + kExampleKey);
  RunResult mine = RunCli({"plan", "--offline", "--color", "never", WriteTemp("own-pass.yaml", text)});
  EXPECT_EQ(mine.code, kExitOk) << mine.err;
  EXPECT_EQ(mine.err.find("example database password"), std::string::npos) << mine.err;
}

TEST(CliMungeKey, ASlurmClusterWithoutAKeyIsRefused) {
  const std::string inv = WithKeyLine("no-key.yaml", "");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "--offline", inv}, std::vector<std::string>{"plan", inv, "--nodes", "gpu001"}}) {
    RunResult r = RunCli(args);
    EXPECT_EQ(r.code, kExitUsage) << r.out << r.err;
    EXPECT_NE(r.err.find(inv + ": a Slurm cluster (auth/munge) needs the same munge key on every node, and nothing "
                               "names one: set software.scheduler.munge_key"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliMungeKey, KeyFilesMungedWouldRefuseAreRefusedNamingThem) {
  const std::string dir = std::filesystem::path(WriteTemp("short.key", "0123456789")).parent_path().string();
  std::filesystem::create_directories(dir + "/key-dir");
  struct Case {
    std::string line, why;
  };
  for (const Case& c : {Case{"    munge_key: short.key\n", "munge key " + dir + "/short.key holds 10 bytes; munged refuses a key "
                                                                         "shorter than 32 bytes"},
                        Case{"    munge_key: key-dir\n", dir + "/key-dir"},
                        Case{"    munge_key: missing.key\n", dir + "/missing.key"}}) {
    const std::string inv = WithKeyLine("bad-key.yaml", c.line);
    RunResult r = RunCli({"plan", "--offline", inv});
    EXPECT_EQ(r.code, kExitUsage) << c.line << r.err;
    EXPECT_NE(r.err.find(inv + ":"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(": software.scheduler.munge_key: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.why), std::string::npos) << c.line << r.err;
  }
}

TEST(CliMungeKey, TheEnvironmentWinsOverTheInventory) {
  const std::string key = WriteTemp("env.key", std::string(64, 'e'));
  const std::string inv = WithKeyLine("env-key.yaml", "    munge_key: missing.key\n");
  ::setenv("GPUFORGE_MUNGE_KEY", key.c_str(), 1);
  RunResult r = RunCli({"plan", "--offline", "--color", "never", inv});
  ::unsetenv("GPUFORGE_MUNGE_KEY");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("munge key, 64 bytes (secret: never shown)"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("example munge key"), std::string::npos) << r.err;
  ::setenv("GPUFORGE_MUNGE_KEY", (key + ".missing").c_str(), 1);
  RunResult bad = RunCli({"plan", "--offline", inv});
  ::unsetenv("GPUFORGE_MUNGE_KEY");
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_NE(bad.err.find("GPUFORGE_MUNGE_KEY: "), std::string::npos) << bad.err;
}

// The example with its nodes on loopback, on a port where nothing listens: every connection
// is refused at once, so a prompt can be answered and nothing on this machine is touched.
std::string RefusingInventory() {
  std::string text = ExampleText();
  for (auto [from, to] : {std::pair{std::string("198.18.0."), std::string("127.0.0.")},
                          std::pair{std::string("port: 22}"), std::string("port: 1}")},
                          std::pair{std::string("munge_key: munge.key.example"), "munge_key: " + kExampleKey}}) {
    for (std::size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  }
  return WriteTemp("refusing.yaml", text);
}

const std::vector<std::string> kApplyRefusing = {"--nodes", "gpu001", "--only", "files", "--ssh-config", "none",
                                                 "--known-hosts", "/dev/null", "--color", "never"};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(CliPrompt, ApplyWithoutATerminalNeedsYes) {
  RunResult r = RunCli(With({"apply", RefusingInventory()}, kApplyRefusing));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err,
            "gpuforge: error: apply: stdin is not a terminal, so there is no one to confirm; rerun with --yes (see "
            "what would change first with `gpuforge plan`)\n");
}

TEST(CliPrompt, ApplyAcceptsOnlyYes) {
  const std::string inv = RefusingInventory();
  for (const std::string answer : {"n\n", "y\n", ""}) {
    RunResult r = RunCli(With({"apply", inv}, kApplyRefusing), answer);
    EXPECT_EQ(r.code, kExitUsage) << answer << r.out << r.err;
    // After the example munge key's warning (the example inventory names it).
    EXPECT_TRUE(r.err.ends_with("\napply: not confirmed; nothing was changed\n")) << answer << r.err;
    // The plan was shown first (here: the node could not be read), then the question.
    EXPECT_NE(r.out.find("gpu001 (1): error: "), std::string::npos) << r.out;
    EXPECT_TRUE(r.out.ends_with("0 changes on 1 nodes, in batches of 1. Apply them? Only 'yes' is accepted: "))
        << r.out;
  }
  RunResult yes = RunCli(With({"apply", inv}, kApplyRefusing), "yes\n");
  EXPECT_EQ(yes.code, kExitFindings) << yes.out << yes.err;
  EXPECT_NE(yes.out.find("Apply them? Only 'yes' is accepted: gpu001 (1): unreachable: "), std::string::npos)
      << yes.out;
  EXPECT_NE(yes.out.find(": 0 applied, 0 unchanged, 1 failed.\n"), std::string::npos) << yes.out;
}

TEST(CliPrompt, RollbackAcceptsOnlyYes) {
  const std::string inv = RefusingInventory();
  const std::vector<std::string> args = {"rollback",      inv,         "--run",         "20261130T064252Z-1a2b3c4d",
                                         "--nodes",       "gpu001",    "--ssh-config",  "none",
                                         "--known-hosts", "/dev/null", "--color",       "never"};
  RunResult none = RunCli(args);
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_EQ(none.err,
            "gpuforge: error: rollback: stdin is not a terminal, so there is no one to confirm; rerun with --yes\n");
  RunResult n = RunCli(args, "n\n");
  EXPECT_EQ(n.code, kExitUsage);
  EXPECT_EQ(n.out,
            "Roll back the files run 20261130T064252Z-1a2b3c4d changed on 1 node(s)? Only 'yes' is accepted: ");
  EXPECT_EQ(n.err, "rollback: not confirmed; nothing was changed\n");
  RunResult yes = RunCli(args, "yes\n");
  EXPECT_EQ(yes.code, kExitFindings) << yes.out << yes.err;
  EXPECT_NE(yes.out.find("gpu001 (1): unreachable: "), std::string::npos) << yes.out;
}

// The real binary, as CI and users run it: exit codes survive the process boundary.
// SIGPIPE is ignored process-wide (issue #12, item 8), so a stdout whose reader is gone is a
// write error: gpuforge says so and does not exit 0 for output nobody received. The reader is
// closed before the process starts, so the write fails every time.
TEST(CliBinary, AClosedStdoutIsAnErrorNotSigpipeNorSuccess) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  const std::string err_file = WriteTemp("closed-stdout.err", "");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(fds[1], 1);
    std::FILE* e = std::freopen(err_file.c_str(), "w", stderr);
    if (e == nullptr) ::_exit(100);
    ::execl(GPUFORGE_BINARY, GPUFORGE_BINARY, "inventory", "show", kExample.c_str(), "--format", "yaml",
            static_cast<char*>(nullptr));
    ::_exit(101);
  }
  ::close(fds[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(err_file);
  std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(err, "gpuforge: error: cannot write the output: Broken pipe\n");
}

// #28 item 24: an inventory may come through a pipe: `-`, /dev/stdin or a process substitution,
// to the same 64 MiB cap. A saved plan needs a file apply can read again, so `plan --out` with
// standard input is refused before anything is read from a node.
TEST(CliBinary, AnInventoryThroughAPipeIsReadLikeAFile) {
  const std::string bin = GPUFORGE_BINARY;
  auto sh = [](const std::string& cmd) -> std::pair<int, std::string> {
    std::string out;
    FILE* p = ::popen(("bash -c '" + cmd + "' 2>&1").c_str(), "r");
    if (p == nullptr) return {-1, ""};
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    int status = ::pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  };
  const auto file = sh(fmt::format("{} lint --color never {}", bin, kExample));
  ASSERT_EQ(file.first, 0) << file.second;
  for (const std::string& how : {fmt::format("cat {} | {} lint --color never -", kExample, bin),
                                 fmt::format("{} lint --color never /dev/stdin < {}", bin, kExample),
                                 fmt::format("{} lint --color never <(cat {})", bin, kExample)}) {
    const auto piped = sh(how);
    EXPECT_EQ(piped.first, 0) << how << "\n" << piped.second;
    EXPECT_EQ(piped.second, file.second) << how;
  }
  // A loader error names standard input as "<stdin>", with line and column.
  const auto bad = sh(fmt::format("printf \"version: 1\\nnodes: 3\\n\" | {} lint -", bin));
  EXPECT_EQ(bad.first, 2) << bad.second;
  EXPECT_NE(bad.second.find("<stdin>:2:"), std::string::npos) << bad.second;
  // A device stays refused, and a plan to save needs a file.
  const auto dev = sh(fmt::format("{} lint - < /dev/null", bin));
  EXPECT_EQ(dev.first, 2) << dev.second;
  EXPECT_NE(dev.second.find("character device"), std::string::npos) << dev.second;
  // Relative file references (the munge key) resolve from the working directory.
  const auto saved = sh(fmt::format("cd {} && cat {} | {} plan - --out /tmp/gpuforge-never-written.json",
                                    std::filesystem::path(kExample).parent_path().string(), kExample, bin));
  EXPECT_EQ(saved.first, 2) << saved.second;
  // The example's Slurm health check copies the inventory to the nodes, a second read: refused.
  EXPECT_NE(saved.second.find("cannot read inventory -: standard input is not read here"), std::string::npos)
      << saved.second;
}

TEST(CliBinary, ExitCodesFromTheRealProcess) {
  std::string bin = GPUFORGE_BINARY;
  auto status = [&](const std::string& args) {
    int s = std::system((bin + " " + args + " >/dev/null 2>&1").c_str());
    return WEXITSTATUS(s);
  };
  EXPECT_EQ(status("lint " + kExample), 0);
  EXPECT_EQ(status("lint /nonexistent.yaml"), 2);
  EXPECT_EQ(status("no-such-command"), 2);
  EXPECT_EQ(status("--version"), 0);
}

}  // namespace
}  // namespace gpuforge::cli

namespace gpuforge::cli {
namespace {

// -q is "only errors on stderr": render's notes about files it did not write are not errors.
TEST(Cli, QuietRenderPrintsNothingButErrors) {
  const std::string out = (std::filesystem::temp_directory_path() / "gpuforge-cli-quiet-render").string();
  std::filesystem::remove_all(out);
  test_support::RunResult loud = test_support::RunCli({"render", kExample, "--out", out});
  ASSERT_EQ(loud.code, kExitOk) << loud.err;
  EXPECT_NE(loud.err.find("not rendered"), std::string::npos) << loud.err;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"-q", "render", kExample, "--out", out},
                                               std::vector<std::string>{"render", kExample, "--out", out, "-q"}}) {
    test_support::RunResult quiet = test_support::RunCli(args);
    EXPECT_EQ(quiet.code, kExitOk) << quiet.err;
    EXPECT_EQ(quiet.err, "");
    EXPECT_EQ(quiet.out, "");
  }
}

}  // namespace
}  // namespace gpuforge::cli
