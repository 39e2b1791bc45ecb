#include "gpuforge/report/isolate_report.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <vector>

#include "gpuforge/base/hostlist.h"

namespace gpuforge::report {
namespace {

namespace isolate = validate::isolate;

// Three significant digits, without an exponent for the sums of rails (1450, not 1.45e+03).
std::string Num(std::optional<double> v) {
  if (!v) return "-";
  return std::abs(*v) >= 1000 && std::abs(*v) < 1e7 ? fmt::format("{:.0f}", *v) : fmt::format("{:.3g}", *v);
}

std::string StateText(const validate::Verdict& v, const Style& s) {
  const std::string word = validate::ToString(v.state);
  switch (v.state) {
    case validate::State::kPass: return s.Green(word);
    case validate::State::kWarn: return s.Yellow(word);
    default: return s.Red(word);
  }
}

std::map<std::string, int> IndexOf(const validate::IsolationResult& r) {
  std::map<std::string, int> out;
  for (std::size_t i = 0; i < r.nodes.size(); ++i) out[r.nodes[i]] = static_cast<int>(i);
  return out;
}

int Find(const std::map<std::string, int>& index, const std::string& node) {
  const auto it = index.find(node);
  return it == index.end() ? -1 : it->second;
}

// One run, from node `self`'s side: "round 1, wave 1, with tb04: 0.39 Gb/s, 1.00 x median".
std::string RunLine(const validate::IsolationResult& r, const isolate::RunRecord& k, int self, const Style& s) {
  const int other = k.run.a == self ? k.run.b : k.run.a;
  std::string line = fmt::format("round {}, wave {}, with {}: ", k.run.round, k.run.wave + 1,
                                 s.Safe(r.nodes[static_cast<std::size_t>(other)]));
  if (!k.figures.ran) return line + s.Red("did not run") + ": " + s.Safe(k.figures.why);
  line += fmt::format("{} {}", Num(k.figures.values.empty() ? std::nullopt : k.figures.values[0]), r.unit);
  if (const std::optional<double> shown = r.Shown(k.ratio.empty() ? std::nullopt : k.ratio[0])) {
    line += fmt::format(", {:.2f} x median", *shown);
  }
  // Per-rail measures: the rails that were low (below the relative rule or their floor; for a
  // latency above them).
  for (std::size_t m = 1; m < k.figures.values.size() && m < r.measure_names.size(); ++m) {
    const std::optional<double>& v = k.figures.values[m];
    const std::optional<double> ratio = m < k.ratio.size() ? k.ratio[m] : std::nullopt;
    const bool under = v && r.BeyondFloor(m, *v);
    if (v && (under || (ratio && *ratio < r.relative))) {
      const std::optional<double> shown = r.Shown(ratio);
      line += fmt::format("; {} {} {}{}", s.Safe(r.measure_names[m]), Num(v), r.unit,
                          shown ? fmt::format(", {:.2f} x median", *shown) : "");
    }
  }
  if (k.low) line += " " + s.Red(r.words().flag);
  if (!k.figures.why.empty()) line += " (" + s.Safe(k.figures.why) + ")";
  return line;
}

}  // namespace

std::string IsolationText(const validate::IsolationResult& r, const Style& s) {
  std::string out;
  std::size_t ran = 0;
  for (const isolate::RunRecord& k : r.runs) ran += k.figures.ran;
  out += fmt::format("isolation: {} pairs on network {}, seed {} (--seed {} repeats the pairing)\n", r.check,
                     s.Safe(r.network), r.seed, r.seed);
  out += fmt::format("  {} node{} in the rounds; {} round{}, {} wave{}, {} pair run{} ({} ran)\n", r.nodes.size(),
                     r.nodes.size() == 1 ? "" : "s", r.rounds, r.rounds == 1 ? "" : "s", r.waves,
                     r.waves == 1 ? "" : "s", r.runs.size(), r.runs.size() == 1 ? "" : "s", ran);
  const auto w = r.words();
  const char* beyond = w.beyond;
  const double times = r.RelativeShown();
  if (r.measure_names.size() > 1) {
    out += fmt::format("  measured per rail, one rail at a time; suspect {} {:.2f} x the round-1 median of the rail "
                       "or of {}, or {} the rail's {} ({})\n",
                       beyond, times, r.lower_is_better ? "the slowest rail" : "the sum", beyond, w.bound,
                       s.Safe(r.floor_text));
    out += "  round-1 medians:";
    for (std::size_t m = 0; m < r.measure_names.size(); ++m) {
      out += fmt::format("{} {} {} {}", m == 0 ? "" : ";", s.Safe(r.measure_names[m]),
                         Num(m < r.medians.size() ? r.medians[m] : std::nullopt), r.unit);
      if (m < r.floors.size() && r.floors[m] > 0) {
        out += fmt::format(" ({} {:.3g})", w.bound, r.floors[m]);
      }
    }
    out += "\n";
  } else {
    out += fmt::format("  suspect {} {:.2f} x the round-1 median ({} {})", beyond, times, Num(r.median), r.unit);
    out += r.floor ? fmt::format(" or {} {}\n", beyond, s.Safe(r.floor_text))
                   : std::string(" (no absolute floor: the network has no rate)\n");
  }
  for (const std::string& n : r.notes) out += "  note: " + s.Safe(n) + "\n";
  out += "\n";

  const std::map<std::string, int> index = IndexOf(r);
  std::vector<std::string> good;
  std::optional<double> lowest_good;
  bool any_suspect = false;
  for (const validate::Verdict& v : r.verdicts) {
    if (v.state == validate::State::kPass) {
      good.push_back(v.node);
      const int i = Find(index, v.node);
      if (i >= 0) {
        const auto& ratio = r.node_verdicts[static_cast<std::size_t>(i)].worst_ratio;
        if (ratio && (!lowest_good || *ratio < *lowest_good)) lowest_good = ratio;
      }
      continue;
    }
    any_suspect = true;
    out += fmt::format("{:<5} {}  {}  {}\n", StateText(v, s), s.Bold(s.Safe(v.node)), s.Safe(v.entity), v.code);
    if (!v.detail.empty()) out += "      " + s.Safe(v.detail) + "\n";
    const int i = Find(index, v.node);
    if (i >= 0) {
      for (const isolate::RunRecord& k : r.runs) {
        if (k.run.a == i || k.run.b == i) out += "      " + RunLine(r, k, i, s) + "\n";
      }
    }
    if (!v.next_step.empty()) out += "      next: " + s.Safe(v.next_step) + "\n";
  }
  if (!any_suspect) out += "no suspect: every pair ran at or near the median\n";
  if (!good.empty()) {
    out += fmt::format("{:<5} {} good ({} node{}){}\n", s.Green("PASS"), s.Safe(hostlist::Fold(good)), good.size(),
                       good.size() == 1 ? "" : "s",
                       !lowest_good ? ""
                                    : fmt::format("; the {} of their runs {:.2f} x the median{}", r.words().worst,
                                                  r.Shown(lowest_good).value_or(0), r.lower_is_better ? " latency" : ""));
  }
  return out;
}

nlohmann::ordered_json IsolationJson(const validate::IsolationResult& r) {
  nlohmann::ordered_json j;
  j["check"] = r.check;
  j["network"] = r.network;
  j["seed"] = r.seed;
  j["unit"] = r.unit;
  // Latency: floors are ceilings, and a ratio above 1 is the worse side.
  j["lower_is_better"] = r.lower_is_better;
  j["relative"] = r.relative;
  j["median"] = r.median ? nlohmann::ordered_json(*r.median) : nlohmann::ordered_json(nullptr);
  j["floor"] = r.floor ? nlohmann::ordered_json(*r.floor) : nlohmann::ordered_json(nullptr);
  if (r.measure_names.size() > 1) {
    // Per-rail runs: every measure's name, floor and round-1 median; each run's "values" in that order.
    nlohmann::ordered_json measures = nlohmann::ordered_json::array();
    for (std::size_t m = 0; m < r.measure_names.size(); ++m) {
      nlohmann::ordered_json x;
      x["name"] = r.measure_names[m];
      x["floor"] = m < r.floors.size() && r.floors[m] > 0 ? nlohmann::ordered_json(r.floors[m]) : nlohmann::ordered_json(nullptr);
      x["median"] = m < r.medians.size() && r.medians[m] ? nlohmann::ordered_json(*r.medians[m]) : nlohmann::ordered_json(nullptr);
      measures.push_back(std::move(x));
    }
    j["measures"] = std::move(measures);
  }
  j["rounds"] = r.rounds;
  j["waves"] = r.waves;
  j["notes"] = r.notes;
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    const isolate::NodeVerdict& nv = r.node_verdicts[i];
    nlohmann::ordered_json n;
    n["node"] = r.nodes[i];
    n["verdict"] = isolate::VerdictName(nv.verdict);
    n["measure"] = nv.measure;
    n["partner"] = nv.partner ? nlohmann::ordered_json(r.nodes[static_cast<std::size_t>(*nv.partner)])
                              : nlohmann::ordered_json(nullptr);
    const std::optional<double> worst = r.Shown(nv.worst_ratio);
    n["worst_ratio"] = worst ? nlohmann::ordered_json(*worst) : nlohmann::ordered_json(nullptr);
    n["why"] = nv.why;
    nodes.push_back(std::move(n));
  }
  j["nodes"] = std::move(nodes);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const isolate::RunRecord& k : r.runs) {
    nlohmann::ordered_json x;
    x["round"] = k.run.round;
    x["wave"] = k.run.wave + 1;
    x["a"] = r.nodes[static_cast<std::size_t>(k.run.a)];
    x["b"] = r.nodes[static_cast<std::size_t>(k.run.b)];
    x["ran"] = k.figures.ran;
    const std::optional<double> value = k.figures.values.empty() ? std::nullopt : k.figures.values[0];
    x["value"] = value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
    const std::optional<double> ratio = r.Shown(k.ratio.empty() ? std::nullopt : k.ratio[0]);
    x["ratio"] = ratio ? nlohmann::ordered_json(*ratio) : nlohmann::ordered_json(nullptr);
    if (r.measure_names.size() > 1) {
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      for (const std::optional<double>& v : k.figures.values) values.push_back(v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr));
      x["values"] = std::move(values);
    }
    x["low"] = k.low;
    if (!k.figures.why.empty()) x["why"] = k.figures.why;
    runs.push_back(std::move(x));
  }
  j["runs"] = std::move(runs);
  return j;
}

}  // namespace gpuforge::report
