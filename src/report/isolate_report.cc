#include "gpuforge/report/isolate_report.h"

#include <fmt/format.h>

#include <vector>

#include "gpuforge/base/hostlist.h"

namespace gpuforge::report {
namespace {

namespace isolate = validate::isolate;

std::string Num(std::optional<double> v) { return v ? fmt::format("{:.3g}", *v) : "-"; }

std::string StateText(const validate::Verdict& v, const Style& s) {
  const std::string word = validate::ToString(v.state);
  switch (v.state) {
    case validate::State::kPass: return s.Green(word);
    case validate::State::kWarn: return s.Yellow(word);
    default: return s.Red(word);
  }
}

int IndexOf(const validate::IsolationResult& r, const std::string& node) {
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    if (r.nodes[i] == node) return static_cast<int>(i);
  }
  return -1;
}

// One run, from node `self`'s side: "round 1, wave 1, with tb04: 0.39 Gb/s, 1.00 x median".
std::string RunLine(const validate::IsolationResult& r, const isolate::RunRecord& k, int self, const Style& s) {
  const int other = k.run.a == self ? k.run.b : k.run.a;
  std::string line = fmt::format("round {}, wave {}, with {}: ", k.run.round, k.run.wave + 1,
                                 s.Safe(r.nodes[static_cast<std::size_t>(other)]));
  if (!k.figures.ran) return line + s.Red("did not run") + ": " + s.Safe(k.figures.why);
  line += fmt::format("{} {}", Num(k.figures.values.empty() ? std::nullopt : k.figures.values[0]), r.unit);
  if (!k.ratio.empty() && k.ratio[0]) line += fmt::format(", {:.2f} x median", *k.ratio[0]);
  if (k.low) line += " " + s.Red("LOW");
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
  out += fmt::format("  suspect below {:.2f} x the round-1 median ({} {})", r.relative, Num(r.median), r.unit);
  out += r.floor ? fmt::format(" or below {}\n", s.Safe(r.floor_text)) : std::string(" (no absolute floor: the network has no rate)\n");
  for (const std::string& n : r.notes) out += "  note: " + s.Safe(n) + "\n";
  out += "\n";

  std::vector<std::string> good;
  std::optional<double> lowest_good;
  bool any_suspect = false;
  for (const validate::Verdict& v : r.verdicts) {
    if (v.state == validate::State::kPass) {
      good.push_back(v.node);
      const int i = IndexOf(r, v.node);
      if (i >= 0) {
        const auto& ratio = r.node_verdicts[static_cast<std::size_t>(i)].worst_ratio;
        if (ratio && (!lowest_good || *ratio < *lowest_good)) lowest_good = ratio;
      }
      continue;
    }
    any_suspect = true;
    out += fmt::format("{:<5} {}  {}  {}\n", StateText(v, s), s.Bold(s.Safe(v.node)), s.Safe(v.entity), v.code);
    if (!v.detail.empty()) out += "      " + s.Safe(v.detail) + "\n";
    const int i = IndexOf(r, v.node);
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
                       lowest_good ? fmt::format("; the lowest of their runs {:.2f} x the median", *lowest_good) : "");
  }
  return out;
}

nlohmann::ordered_json IsolationJson(const validate::IsolationResult& r) {
  nlohmann::ordered_json j;
  j["check"] = r.check;
  j["network"] = r.network;
  j["seed"] = r.seed;
  j["unit"] = r.unit;
  j["relative"] = r.relative;
  j["median"] = r.median ? nlohmann::ordered_json(*r.median) : nlohmann::ordered_json(nullptr);
  j["floor"] = r.floor ? nlohmann::ordered_json(*r.floor) : nlohmann::ordered_json(nullptr);
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
    n["worst_ratio"] = nv.worst_ratio ? nlohmann::ordered_json(*nv.worst_ratio) : nlohmann::ordered_json(nullptr);
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
    const std::optional<double> ratio = k.ratio.empty() ? std::nullopt : k.ratio[0];
    x["ratio"] = ratio ? nlohmann::ordered_json(*ratio) : nlohmann::ordered_json(nullptr);
    x["low"] = k.low;
    if (!k.figures.why.empty()) x["why"] = k.figures.why;
    runs.push_back(std::move(x));
  }
  j["runs"] = std::move(runs);
  return j;
}

}  // namespace gpuforge::report
