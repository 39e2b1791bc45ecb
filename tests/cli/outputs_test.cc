// The report files of issue #16 produced by `validate --local` on this machine (the storage
// probes really run here, through the agent of this build), each checked by its real
// consumer: JUnit by xmllint against Jenkins' schema and by junitparser, the textfile by
// promtool, the HTML report by headless Chromium, the saved results as a baseline by gpuforge
// itself. TCP needs a second node, which
// --local does not have: tests/validate/validate_e2e_test.cc runs it between test hosts.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/consumers.h"

namespace gpuforge::cli {
namespace {

using gpuforge::testing::Have;
using gpuforge::testing::Ran;
using gpuforge::testing::ScratchDir;
using gpuforge::testing::Sh;

const std::string kXsd = std::string(GPUFORGE_TEST_DATA_DIR) + "/report/junit-10.xsd";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string inv = Slurp(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-single-node.yaml");
    const std::string mount = "mount: /scratch";
    ASSERT_NE(inv.find(mount), std::string::npos);
    std::filesystem::create_directories(dir_ / "scratch");
    inv.replace(inv.find(mount), mount.size(), "mount: " + (dir_ / "scratch"));
    inv += "\nvalidation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 0.0001\n    storage.metadata.max_p99_latency_ms: 10000\n";
    inventory_ = dir_.Write("lab.yaml", inv);
  }

  Ran Gpuforge(const std::string& args) {
    return Sh(fmt::format("{} {} 2>&1 </dev/null", GPUFORGE_BINARY, args));
  }
  Ran Validate(const std::string& args) {
    return Gpuforge(fmt::format(
        "validate {} --local --color never --retries 1 --checks storage.read,tcp --param storage.read.size=8MiB "
        "--param storage.read.threads=2 --param storage.checkpoint.size=8MiB --param storage.metadata.files=50 "
        "--param storage.metadata.latency_ops=20 {}",
        inventory_, args));
  }

  ScratchDir dir_{"cli-outputs-test"};
  std::string inventory_;
};

TEST_F(CliOutputs, ValidateLocalWritesEveryFormatAndABaselineFlagsARegression) {
  const std::string junit = dir_ / "out/validate.xml", prom = dir_ / "textfile/gpuforge.prom";
  const std::string saved = dir_ / "results", html = dir_ / "report/acceptance.html";
  Ran run = Validate(
      fmt::format("--format junit --junit {} --prometheus {} --save-results {} --report {}", junit, prom, saved, html));
  ASSERT_EQ(run.code, 0) << run.out;
  // --format junit on stdout (the "results saved" note goes to stderr, merged here) is the file.
  const std::string xml = Slurp(junit);
  ASSERT_NE(run.out.find("<?xml"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.substr(run.out.find("<?xml"), xml.size()), xml);
  EXPECT_NE(xml.find("<testsuite name=\"gpu01\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\""),
            std::string::npos)
      << xml;
  if (Have("xmllint")) {
    Ran ok = Sh(fmt::format("xmllint --noout --schema '{}' '{}'", kXsd, junit));
    EXPECT_EQ(ok.code, 0) << ok.out;
  }
  Ran view = gpuforge::testing::JunitparserView(junit);
  if (view.code == 0) {
    for (const char* line : {"gpu01 | storage.read ", "total: 1 tests, 0 failures, 0 errors, 0 skipped"}) {
      EXPECT_NE(view.out.find(line), std::string::npos) << line << "\n" << view.out;
    }
  }
  const std::string metrics = Slurp(prom);
  EXPECT_NE(metrics.find("gpuforge_validate_value{cluster=\"h200-single\",node=\"gpu01\",check=\"storage.read\""),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpuforge_validate_node_ok{cluster=\"h200-single\",node=\"gpu01\"} 1\n"), std::string::npos);
  if (Have("promtool")) {
    Ran ok = Sh(fmt::format("promtool check metrics < '{}'", prom));
    EXPECT_EQ(ok.code, 0) << ok.out;
  }
  // No temporary file left beside the .prom (the textfile collector reads the directory).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ / "textfile"), {}), 1);

  // The acceptance report, as headless Chromium builds it: the verdict, the node, the storage
  // bars, and nothing refused or failed on the console.
  const std::string report = Slurp(html);
  EXPECT_NE(report.find("id=\"verdict\">PASS</span>"), std::string::npos) << report;
  if (Have("chromium")) {
    const std::string console = dir_ / "console.txt";
    Ran dom = Sh(fmt::format("(timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                             "--disable-extensions --user-data-dir={} --enable-logging=stderr --v=0 --dump-dom "
                             "'file://{}' 2>'{}')",
                             dir_ / "profile", html, console));
    ASSERT_EQ(dom.code, 0) << dom.out;
    for (const char* want : {"id=\"verdict\">PASS</span>", "data-node=\"gpu01\"",
                             "<figure class=\"bars\" data-check=\"storage.read\">", "<rect class=\"bar\""}) {
      EXPECT_NE(dom.out.find(want), std::string::npos) << want;
    }
    const std::string log = Slurp(console);
    EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
  }

  std::vector<std::filesystem::path> files(std::filesystem::directory_iterator(saved), {});
  ASSERT_EQ(files.size(), 1u);
  nlohmann::json base = nlohmann::json::parse(Slurp(files[0].string()));
  EXPECT_EQ(base["schema"], "gpuforge.results/v1");
  ASSERT_EQ(base["validate"]["results"].size(), 1u);

  // Against a baseline where storage.read was ten times faster: still above the pass mark, but a
  // regression (exit 1), in the JSON.
  nlohmann::json faster = base;
  for (auto& r : faster["validate"]["results"]) {
    if (r["check"] == "storage.read") r["value"] = r["value"].get<double>() * 10;
  }
  const std::string fast = dir_.Write("faster.json", faster.dump());
  run = Validate("--format json --baseline " + fast);
  EXPECT_EQ(run.code, 1) << run.out;
  nlohmann::json j = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run.out;
  EXPECT_EQ(j["verdict"].get<std::string>().substr(0, 4), "PASS");
  EXPECT_GE(j["baseline"]["regressions"].get<int>(), 1) << run.out;
  // Where it was a hundred times slower, nothing regressed: exit 0, and the text says so.
  nlohmann::json slower = base;
  for (auto& r : slower["validate"]["results"]) {
    if (r["value"].is_number()) r["value"] = r["value"].get<double>() / 100;
  }
  run = Validate("--baseline " + dir_.Write("slower.json", slower.dump()));
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("no regression beyond 10%"), std::string::npos) << run.out;
  // A baseline of another cluster is refused before anything runs.
  nlohmann::json other = base;
  other["validate"]["cluster"] = "prod";
  run = Validate("--baseline " + dir_.Write("other.json", other.dump()));
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("a baseline of cluster 'prod', not of 'h200-single' (this inventory)"), std::string::npos)
      << run.out;
}

// An unwritable report path is a usage error before any node is touched: the inventory's node
// is an address nothing answers on, and no connection is tried.
TEST_F(CliOutputs, UnwritablePathsAreUsageErrorsBeforeAnyNode) {
  const char* const kCases[][2] = {
      {"--junit /proc/gpuforge.xml", "--junit /proc/gpuforge.xml: cannot create a file in /proc:"},
      {"--prometheus /etc/hostname/x.prom", "--prometheus /etc/hostname/x.prom: /etc/hostname is not a directory"},
      {"--junit /tmp", "--junit /tmp: is a directory"},
      {"--save-results /etc/hostname", "--save-results /etc/hostname: is not a directory"},
  };
  for (const auto& [flag, message] : kCases) {
    Ran r = Gpuforge(fmt::format("validate {} --connect-timeout 1 --checks storage {}", inventory_, flag));
    EXPECT_EQ(r.code, 2) << flag << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << flag << "\n" << r.out;
    EXPECT_EQ(r.out.find("gpu01"), std::string::npos) << "a node was touched: " << r.out;
  }
  Ran r = Gpuforge(fmt::format("lint {} --junit /proc/lint.xml", inventory_));
  EXPECT_EQ(r.code, 2) << r.out;
  r = Gpuforge(fmt::format("facts {} --format junit", inventory_));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("add --check"), std::string::npos) << r.out;
}

// Relative paths are below the working directory, the directories they name made by the
// write (a relative path used to run out of parents at its first name and was refused as "out
// is not a directory"); a relative path through a file is still refused.
TEST_F(CliOutputs, RelativePathsLandBelowTheWorkingDirectory) {
  const std::string work = dir_ / "work";
  std::filesystem::create_directories(work);
  dir_.Write("work/plain", "a file\n");
  Ran refused = Sh(fmt::format("cd '{}' && {} validate {} --local --checks storage.read --junit plain/v.xml </dev/null",
                               work, GPUFORGE_BINARY, inventory_));
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.out.find("--junit plain/v.xml: plain is not a directory"), std::string::npos) << refused.out;
  Ran run = Sh(fmt::format("cd '{}' && {} validate {} --local --color never --retries 1 --checks storage.read "
                           "--param storage.read.size=8MiB --param storage.read.threads=2 --junit out/v.xml "
                           "--prometheus textfile/g.prom --report report/a.html --save-results results </dev/null",
                           work, GPUFORGE_BINARY, inventory_));
  ASSERT_EQ(run.code, 0) << run.out;
  for (const char* file : {"out/v.xml", "textfile/g.prom", "report/a.html"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(work) / file)) << file << "\n" << run.out;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(std::filesystem::path(work) / "results"), {}), 1);
}

TEST_F(CliOutputs, LintAndFactsCheckWriteJunit) {
  const std::string lint = dir_ / "lint.xml";
  Ran r = Gpuforge(fmt::format("lint {} --junit {}", inventory_, lint));
  EXPECT_LE(r.code, 1) << r.out;
  // stdout and stderr share r.out (the tally on stderr can land inside a long report), so the
  // file the consumer reads is the one --junit writes.
  const std::string facts = dir_ / "facts.xml";
  r = Gpuforge(fmt::format("facts {} --local --check --format junit --junit {}", inventory_, facts));
  // This machine is no H200 node: drift (exit 1), each finding a failed test case.
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("<failure type=\""), std::string::npos) << r.out;
  if (!Have("xmllint")) GTEST_SKIP() << "xmllint (libxml2-utils) is not installed";
  for (const std::string& f : {lint, facts}) {
    Ran ok = Sh(fmt::format("xmllint --noout --schema '{}' '{}'", kXsd, f));
    EXPECT_EQ(ok.code, 0) << f << ": " << ok.out;
  }
}

}  // namespace
}  // namespace gpuforge::cli
