#include "gpuforge/report/junit.h"

#include <gtest/gtest.h>

#include "report/consumers.h"

namespace gpuforge::report {
namespace {

using gpuforge::testing::Have;
using gpuforge::testing::JunitparserView;
using gpuforge::testing::kPython;
using gpuforge::testing::ScratchDir;
using gpuforge::testing::Sh;
using validate::State;
using validate::Verdict;

const std::string kXsd = std::string(GPUFORGE_TEST_DATA_DIR) + "/report/junit-10.xsd";

Verdict V(std::string check, std::string node, std::string entity, State st, std::string code = "",
          std::optional<double> value = std::nullopt, std::string threshold = "") {
  Verdict v;
  v.check = std::move(check);
  v.node = std::move(node);
  v.entity = std::move(entity);
  v.state = st;
  v.code = std::move(code);
  v.measured = value;
  v.unit = value ? "GB/s" : "";
  v.threshold = std::move(threshold);
  return v;
}

std::vector<Verdict> Sample() {
  std::vector<Verdict> v = {
      V("storage.read", "gpu01", "/mnt/data", State::kPass, "", 12.5, ">= 1 GB/s (guide)"),
      V("storage.read", "gpu02", "/mnt/data", State::kFail, "threshold.below", 0.5, ">= 1 GB/s (guide)"),
      V("gpu.bandwidth", "gpu02", "gpu0", State::kSkip, "gpu.no_cuda_driver"),
      V("ssh", "gpu03", "node", State::kError, "node.unreachable"),
      V("ib.link", "gpu01", "mlx5_0:1", State::kWarn, "ib.link_width"),
      V("tcp.bandwidth", "gpu01", "peer gpu02 (data)", State::kPass, "", 9.0, ">= 5 GB/s (inventory)"),
  };
  v[1].next_step = "check the mount's server";
  v[1].detail = "read 0.5 GB/s <below> & \x01 bad byte \xff, \"quoted\"";
  v[2].detail = "no CUDA driver on gpu02";
  v[3].detail = "connect to 10.0.0.3:22: Connection refused";
  v[4].detail = "2X of 4X";
  v[0].seconds = 4.25;   // the storage.read run on gpu01
  v[1].seconds = 31.5;   // three attempts on gpu02
  return v;
}

RunInfo Info() {
  RunInfo r;
  r.cluster = "lab";
  r.started = std::chrono::system_clock::from_time_t(1'800'000'000);
  r.seconds = 12.25;
  return r;
}

TEST(ReportJunit, ValidatesAgainstJenkinsSchemaAndReadsInJunitparser) {
  if (!Have("xmllint")) GTEST_SKIP() << "xmllint (libxml2-utils) is not installed";
  if (Sh(std::string(kPython) + " -c 'import junitparser'").code != 0) GTEST_SKIP() << "python3-junitparser missing";
  ScratchDir dir("junit-test");
  const std::string file = dir.Write("validate.xml", ValidateJunit(Info(), Sample()));
  gpuforge::testing::Ran lint = Sh(fmt::format("xmllint --noout --schema '{}' '{}'", kXsd, file));
  EXPECT_EQ(lint.code, 0) << lint.out;
  gpuforge::testing::Ran view = JunitparserView(file);
  ASSERT_EQ(view.code, 0) << view.out;
  EXPECT_EQ(view.out,
            "gpu01 | storage.read /mnt/data | pass | \n"
            "gpu01 | ib.link mlx5_0:1 | pass | \n"
            "== gpu01: 2 tests, 0 failures, 0 errors, 0 skipped\n"
            "gpu02 | storage.read /mnt/data | failure | threshold.below: 0.5 GB/s (>= 1 GB/s (guide))\n"
            "gpu02 | gpu.bandwidth gpu0 | skipped | no CUDA driver on gpu02\n"
            "== gpu02: 2 tests, 1 failures, 0 errors, 1 skipped\n"
            "gpu03 | ssh node | error | node.unreachable\n"
            "== gpu03: 1 tests, 0 failures, 1 errors, 0 skipped\n"
            "pairs and groups | gpu01: tcp.bandwidth peer gpu02 (data) | pass | \n"
            "== pairs and groups: 1 tests, 0 failures, 0 errors, 0 skipped\n"
            "total: 6 tests, 1 failures, 1 errors, 1 skipped\n");
}

TEST(ReportJunit, EachValidateCaseHasTheTimeOfTheRunThatGaveIt) {
  const std::string xml = ValidateJunit(Info(), Sample());
  EXPECT_NE(xml.find("<testcase name=\"storage.read /mnt/data\" classname=\"gpuforge.validate.storage.read\" "
                     "time=\"4.250\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("classname=\"gpuforge.validate.storage.read\" time=\"31.500\">"), std::string::npos) << xml;
  // Nothing ran for the unreachable node: no time rather than a made-up 0.
  EXPECT_NE(xml.find("<testcase name=\"ssh node\" classname=\"gpuforge.validate.ssh\">"), std::string::npos) << xml;
  if (Sh(std::string(kPython) + " -c 'import junitparser'").code != 0) GTEST_SKIP() << "python3-junitparser missing";
  ScratchDir dir("junit-time");
  const std::string file = dir.Write("validate.xml", xml);
  const std::string py = dir.Write("time.py",
                                   "import sys\nfrom junitparser import JUnitXml\n"
                                   "for suite in JUnitXml.fromfile(sys.argv[1]):\n"
                                   "    for case in suite:\n"
                                   "        print(f'{case.name}={case.time}')\n");
  gpuforge::testing::Ran read = Sh(fmt::format("{} '{}' '{}'", kPython, py, file));
  ASSERT_EQ(read.code, 0) << read.out;
  EXPECT_NE(read.out.find("storage.read /mnt/data=4.25\n"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find("storage.read /mnt/data=31.5\n"), std::string::npos) << read.out;
}

TEST(ReportJunit, FailureCarriesCodeValueThresholdAndNextStep) {
  const std::string xml = ValidateJunit(Info(), Sample());
  EXPECT_NE(xml.find("<testsuites name=\"gpuforge validate lab\" tests=\"6\" failures=\"1\" errors=\"1\" time=\"12.250\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure type=\"threshold.below\" message=\"threshold.below: 0.5 GB/s (&gt;= 1 GB/s (guide))\">"
                     "read 0.5 GB/s &lt;below&gt; &amp; ? bad byte ?, &quot;quoted&quot;\n"
                     "threshold: &gt;= 1 GB/s (guide)\nmeasured: 0.5 GB/s\nnext: check the mount&apos;s server\n"
                     "</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("timestamp=\"2027-01-15T08:00:00\" hostname=\"gpu02\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<system-out>WARN ib.link_width\n2X of 4X\n</system-out>"), std::string::npos) << xml;
  // --strict: a warning fails the case, as it fails the run.
  RunInfo strict = Info();
  strict.strict = true;
  EXPECT_NE(ValidateJunit(strict, Sample()).find("<failure type=\"ib.link_width\""), std::string::npos);
}

TEST(ReportJunit, LintAndFactsSuites) {
  model::Cluster c;
  c.name = "lab";
  c.lint.disabled = {"fabric.ethernet_scale"};
  lint::LintResult r;
  ASSERT_NE(lint::FindRule("fabric.ethernet_scale"), nullptr);
  const std::string rule = std::string(lint::Rules().front().id) == "fabric.ethernet_scale"
                               ? std::string(lint::Rules()[1].id)
                               : std::string(lint::Rules().front().id);
  r.findings.push_back({rule, lint::Severity::kError, "too many GPUs", {"gpu01", "gpu02"}, {}, "guide 000"});
  r.errors = 1;
  const std::string xml = LintJunit(Info(), c, r);
  EXPECT_NE(xml.find(fmt::format("<testcase name=\"{}: gpu01,gpu02\" classname=\"gpuforge.lint.{}\">", rule, rule)),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped type=\"lint.disabled\" message=\"disabled by the inventory&apos;s lint.disabled\">"),
            std::string::npos);
  EXPECT_NE(xml.find(fmt::format("tests=\"{}\" failures=\"1\" errors=\"0\" skipped=\"1\"", lint::Rules().size())),
            std::string::npos)
      << xml;

  facts::Collected col;
  col.checked = true;
  col.gathered.push_back({"gpu01", Error{"connect to 10.0.0.1:22: Connection refused"}});
  col.gathered.push_back({"gpu02", facts::NodeFacts{}});
  col.drift.push_back({"ib.link_width", "gpu02", "mlx5_0 port 1", "4X", "2X", "link at 2X"});
  const std::vector<Verdict> fv = FactsVerdicts(c, col);
  ASSERT_EQ(fv.size(), 2u);
  EXPECT_EQ(fv[0].code, "facts.unavailable");
  EXPECT_EQ(fv[0].state, State::kError);
  EXPECT_EQ(fv[1].code, "ib.link_width");
  const std::string fx = FactsJunit(Info(), c, col);
  EXPECT_NE(fx.find("<error type=\"facts.unavailable\""), std::string::npos) << fx;
  EXPECT_NE(fx.find("<testcase name=\"facts mlx5_0 port 1\" classname=\"gpuforge.facts\">\n      <failure "
                    "type=\"ib.link_width\""),
            std::string::npos)
      << fx;
  if (Have("xmllint")) {
    ScratchDir dir("junit-lint-test");
    for (const auto& [name, text] : {std::pair{"lint.xml", xml}, std::pair{"facts.xml", fx}}) {
      gpuforge::testing::Ran ok = Sh(fmt::format("xmllint --noout --schema '{}' '{}'", kXsd, dir.Write(name, text)));
      EXPECT_EQ(ok.code, 0) << ok.out;
    }
  }
}

}  // namespace
}  // namespace gpuforge::report
