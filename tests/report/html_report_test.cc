#include "gpuforge/report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "gpuforge/inventory/loader.h"
#include "report/consumers.h"

namespace gpuforge::report {
namespace {

using gpuforge::testing::Have;
using gpuforge::testing::Ran;
using gpuforge::testing::ScratchDir;
using gpuforge::testing::Sh;
using ::testing::HasSubstr;
using ::testing::Not;
using validate::State;
using validate::Verdict;

Verdict V(std::string check, std::string node, std::string entity, State st, std::optional<double> value = std::nullopt,
          std::string threshold = "", std::string code = "") {
  Verdict v;
  v.check = std::move(check);
  v.node = std::move(node);
  v.entity = std::move(entity);
  v.state = st;
  v.measured = value;
  v.unit = value ? "GB/s" : "";
  v.threshold = std::move(threshold);
  v.code = std::move(code);
  return v;
}

RunInfo Info() {
  RunInfo r;
  r.cluster = "h200-ib-32gpu";
  r.inventory = "inventories/examples/h200-ib-32gpu.yaml";
  r.started = std::chrono::system_clock::from_time_t(1'800'000'000);
  r.seconds = 93.5;
  return r;
}

model::Cluster Example() {
  inventory::LoadOutcome c =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml");
  EXPECT_TRUE(c.ok()) << c.FormatDiagnostics();
  return c.ok() ? *c.cluster : model::Cluster{};
}

// A run as an acceptance test on delivered hardware ends: per-GPU bandwidth on every node (one
// GPU slow), NCCL all-reduce sweeps, pairwise TCP between nodes (one bad pair), a drift and a
// node that did not answer.
std::vector<Verdict> AcceptanceRun(const model::Cluster& c) {
  std::vector<Verdict> out;
  int i = 0;
  for (const model::Node& n : c.nodes) {
    if (n.role != model::NodeRole::kCompute) continue;
    ++i;
    for (int g = 0; g < 2; ++g) {
      const bool slow = i == 2 && g == 1;
      out.push_back(V("gpu.bandwidth", n.name, fmt::format("gpu{}", g), slow ? State::kFail : State::kPass,
                      slow ? 2100 : 4000 + 10 * g, ">= 3800 GB/s (90% of 4.8 TB/s; guide 000)",
                      slow ? "threshold.below" : ""));
    }
    Verdict nccl = V("nccl.allreduce", n.name, "allreduce", State::kPass, 460, ">= 380 GB/s at 8589934592 B (80%)");
    for (int k = 10; k <= 33; k += 1) nccl.curve.emplace_back(std::exp2(k), std::min(480.0, 12.0 * (k - 9) * (k - 9)));
    out.push_back(nccl);
    if (i > 1) {
      const bool bad = i == 3;
      out.push_back(V("tcp.bandwidth", n.name, "peer " + c.nodes[1].name + " (storage)",
                      bad ? State::kFail : State::kPass, bad ? 3.5 : 11.8, ">= 10 GB/s (guide 004)",
                      bad ? "threshold.below" : ""));
    }
    if (i == 4) break;
  }
  Verdict drift = V("facts", c.nodes[2].name, "mlx5_3", State::kFail, std::nullopt, "400 Gb/s (inventory)",
                    "ib.link_rate");
  drift.detail = "200 Gb/s <script>alert('x')</script>";
  drift.next_step = "reseat the cable & check the switch port";
  out.push_back(drift);
  Verdict down = V("ssh", c.nodes.back().name, "node", State::kError, std::nullopt, "", "node.unreachable");
  down.detail = "ssh: connect to host 198.18.0.99 port 22: No route to host";
  out.push_back(down);
  Verdict left = V("gpu.bandwidth", c.nodes.front().name, "node", State::kSkip, std::nullopt, "", "plan.no_gpu");
  left.left_out = true;
  out.push_back(left);
  return out;
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(ReportHtml, VerdictAndSummaryComeFirstThenEveryNodesChecks) {
  const model::Cluster c = Example();
  const std::vector<Verdict> v = AcceptanceRun(c);
  const std::string html = ValidateHtml(Info(), c, v);
  // ERROR (the unreachable node) outranks FAIL, as the exit code does.
  EXPECT_THAT(html, HasSubstr("<span class=\"verdict s-ERROR\" id=\"verdict\">ERROR</span>"));
  EXPECT_LT(html.find("id=\"verdict\""), html.find("id=\"plots\""));
  EXPECT_LT(html.find("id=\"plots\""), html.find("class=\"node\""));
  std::set<std::string> nodes;
  for (const Verdict& x : v) {
    if (!x.left_out) nodes.insert(x.node);
  }
  for (const std::string& n : nodes) {
    EXPECT_THAT(html, HasSubstr(fmt::format("<section class=\"node\" id=\"node-{0}\" data-node=\"{0}\">", n)));
    EXPECT_THAT(html, HasSubstr(fmt::format("<a href=\"#node-{}\">", n)));
  }
  // The left-out check is counted, not listed.
  EXPECT_THAT(html, HasSubstr("1 check was left out where it does not apply"));
  EXPECT_THAT(html, Not(HasSubstr("plan.no_gpu")));
  // The inventory: every node, with role and GPUs.
  for (const model::Node& n : c.nodes) EXPECT_THAT(html, HasSubstr("<tr><td>" + n.name + "</td>"));
  EXPECT_THAT(html, HasSubstr("8 x H200"));
}

TEST(ReportHtml, WhatNodesSentIsTextNeverMarkup) {
  const model::Cluster c = Example();
  const std::string html = ValidateHtml(Info(), c, AcceptanceRun(c));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, HasSubstr("200 Gb/s &lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("reseat the cable &amp; check the switch port"));
  // Self-contained: the only URL is the SVG namespace; nothing is fetched.
  std::string rest = html;
  rest = std::regex_replace(rest, std::regex("xmlns=\"http://www.w3.org/2000/svg\"|http-equiv="), "");
  EXPECT_THAT(rest, Not(HasSubstr("http")));
  EXPECT_THAT(rest, Not(HasSubstr(" src=")));
  EXPECT_THAT(rest, Not(HasSubstr("<link")));
  EXPECT_THAT(html, HasSubstr("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
}

TEST(ReportHtml, BarsHoldEachValueAgainstItsPassMark) {
  const model::Cluster c = Example();
  const std::string html = ValidateHtml(Info(), c, AcceptanceRun(c));
  const std::size_t start = html.find("<figure class=\"bars\" data-check=\"gpu.bandwidth\">");
  ASSERT_NE(start, std::string::npos);
  const std::string fig = html.substr(start, html.find("</figure>", start) - start);
  EXPECT_EQ(Count(fig, "<rect class=\"bar\""), 8u);  // 4 nodes x 2 GPUs
  EXPECT_EQ(Count(fig, "<line class=\"mark\""), 8u);
  EXPECT_EQ(Count(fig, "fill=\"#c0262d\""), 1u);  // the one slow GPU is red
  EXPECT_THAT(fig, HasSubstr("<title>pass mark &gt;= 3800</title>"));
}

TEST(ReportHtml, NcclCurvesAndThePairHeatMap) {
  const model::Cluster c = Example();
  const std::string html = ValidateHtml(Info(), c, AcceptanceRun(c));
  EXPECT_EQ(Count(html, "<figure class=\"curve\">"), 4u);
  EXPECT_EQ(Count(html, "<polyline class=\"busbw\""), 4u);
  const std::size_t p = html.find("<polyline class=\"busbw\" points=\"");
  const std::string points = html.substr(p, html.find('"', p + 33) - p);
  EXPECT_EQ(Count(points, ","), 24u);  // 1 KiB .. 8 GiB, one point per size
  const std::size_t start = html.find("<figure class=\"heatmap\" data-check=\"tcp.bandwidth\">");
  ASSERT_NE(start, std::string::npos);
  const std::string fig = html.substr(start, html.find("</figure>", start) - start);
  EXPECT_EQ(Count(fig, "<rect class=\"cell\""), 3u);
  EXPECT_THAT(fig, HasSubstr("hsl(356"));  // the bad pair, darker the further below its mark
  // No bars for the pair check: it is the heat map.
  EXPECT_EQ(html.find("<figure class=\"bars\" data-check=\"tcp.bandwidth\">"), std::string::npos);
}

TEST(ReportHtml, BaselineRegressionsAreListed) {
  const model::Cluster c = Example();
  Comparison cmp;
  cmp.file = "acceptance.json";
  cmp.started = "2026-11-01T10:00:00Z";
  cmp.changes.push_back({"nccl.allreduce", c.nodes[1].name, "allreduce", "GB/s", ">=", 470, 400, -14.9, true});
  cmp.missing.push_back("gpu.bandwidth gpu1 on " + c.nodes[1].name);
  const std::string html = ValidateHtml(Info(), c, AcceptanceRun(c), cmp);
  EXPECT_THAT(html, HasSubstr("<section id=\"baseline\">"));
  EXPECT_THAT(html, HasSubstr("tolerance 10%: 1 regressed."));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">-14.9%</td>"));
}

// The real consumer: Debian's Chromium, headless. It parses the file (its serialised DOM shows
// what it built), logs every Content-Security-Policy refusal and script error on the console,
// and draws it (a screenshot and a PDF print).
struct Browser {
  Ran dom;
  std::string console;
};

Browser Open(const ScratchDir& dir, const std::string& file) {
  const std::string base =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
      "--user-data-dir=" + dir / "profile";
  Browser b;
  // Sh sends stderr to stdout; the console goes to its own file inside the subshell.
  b.dom = Sh(fmt::format("({} --enable-logging=stderr --v=0 --dump-dom 'file://{}' 2>'{}')", base, file,
                         dir / "console.txt"));
  std::ifstream in(dir / "console.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.find("CONSOLE") != std::string::npos) b.console += line + "\n";
  }
  return b;
}

TEST(ReportHtmlChromium, ParsesDrawsAndPrintsWithNothingRefused) {
  if (!Have("chromium")) GTEST_SKIP() << "chromium is not installed (scripts/deps.sh installs it)";
  const model::Cluster c = Example();
  ScratchDir dir("html-report");
  const std::string file = dir.Write("report.html", ValidateHtml(Info(), c, AcceptanceRun(c)));
  Browser b = Open(dir, file);
  ASSERT_EQ(b.dom.code, 0) << b.dom.out;
  EXPECT_EQ(b.console, "") << "the browser logged: " << b.console;
  // Chromium's DOM, not our text: the sections and the SVG it built.
  EXPECT_THAT(b.dom.out, HasSubstr("id=\"verdict\">ERROR</span>"));
  for (const Verdict& v : AcceptanceRun(c)) {
    if (!v.left_out) {
      EXPECT_THAT(b.dom.out, HasSubstr("data-node=\"" + v.node + "\""));
    }
  }
  EXPECT_EQ(Count(b.dom.out, "<rect class=\"bar\""), 12u);  // 4 x 2 GPUs, 4 all-reduce
  EXPECT_EQ(Count(b.dom.out, "<polyline class=\"busbw\""), 4u);
  EXPECT_EQ(Count(b.dom.out, "<rect class=\"cell\""), 3u);
  EXPECT_THAT(b.dom.out, Not(HasSubstr("<script")));

  const std::string base = "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                           "--hide-scrollbars --user-data-dir=" + dir / "profile";
  const std::string png = dir / "report.png", pdf = dir / "report.pdf";
  Ran shot = Sh(fmt::format("{} --window-size=1280,2400 --screenshot='{}' 'file://{}'", base, png, file));
  ASSERT_EQ(shot.code, 0) << shot.out;
  EXPECT_GT(std::filesystem::file_size(png), 20'000u) << "a blank page is a few KiB";
  Ran print = Sh(fmt::format("{} --no-pdf-header-footer --print-to-pdf='{}' 'file://{}'", base, pdf, file));
  ASSERT_EQ(print.code, 0) << print.out;
  EXPECT_GT(std::filesystem::file_size(pdf), 10'000u);
  // GPUFORGE_KEEP_REPORT=DIR keeps the screenshot for a person to look at.
  if (const char* keep = std::getenv("GPUFORGE_KEEP_REPORT")) {
    std::filesystem::copy_file(png, std::string(keep) + "/report.png", std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(file, std::string(keep) + "/report.html", std::filesystem::copy_options::overwrite_existing);
  }
}

TEST(ReportHtmlChromium, AnythingTheReportWouldFetchIsRefusedAndSeen) {
  // The check above can fail: the same report with one external image is blocked by its own
  // policy, and the browser says so on the console (loopback only; the policy stops it first).
  if (!Have("chromium")) GTEST_SKIP() << "chromium is not installed (scripts/deps.sh installs it)";
  const model::Cluster c = Example();
  ScratchDir dir("html-report-bad");
  std::string html = ValidateHtml(Info(), c, AcceptanceRun(c));
  html.insert(html.find("</body>"), "<img src=\"http://127.0.0.1:9/logo.png\">");
  Browser b = Open(dir, dir.Write("report.html", html));
  ASSERT_EQ(b.dom.code, 0) << b.dom.out;
  EXPECT_THAT(b.console, HasSubstr("Content Security Policy"));
}

}  // namespace
}  // namespace gpuforge::report
