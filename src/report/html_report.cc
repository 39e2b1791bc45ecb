#include "gpuforge/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "gpuforge/base/build_info.h"
#include "gpuforge/base/text.h"
#include "gpuforge/report/prometheus.h"
#include "gpuforge/report/validate_report.h"
#include "report/format.h"
#include "report/xml.h"

namespace gpuforge::report {
namespace {

using validate::State;
using validate::Verdict;

// Everything a node or the inventory sent is text here, never markup: XML's escaping is
// HTML's too (&, <, >, quotes), and it also replaces bytes no document may hold.
std::string E(std::string_view s) { return xml::Escape(s, true); }

std::string Num(double x) { return format::Number(x); }

// Charts stay readable and the file stays small on a cluster of thousands of nodes: the node
// tables list everything, a chart shows its first rows and says how many it left out.
constexpr std::size_t kMaxBarRows = 256;
constexpr std::size_t kMaxCurves = 64;
constexpr std::size_t kMaxHeatNodes = 64;

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{margin:0 0 8px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{display:inline-block;font-size:22px;font-weight:bold;padding:4px 16px;border-radius:4px;color:#fff}
.s-PASS{background:#1b7f3b;color:#fff}.s-WARN{background:#c98a00;color:#fff}.s-FAIL{background:#c0262d;color:#fff}
.s-SKIP{background:#777;color:#fff}.s-ERROR{background:#6b1fa8;color:#fff}
td.state{font-weight:bold;text-align:center}figure{margin:12px 0;break-inside:avoid}figcaption{font-weight:bold}
figure.curve{display:inline-block;vertical-align:top;margin-right:16px;max-width:540px}
.note{color:#555}svg text{font:11px system-ui,sans-serif}
@media print{body{margin:0}section.node{break-before:page}a{color:inherit;text-decoration:none}}
)";

const char* Color(State s) {
  switch (s) {
    case State::kPass: return "#1b7f3b";
    case State::kWarn: return "#c98a00";
    case State::kFail: return "#c0262d";
    case State::kSkip: return "#777777";
    case State::kError: return "#6b1fa8";
  }
  return "#777777";
}

std::string StateCell(State s) {
  const char* name = validate::ToString(s);
  return fmt::format("<td class=\"state s-{0}\">{0}</td>", name);
}

std::string Value(const Verdict& v) { return format::Quantity(v.measured, v.unit); }

std::string Anchor(const std::string& node) { return "node-" + E(node); }

std::vector<const Verdict*> Listed(std::span<const Verdict> verdicts) {
  std::vector<const Verdict*> out;
  for (const Verdict& v : verdicts) {
    if (!v.left_out) out.push_back(&v);
  }
  return out;
}

struct Counts {
  std::map<State, int> by_state;
  State worst = State::kPass;
};

int Rank(State s) {
  switch (s) {
    case State::kPass: return 0;
    case State::kSkip: return 1;
    case State::kWarn: return 2;
    case State::kFail: return 3;
    case State::kError: return 4;
  }
  return 4;
}

void Summary(std::string& o, const RunInfo& run, const model::Cluster& c, const std::vector<const Verdict*>& listed,
             std::span<const Verdict> all) {
  const int code = validate::ExitCode(all, run.strict);
  const char* verdict = code == 0 ? "PASS" : code == 1 ? "FAIL" : "ERROR";
  const BuildInfo& build = GetBuildInfo();
  o += fmt::format("<header><h1>Acceptance report: {}</h1>\n", E(run.cluster));
  o += fmt::format("<p><span class=\"verdict s-{0}\" id=\"verdict\">{0}</span> {1}</p>\n", verdict,
                   E(ValidateSummary(all, run.strict)));
  o += "<table class=\"meta\">\n";
  o += fmt::format("<tr><th>inventory</th><td>{}</td></tr>\n", E(run.inventory));
  o += fmt::format("<tr><th>nodes</th><td>{} in the inventory</td></tr>\n", c.nodes.size());
  o += fmt::format("<tr><th>started</th><td>{}</td></tr>\n", E(Iso8601(run.started)));
  o += fmt::format("<tr><th>duration</th><td>{:.1f} s</td></tr>\n", run.seconds);
  o += fmt::format("<tr><th>judged</th><td>{}</td></tr>\n",
                   run.strict ? "--strict: a warning fails" : "a warning passes (no --strict)");
  o += fmt::format("<tr><th>gpuforge</th><td>{} ({})</td></tr>\n", E(build.version), E(build.git_describe));
  o += "</table>\n";

  // Per node: a row of counts and its worst state, linking to its section.
  std::map<std::string, Counts> per_node;
  std::vector<std::string> order;
  for (const Verdict* v : listed) {
    auto [it, fresh] = per_node.try_emplace(v->node);
    if (fresh) order.push_back(v->node);
    ++it->second.by_state[v->state];
    if (Rank(v->state) > Rank(it->second.worst)) it->second.worst = v->state;
  }
  o += "<table id=\"nodes-summary\"><tr><th>node</th><th>worst</th><th>pass</th><th>warn</th><th>fail</th>"
       "<th>skip</th><th>error</th></tr>\n";
  for (const std::string& n : order) {
    const Counts& k = per_node[n];
    auto count = [&](State s) {
      auto it = k.by_state.find(s);
      return it == k.by_state.end() ? 0 : it->second;
    };
    o += fmt::format("<tr><td><a href=\"#{}\">{}</a></td>{}<td class=\"num\">{}</td><td class=\"num\">{}</td>"
                     "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                     Anchor(n), E(n), StateCell(k.worst), count(State::kPass), count(State::kWarn),
                     count(State::kFail), count(State::kSkip), count(State::kError));
  }
  o += "</table></header>\n";
}

// A pair check's other end: "peer tb02 (compute)" and "mlx5_0:1 to tb02 mlx5_0:1" name tb02.
std::string PeerOf(const std::string& entity) {
  std::size_t at = std::string::npos, skip = 0;
  if (entity.starts_with("peer ")) {
    at = 0;
    skip = 5;
  } else if (std::size_t to = entity.find(" to "); to != std::string::npos) {
    at = to;
    skip = 4;
  }
  if (at == std::string::npos) return "";
  std::string rest = entity.substr(at + skip);
  return rest.substr(0, rest.find(' '));
}

// Horizontal bars, one per node and entity, each with its own pass-mark tick (marks differ by
// GPU model and NIC): a row is red when it failed, and the tick is where it had to reach.
void Bars(std::string& o, const std::string& check, const std::vector<const Verdict*>& rows) {
  double top = 0;
  std::vector<std::optional<PassMark>> marks;
  for (const Verdict* v : rows) {
    marks.push_back(ParsePassMark(v->threshold, v->unit));
    top = std::max(top, *v->measured);
    if (marks.back()) top = std::max(top, marks.back()->value);
  }
  if (top <= 0) top = 1;
  const std::size_t shown = std::min(rows.size(), kMaxBarRows);
  const int label_w = 260, bar_w = 600, row_h = 18;
  const int height = static_cast<int>(shown) * row_h + 24;
  o += fmt::format("<figure class=\"bars\" data-check=\"{}\"><figcaption>{} ({})</figcaption>\n", E(check), E(check),
                   E(rows.front()->unit));
  o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                   label_w + bar_w + 80, height);
  for (std::size_t i = 0; i < shown; ++i) {
    const Verdict& v = *rows[i];
    const int y = static_cast<int>(i) * row_h + 4;
    const double w = *v.measured / top * bar_w;
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{} {}</text>", label_w - 6, y + 12, E(v.node),
                     E(v.entity));
    o += fmt::format("<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>", label_w, y,
                     std::max(w, 1.0), row_h - 4, Color(v.state));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", label_w + std::max(w, 1.0) + 4, y + 12,
                     E(Num(*v.measured)));
    if (marks[i]) {
      const double x = label_w + marks[i]->value / top * bar_w;
      o += fmt::format("<line class=\"mark\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#000\" "
                       "stroke-width=\"2\" stroke-dasharray=\"3,2\"><title>pass mark {3} {4}</title></line>",
                       x, y - 1, y + row_h - 3, E(marks[i]->op), E(Num(marks[i]->value)));
    }
    o += '\n';
  }
  o += "</svg>";
  if (shown < rows.size()) {
    o += fmt::format("<p class=\"note\">{} of {} rows drawn; the node sections list all.</p>", shown, rows.size());
  }
  o += "<p class=\"note\">Bars: the measured value, coloured by verdict; dashed tick: the pass mark.</p></figure>\n";
}

// NCCL busbw against message size (log2 x), the sweep nccl-tests prints, with the pass mark
// the largest size is held against.
void Curve(std::string& o, const Verdict& v) {
  const int w = 520, h = 240, left = 56, bottom = 32, top_pad = 10;
  double ymax = 0, xmin = 1e300, xmax = 0;
  for (auto [x, y] : v.curve) {
    ymax = std::max(ymax, y);
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
  }
  const std::optional<PassMark> mark = ParsePassMark(v.threshold, v.unit);
  if (mark) ymax = std::max(ymax, mark->value);
  if (ymax <= 0) ymax = 1;
  ymax *= 1.1;
  const double lx0 = std::log2(std::max(xmin, 1.0)), lx1 = std::max(std::log2(std::max(xmax, 1.0)), lx0 + 1);
  auto px = [&](double x) { return left + (std::log2(std::max(x, 1.0)) - lx0) / (lx1 - lx0) * (w - left - 10); };
  auto py = [&](double y) { return top_pad + (1 - y / ymax) * (h - bottom - top_pad); };
  o += fmt::format("<figure class=\"curve\"><figcaption>{} on {}: busbw by message size</figcaption>\n",
                   E(v.entity), E(v.node));
  o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, h);
  o += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#888\"/>", left, top_pad, h - bottom);
  o += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#888\"/>", left, w - 10, h - bottom);
  for (int k = static_cast<int>(std::ceil(lx0)); k <= static_cast<int>(lx1); k += 4) {
    static constexpr std::array<std::string_view, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
    const std::size_t u = std::min<std::size_t>(static_cast<std::size_t>(k) / 10, kUnits.size() - 1);
    const double x = px(std::exp2(k));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>", x, h - bottom + 14,
                     1 << (k - static_cast<int>(u) * 10), kUnits[u]);
  }
  for (int i = 0; i <= 4; ++i) {
    const double y = ymax * i / 4;
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", left - 4, py(y) + 4, E(Num(y)));
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 12 {})\">busbw GB/s</text>", 12,
                   (h - bottom) / 2, (h - bottom) / 2);
  std::string points;
  for (auto [x, y] : v.curve) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
  o += fmt::format("<polyline class=\"busbw\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", points,
                   Color(v.state));
  if (mark) {
    o += fmt::format("<line class=\"mark\" x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\" "
                     "stroke-dasharray=\"4,3\"><title>pass mark {3} {4} GB/s</title></line>",
                     left, w - 10, py(mark->value), E(mark->op), E(Num(mark->value)));
  }
  o += "</svg><p class=\"note\">Line: busbw per size (out-of-place); dashed: the pass mark, held against the "
       "largest size.</p></figure>\n";
}

// Pairwise bandwidth: rows are the node that measured, columns the peer; each cell's colour is
// how far the value got toward its pass mark.
void HeatMap(std::string& o, const std::string& check, const std::vector<const Verdict*>& rows) {
  std::vector<std::string> nodes;
  std::map<std::pair<std::string, std::string>, const Verdict*> cell;
  auto add = [&](const std::string& n) {
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  };
  for (const Verdict* v : rows) {
    const std::string peer = PeerOf(v->entity);
    add(v->node);
    add(peer);
    cell.try_emplace({v->node, peer}, v);
  }
  const std::size_t n = std::min(nodes.size(), kMaxHeatNodes);
  const int cw = 56, ch = 22, label = 120;
  o += fmt::format("<figure class=\"heatmap\" data-check=\"{}\"><figcaption>{}: node (row) to peer (column), {}"
                   "</figcaption>\n",
                   E(check), E(check), E(rows.front()->unit));
  o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">",
                   label + static_cast<int>(n) * cw + 10, label / 2 + static_cast<int>(n) * ch + 10);
  for (std::size_t j = 0; j < n; ++j) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", label + static_cast<int>(j) * cw + cw / 2,
                     label / 2 - 6, E(nodes[j]));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int y = label / 2 + static_cast<int>(i) * ch;
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label - 6, y + 15, E(nodes[i]));
    for (std::size_t j = 0; j < n; ++j) {
      const int x = label + static_cast<int>(j) * cw;
      auto it = cell.find({nodes[i], nodes[j]});
      if (it == cell.end()) {
        o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f3f3f3\" stroke=\"#fff\"/>", x, y,
                         cw, ch);
        continue;
      }
      const Verdict& v = *it->second;
      const std::optional<PassMark> mark = ParsePassMark(v.threshold, v.unit);
      // Lightness from the value's share of its mark: a pass is solid green, a fail is red and
      // darker the further below the mark it fell.
      std::string fill = Color(v.state);
      if (mark && mark->value > 0 && v.state == State::kFail) {
        const double share = std::clamp(*v.measured / mark->value, 0.0, 1.0);
        fill = fmt::format("hsl(356,70%,{:.0f}%)", 30 + share * 40);
      }
      o += fmt::format("<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\">"
                       "<title>{} to {}: {} ({})</title></rect>",
                       x, y, cw, ch, fill, E(v.node), E(nodes[j]), E(Value(v)), E(v.threshold));
      o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#fff\">{}</text>", x + cw / 2, y + 15,
                       E(Num(*v.measured)));
    }
    o += '\n';
  }
  o += "</svg>";
  if (n < nodes.size()) o += fmt::format("<p class=\"note\">{} of {} nodes drawn.</p>", n, nodes.size());
  o += "</figure>\n";
}

void Plots(std::string& o, const std::vector<const Verdict*>& listed) {
  std::vector<std::string> checks;
  std::map<std::string, std::vector<const Verdict*>> bars, pairs;
  std::vector<const Verdict*> curves;
  for (const Verdict* v : listed) {
    if (!v->curve.empty()) curves.push_back(v);
    if (!v->measured || v->check == "facts") continue;
    auto& into = PeerOf(v->entity).empty() ? bars : pairs;
    auto [it, fresh] = into.try_emplace(v->check + '\n' + v->unit);
    if (fresh) checks.push_back(v->check + '\n' + v->unit);
    it->second.push_back(v);
  }
  o += "<section id=\"plots\"><h2>Plots</h2>\n";
  if (checks.empty() && curves.empty()) o += "<p class=\"note\">No check measured a value to plot.</p>\n";
  for (const std::string& key : checks) {
    const std::string check = key.substr(0, key.find('\n'));
    if (auto it = bars.find(key); it != bars.end()) Bars(o, check, it->second);
    if (auto it = pairs.find(key); it != pairs.end()) HeatMap(o, check, it->second);
  }
  for (std::size_t i = 0; i < curves.size() && i < kMaxCurves; ++i) Curve(o, *curves[i]);
  if (curves.size() > kMaxCurves) {
    o += fmt::format("<p class=\"note\">{} of {} NCCL curves drawn.</p>\n", kMaxCurves, curves.size());
  }
  o += "</section>\n";
}

void Drift(std::string& o, const std::vector<const Verdict*>& listed) {
  o += "<section id=\"drift\"><h2>Drift: the nodes against the inventory</h2>\n";
  std::vector<const Verdict*> found;
  bool ran = false;
  for (const Verdict* v : listed) {
    if (v->check != "facts") continue;
    ran = true;
    if (v->state != State::kPass) found.push_back(v);
  }
  if (!ran) {
    o += "<p class=\"note\">The facts check was not part of this run.</p></section>\n";
    return;
  }
  if (found.empty()) {
    o += "<p>No drift: every node gathered matches the inventory.</p></section>\n";
    return;
  }
  o += "<table><tr><th>node</th><th>subject</th><th>state</th><th>code</th><th>expected</th><th>found</th>"
       "<th>next step</th></tr>\n";
  for (const Verdict* v : found) {
    o += fmt::format("<tr><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", E(v->node),
                     E(v->entity), StateCell(v->state), E(v->code), E(v->threshold), E(v->detail), E(v->next_step));
  }
  o += "</table></section>\n";
}

void BaselineSection(std::string& o, const Comparison& cmp) {
  o += fmt::format("<section id=\"baseline\"><h2>Against the baseline</h2><p>{} (started {}), tolerance {}%: {} "
                   "regressed.</p>\n",
                   E(cmp.file), E(cmp.started.empty() ? "unknown" : cmp.started), Num(cmp.tolerance_pct),
                   cmp.regressions());
  o += "<table><tr><th>node</th><th>check</th><th>entity</th><th>was</th><th>now</th><th>change</th></tr>\n";
  for (const Change& ch : cmp.changes) {
    o += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{} {}</td><td class=\"num\">{} {}</td>"
                     "<td class=\"num\">{:+.1f}%</td></tr>\n",
                     ch.regressed ? " class=\"s-FAIL\"" : "", E(ch.node), E(ch.check), E(ch.entity), E(Num(ch.was)),
                     E(ch.unit), E(Num(ch.now)), E(ch.unit), ch.change_pct);
  }
  o += "</table>\n";
  for (const std::string& m : cmp.missing) o += fmt::format("<p class=\"note\">Not measured this time: {}</p>\n", E(m));
  o += "</section>\n";
}

void NodeSections(std::string& o, const std::vector<const Verdict*>& listed) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Verdict*>> by_node;
  for (const Verdict* v : listed) {
    auto [it, fresh] = by_node.try_emplace(v->node);
    if (fresh) order.push_back(v->node);
    it->second.push_back(v);
  }
  for (const std::string& n : order) {
    o += fmt::format("<section class=\"node\" id=\"{}\" data-node=\"{}\"><h2>{}</h2>\n", Anchor(n), E(n), E(n));
    o += "<table><tr><th>check</th><th>entity</th><th>state</th><th>value</th><th>threshold</th><th>code</th>"
         "<th>next step</th><th>detail</th></tr>\n";
    for (const Verdict* v : by_node[n]) {
      o += fmt::format("<tr><td>{}</td><td>{}</td>{}<td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td></tr>\n",
                       E(v->check), E(v->entity), StateCell(v->state), E(Value(*v)), E(v->threshold), E(v->code),
                       E(v->next_step), E(v->detail));
    }
    o += "</table></section>\n";
  }
}

void Inventory(std::string& o, const model::Cluster& c, std::span<const Verdict> all) {
  std::size_t left_out = 0;
  for (const Verdict& v : all) left_out += v.left_out ? 1 : 0;
  o += "<section id=\"inventory\"><h2>Inventory</h2>\n";
  if (left_out > 0) {
    o += fmt::format("<p class=\"note\">{} left out where {} not apply (by role or profile).</p>\n",
                     gpuforge::text::Plural(static_cast<long long>(left_out), "check was", "checks were"),
                     left_out == 1 ? "it does" : "they do");
  }
  o += "<table><tr><th>node</th><th>address</th><th>rack</th><th>role</th><th>profile</th><th>GPUs</th></tr>\n";
  for (const model::Node& n : c.nodes) {
    const model::Profile& p = c.ProfileOf(n);
    std::string gpus;
    for (const model::GpuSpec& g : p.gpus) {
      if (!gpus.empty()) gpus += ", ";
      gpus += fmt::format("{} x {}", g.count, g.model);
    }
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", E(n.name),
                     E(n.address), E(n.rack), E(model::ToString(n.role)), E(n.profile), E(gpus));
  }
  o += "</table></section>\n";
}

// validate --isolate (#32): the pair matrix, a heat map of every pair's figure by node, coloured
// by its ratio to the round-1 median, so a bad node's row and a bad link's cell stand out; and
// with per-rail RDMA, a node-by-rail map of each node's lowest ratio on each rail. Suspects come
// first, so a cluster larger than the drawing keeps them in it.
std::string MatrixFill(std::optional<double> ratio, bool low, bool ran) {
  if (!ran || !ratio) return "#bbbbbb";
  if (!low) return fmt::format("hsl(135,55%,{:.0f}%)", 28 + std::clamp(1.0 - *ratio, 0.0, 0.2) * 100);
  return fmt::format("hsl(356,70%,{:.0f}%)", 30 + std::clamp(*ratio, 0.0, 1.0) * 30);
}

// A ratio as a cell shows it; "-" where there is none (a latency with no reply has none).
std::string Ratio2(std::optional<double> ratio) { return ratio ? fmt::format("{:.2f}", *ratio) : "-"; }

void IsolationSection(std::string& o, const validate::IsolationResult& r) {
  namespace iso = validate::isolate;
  std::vector<std::size_t> order;  // node indices, suspects first
  std::set<std::string> suspect;
  for (const Verdict& v : r.verdicts) {
    if (v.state != State::kPass) suspect.insert(v.node);
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      if ((suspect.count(r.nodes[i]) > 0) == (pass == 0)) order.push_back(i);
    }
  }
  const std::size_t n = std::min(order.size(), kMaxHeatNodes);
  std::vector<int> at(r.nodes.size(), -1);  // node index -> drawn position
  for (std::size_t k = 0; k < n; ++k) at[order[k]] = static_cast<int>(k);

  o += "<section id=\"isolation\"><h2>Isolation</h2>\n";
  o += fmt::format("<p class=\"note\">{} pairs on network {}, seed {} (<code>--seed {}</code> repeats the pairing): "
                   "{} rounds, {} pair runs. A cell is a pair's {} figure; green at the round-1 median, red {} "
                   "{:.2f} x it or {} the {}, grey where the run did not run, blank where the two never ran "
                   "together.</p>\n",
                   E(r.check), E(r.network), r.seed, r.seed, r.rounds, r.runs.size(), r.words().worst,
                   r.words().beyond, r.RelativeShown(), r.words().beyond, r.words().bound);
  // The pair matrix, symmetric: cell (a, b) and (b, a) are the lowest run of the pair.
  struct Cell {
    std::optional<double> value, ratio;
    bool low = false, ran = false, any = false;
    std::string title;
  };
  std::map<std::pair<int, int>, Cell> cells;
  for (const iso::RunRecord& k : r.runs) {
    const int a = at[static_cast<std::size_t>(k.run.a)], b = at[static_cast<std::size_t>(k.run.b)];
    if (a < 0 || b < 0) continue;
    const std::optional<double> value = k.figures.values.empty() ? std::nullopt : k.figures.values[0];
    const std::optional<double> ratio = k.ratio.empty() ? std::nullopt : k.ratio[0];
    for (const auto& key : {std::pair{a, b}, std::pair{b, a}}) {
      Cell& c = cells[key];
      const bool lower = !c.any || (k.figures.ran && (!c.ran || (value && c.value && r.Worse(*value, *c.value))));
      c.any = true;
      c.low = c.low || k.low;
      if (!lower) continue;
      c.ran = k.figures.ran;
      c.value = value;
      c.ratio = ratio;
      const std::optional<double> shown = r.Shown(ratio);
      c.title = fmt::format("{} with {}, round {}: {}", r.nodes[static_cast<std::size_t>(k.run.a)],
                            r.nodes[static_cast<std::size_t>(k.run.b)], k.run.round,
                            k.figures.ran ? fmt::format("{} {}{}", value ? Num(*value) : "-", r.unit,
                                                        shown ? fmt::format(", {:.2f} x median", *shown) : "")
                                          : "did not run: " + k.figures.why);
    }
  }
  const int cw = 48, ch = 22, label = 120;
  o += fmt::format("<figure class=\"pairmatrix\"><figcaption>pair matrix: {} ({}), node by node</figcaption>\n",
                   E(r.measure_names.empty() ? r.check : r.measure_names.front()), E(r.unit));
  o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">",
                   label + static_cast<int>(n) * cw + 10, label / 2 + static_cast<int>(n) * ch + 10);
  for (std::size_t j = 0; j < n; ++j) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     label + static_cast<int>(j) * cw + cw / 2, label / 2 - 6, E(r.nodes[order[j]]));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int y = label / 2 + static_cast<int>(i) * ch;
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\"{}>{}</text>", label - 6, y + 15,
                     suspect.count(r.nodes[order[i]]) ? " font-weight=\"bold\"" : "", E(r.nodes[order[i]]));
    for (std::size_t j = 0; j < n; ++j) {
      const auto it = cells.find({static_cast<int>(i), static_cast<int>(j)});
      if (it == cells.end()) continue;
      const Cell& c = it->second;
      const int x = label + static_cast<int>(j) * cw;
      o += fmt::format("<rect class=\"cell{}\" data-a=\"{}\" data-b=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" "
                       "height=\"{}\" fill=\"{}\" stroke=\"#fff\"><title>{}</title></rect>",
                       c.low ? " low" : "", E(r.nodes[order[i]]), E(r.nodes[order[j]]), x, y, cw, ch,
                       MatrixFill(c.ratio, c.low, c.ran), E(c.title));
      o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#fff\">{}</text>", x + cw / 2,
                       y + 15, Ratio2(r.Shown(c.ratio)));
    }
    o += '\n';
  }
  o += "</svg>";
  if (n < order.size()) o += fmt::format("<p class=\"note\">{} of {} nodes drawn, suspects first.</p>", n, order.size());
  o += "</figure>\n";

  // Per rail: each node's lowest ratio on each rail over all its runs.
  if (r.measure_names.size() > 1) {
    const std::size_t rails = r.measure_names.size() - 1;
    const int rw = 96;
    o += "<figure class=\"railmatrix\"><figcaption>rails: each node's best run on each rail, as a ratio to the "
         "rail's round-1 median (red: low even with its best partner)</figcaption>\n";
    o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">",
                     label + static_cast<int>(rails) * rw + 10, 30 + static_cast<int>(n) * ch + 10);
    for (std::size_t m = 1; m <= rails; ++m) {
      o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                       label + static_cast<int>(m - 1) * rw + rw / 2, 22, E(r.measure_names[m]));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t node = order[i];
      const int y = 30 + static_cast<int>(i) * ch;
      o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label - 6, y + 15,
                       E(r.nodes[node]));
      for (std::size_t m = 1; m <= rails; ++m) {
        // The node's best run on the rail: a bad rail is low with every partner, so even its best
        // run is; a partner of a bad rail has a good run with someone else (the rounds retest
        // every suspect with known-good nodes).
        std::vector<double> ratios, values;
        for (const iso::RunRecord& k : r.runs) {
          if (static_cast<std::size_t>(k.run.a) != node && static_cast<std::size_t>(k.run.b) != node) continue;
          if (m >= k.ratio.size() || !k.ratio[m] || !k.figures.values[m]) continue;
          ratios.push_back(*k.ratio[m]);
          values.push_back(*k.figures.values[m]);
        }
        const bool ran = !ratios.empty();
        const std::optional<double> lowest =
            ran ? std::optional<double>(*std::max_element(ratios.begin(), ratios.end())) : std::nullopt;
        const auto best = r.lower_is_better ? std::min_element(values.begin(), values.end())
                                            : std::max_element(values.begin(), values.end());
        const std::optional<double> value = ran ? std::optional<double>(*best) : std::nullopt;
        const bool low = lowest && (*lowest < r.relative || (value && r.BeyondFloor(m, *value)));
        const int x = label + static_cast<int>(m - 1) * rw;
        o += fmt::format("<rect class=\"cell{}\" data-node=\"{}\" data-rail=\"{}\" x=\"{}\" y=\"{}\" "
                         "width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\"><title>{} {}: {}</title></rect>",
                         low ? " low" : "", E(r.nodes[node]), m - 1, x, y, rw, ch, MatrixFill(lowest, low, ran),
                         E(r.nodes[node]), E(r.measure_names[m]),
                         E(value ? fmt::format("{} {}, {} x the rail's median (the best of its {} run{}; the worst {})",
                                             Num(*value), r.unit, Ratio2(r.Shown(lowest)), ratios.size(),
                                             ratios.size() == 1 ? "" : "s",
                                             Ratio2(r.Shown(*std::min_element(ratios.begin(), ratios.end()))))
                                 : "no run"));
        o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#fff\">{}</text>", x + rw / 2,
                         y + 15, Ratio2(r.Shown(lowest)));
      }
      o += '\n';
    }
    o += "</svg></figure>\n";
  }
  o += "</section>\n";
}

}  // namespace

std::string ValidateHtml(const RunInfo& run, const model::Cluster& c, std::span<const Verdict> verdicts,
                         const std::optional<Comparison>& baseline, const validate::IsolationResult* isolation) {
  const std::vector<const Verdict*> listed = Listed(verdicts);
  std::string o;
  o.reserve(16384 + listed.size() * 400);
  o += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  // Loads nothing: a browser refuses, and logs, any script, font, image or frame.
  o += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n";
  o += fmt::format("<title>gpuforge acceptance report: {}</title>\n<style>{}</style></head><body>\n", E(run.cluster),
                   kStyle);
  Summary(o, run, c, listed, verdicts);
  if (isolation != nullptr) IsolationSection(o, *isolation);
  Plots(o, listed);
  Drift(o, listed);
  if (baseline) BaselineSection(o, *baseline);
  NodeSections(o, listed);
  Inventory(o, c, verdicts);
  o += fmt::format("<footer><p class=\"note\">Written by gpuforge {} at the end of the run that started {}.</p>"
                   "</footer>\n</body></html>\n",
                   E(GetBuildInfo().version), E(Iso8601(run.started)));
  return o;
}

}  // namespace gpuforge::report
