// lint's text report folds findings that say the same of different objects (#28 item 22: a
// 128-node design printed 77 errors in ~150 lines); its JSON keeps every finding.

#include "gpuforge/report/lint_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuforge::report {
namespace {

lint::Finding F(std::string rule, std::string message, std::vector<std::string> objects, int line,
                lint::Severity severity = lint::Severity::kError) {
  lint::Finding f;
  f.rule = std::move(rule);
  f.severity = severity;
  f.message = std::move(message);
  f.objects = std::move(objects);
  f.where = SourcePos{"c.yaml", line, 3};
  f.source = "guide";
  return f;
}

lint::LintResult Result128() {
  lint::LintResult r;
  for (int i = 1; i <= 32; ++i) {
    const std::string leaf = fmt::format("leaf{:04}", i);
    r.findings.push_back(F("fabric.oversubscription",
                           leaf + ": 32 x 400 Gb/s down vs 16 x 400 Gb/s up = 2:1 oversubscribed (limit 1:1)", {leaf}, 88));
  }
  // One leaf cabled otherwise keeps its own line: its figures differ.
  r.findings.push_back(F("fabric.oversubscription",
                         "leaf0033: 32 x 400 Gb/s down vs 8 x 400 Gb/s up = 4:1 oversubscribed (limit 1:1)", {"leaf0033"}, 88));
  for (int rack = 1; rack <= 4; ++rack) {
    const std::string name = fmt::format("r{:02}", rack);
    const std::string nodes = fmt::format("gpu[{:02}-{:02}]", rack * 4 - 3, rack * 4);
    std::vector<std::string> objects = {name};
    for (int n = rack * 4 - 3; n <= rack * 4; ++n) objects.push_back(fmt::format("gpu{:02}", n));
    r.findings.push_back(F("power.rack_limit",
                           fmt::format("rack {} draws 32 kW at full load, above its 20 kW limit (nodes {})", name, nodes),
                           objects, 10 + rack));
  }
  // A name that is not one of the finding's objects is a word like any other: "ib" and "eth"
  // differ, so these two stay apart.
  r.findings.push_back(F("fabric.no_infiniband", "compute network ib is slow", {"net1"}, 5, lint::Severity::kWarning));
  r.findings.push_back(F("fabric.no_infiniband", "compute network eth is slow", {"net2"}, 6, lint::Severity::kWarning));
  r.errors = 37;
  r.warnings = 2;
  return r;
}

TEST(LintReport, AlikeFindingsAreOneLineWithTheirObjectsFolded) {
  model::Cluster c;
  c.name = "bench-128";
  const lint::LintResult r = Result128();
  const std::string text = LintText(c, r, Style{});
  EXPECT_NE(text.find("error   fabric.oversubscription  leaf[0001-0032]: 32 x 400 Gb/s down vs 16 x 400 Gb/s up = 2:1 "
                      "oversubscribed (limit 1:1) (32 findings)\n"
                      "                                 c.yaml:88:3 | guide\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("leaf0033: 32 x 400 Gb/s down vs 8 x 400 Gb/s up = 4:1 oversubscribed (limit 1:1)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("rack r[01-04] draws 32 kW at full load, above its 20 kW limit (nodes gpu[01-16]) (4 findings)\n"
                      "                                 c.yaml:11:3 and 3 other places | guide\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("compute network ib is slow\n"), std::string::npos) << text;
  EXPECT_NE(text.find("compute network eth is slow\n"), std::string::npos) << text;
  // 39 findings in 5 groups (two each), then the blank line and the summary.
  std::size_t lines = 0;
  for (char ch : text) lines += ch == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 5u * 2 + 2) << text;
  EXPECT_NE(text.find("lint FAIL: 37 errors, 2 warnings, 0 infos"), std::string::npos) << text;
  // JSON is for machines: every finding, unfolded.
  EXPECT_EQ(LintJson(c, r)["findings"].size(), r.findings.size());
}

}  // namespace
}  // namespace gpuforge::report
