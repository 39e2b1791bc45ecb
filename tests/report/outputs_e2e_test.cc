// The report files of issue #16 from a validate run over real test hosts (tests/testbed: sshd
// on loopback addresses, so the TCP pair really runs between them): JUnit with the pair's
// suite, checked by xmllint against Jenkins' schema and by junitparser; the textfile checked
// by promtool; the HTML acceptance report; the saved results compared as a baseline.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/consumers.h"
#include "testbed/fixture.h"

namespace gpuforge::report {
namespace {

using gpuforge::testing::Have;
using gpuforge::testing::Ran;
using gpuforge::testing::Sh;

class ReportOutputsE2e : public testbed::TestbedTest {};

TEST_F(ReportOutputsE2e, ValidateOverTestHostsWritesJunitPrometheusAndABaseline) {
  if (!Bring(testbed::WithStandInGpu(2))) return;
  for (std::size_t i = 0; i < 2; ++i) Out(i, "mkdir -p /var/tmp/gpuforge-outputs");
  std::string inv = Inventory();
  const std::string net = "testbed: {role: compute,";
  ASSERT_NE(inv.find(net), std::string::npos) << inv;
  inv.replace(inv.find(net), net.size(), "testbed: {role: control,");
  inv += "\nstorage:\n  tiers:\n    - {name: scratch, kind: local-nvme, role: hot, read_bandwidth: 1GB/s, "
         "mount: /var/tmp/gpuforge-outputs}\n"
         "validation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 0.0001\n    tcp.bandwidth.min_fraction: 0.0001\n"
      "    storage.metadata.max_p99_latency_ms: 10000\n";
  const std::string dir = tb_->paths().dir;
  const std::string path = WriteFile("outputs.yaml", inv);
  auto validate = [&](const std::string& args) {
    return Gpuforge(fmt::format("validate {} --retries 1 --checks storage.read,tcp --param storage.read.size=8MiB "
                                "--param storage.read.threads=2 --param tcp.bandwidth.bytes=32MiB {}",
                                path, args));
  };
  const std::string junit = dir + "/validate.xml", prom = dir + "/textfile/gpuforge.prom", saved = dir + "/results";
  const std::string html = dir + "/acceptance.html";
  // An unwritable report path is a usage error before any node is touched.
  testbed::CommandOutput refused = validate("--report /proc/gpuforge/acceptance.html");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("--report /proc/gpuforge/acceptance.html"), std::string::npos) << refused.output;
  testbed::CommandOutput run = validate(fmt::format("--junit {} --prometheus {} --save-results {} --report {}", junit, prom, saved, html));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  {
    // The acceptance report of a real run: both nodes, the storage bars, the TCP pair's cell
    // and each test case's own time in the JUnit.
    std::ifstream hin(html);
    std::stringstream hs;
    hs << hin.rdbuf();
    for (const char* want : {"id=\"verdict\">PASS</span>", "data-node=\"tb01\"", "data-node=\"tb02\"",
                             "<figure class=\"bars\" data-check=\"storage.read\">",
                             "<figure class=\"heatmap\" data-check=\"tcp.bandwidth\">", "<rect class=\"cell\""}) {
      EXPECT_NE(hs.str().find(want), std::string::npos) << want;
    }
    std::ifstream jin(junit);
    std::stringstream js;
    js << jin.rdbuf();
    EXPECT_NE(js.str().find("classname=\"gpuforge.validate.tcp.bandwidth\" time=\""), std::string::npos) << js.str();
  }
  EXPECT_NE(run.output.find("PASS  tcp.bandwidth"), std::string::npos) << run.output;
  if (Have("xmllint")) {
    Ran ok = Sh(fmt::format("xmllint --noout --schema '{}/report/junit-10.xsd' '{}'", GPUFORGE_TEST_DATA_DIR, junit));
    EXPECT_EQ(ok.code, 0) << ok.out;
  }
  Ran view = gpuforge::testing::JunitparserView(junit);
  if (view.code == 0) {
    for (const char* line : {"tb01 | storage.read /var/tmp/gpuforge-outputs | pass", "tb02 | storage.read",
                             "pairs and groups | tb01: tcp.bandwidth peer tb02 (testbed) | pass",
                             " tests, 0 failures, 0 errors, 0 skipped\n"}) {
      EXPECT_NE(view.out.find(line), std::string::npos) << line << "\n" << view.out;
    }
  }
  if (Have("promtool")) {
    Ran ok = Sh(fmt::format("promtool check metrics < '{}'", prom));
    EXPECT_EQ(ok.code, 0) << ok.out;
  }
  std::ifstream pin(prom);
  std::stringstream ps;
  ps << pin.rdbuf();
  EXPECT_NE(ps.str().find("check=\"tcp.bandwidth\",entity=\"peer tb02 (testbed)\",unit="), std::string::npos) << ps.str();
  std::vector<std::filesystem::path> files(std::filesystem::directory_iterator(saved), {});
  ASSERT_EQ(files.size(), 1u);
  // The same run as its own baseline, with a tolerance no noise reaches: nothing regressed.
  run = validate(fmt::format("--baseline {} --baseline-tolerance 99 --format json", files[0].string()));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json j = nlohmann::json::parse(run.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run.output;
  EXPECT_GE(j["baseline"]["changes"].size(), 3u) << run.output;
  EXPECT_EQ(j["baseline"]["regressions"], 0) << run.output;
}

}  // namespace
}  // namespace gpuforge::report
