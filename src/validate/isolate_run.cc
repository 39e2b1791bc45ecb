#include "gpuforge/validate/isolate_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <map>
#include <mutex>

#include "gpuforge/remote/fanout.h"
#include "gpuforge/validate/agent.h"
#include "gpuforge/validate/runner.h"
#include "validate/blame.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

using internal::Mark;

bool Interrupted(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(); }

std::string Ratio(std::optional<double> r) { return r ? fmt::format("{:.2f}", *r) : "-"; }

// A pair run of the wave on fresh sessions: the template's check with `a` as client and `b`
// as server, b's inventory address as the peer. Its figure, or why it did not run and whom
// the runner blamed (BlameOwnFailures: the side that failed on its own).
isolate::Figures RunOne(remote::Connector& connector, const remote::Target& ta, const remote::Target& tb,
                        const AgentOnNode& aa, const AgentOnNode& ab, const model::Cluster& c, const Thresholds& t,
                        const PlannedRun& tmpl, int ia, int ib, const IsolateRunOptions& o) {
  isolate::Figures f;
  f.values.assign(1, std::nullopt);
  Result<std::unique_ptr<remote::Session>> sa = connector.Connect(ta);
  if (!sa.ok()) {
    f.why = fmt::format("{}: {}", ta.node, sa.error().message);
    f.blamed = ia;
    return f;
  }
  Result<std::unique_ptr<remote::Session>> sb = connector.Connect(tb);
  if (!sb.ok()) {
    f.why = fmt::format("{}: {}", tb.node, sb.error().message);
    f.blamed = ib;
    return f;
  }
  const model::Node* peer = c.FindNode(tb.node);
  PlannedRun run = tmpl;
  run.node = ta.node;
  run.peer = tb.node;
  run.peer_address = peer != nullptr && !peer->address.empty() ? peer->address : tb.node;
  run.params["peer"] = run.peer_address;
  run.entity = fmt::format("peer {} ({})", tb.node, run.params.count("network") ? run.params.at("network") : "");
  RunOptions ro;
  ro.retries = 1;  // isolation's own rounds retry; a pair is run once per wave
  ro.timeout_s = o.timeout_s;
  ro.cancel = o.cancel;
  std::vector<Verdict> got = RunPair(**sa, aa, **sb, ab, c, t, run, ro);
  for (const Verdict& v : got) {
    if (v.check == run.check && v.node == run.node && v.measured) {
      f.ran = true;
      f.values[0] = *v.measured;
      return f;
    }
  }
  // Did not run because a node failed on its own (its agent, a port it could not bind, its
  // session): that node is blamed, and the rounds retest its partner.
  for (const Verdict& v : got) {
    if (v.state == State::kPass || v.state == State::kWarn || v.code == "pair.peer_failed" ||
        internal::WaitsOnOthers(v.code)) {
      continue;
    }
    f.why = fmt::format("{}: {} {}", v.node, v.code, v.detail);
    f.blamed = v.node == ta.node ? ia : v.node == tb.node ? ib : ia;
    return f;
  }
  // Both ends were up and only waited on each other (the connection never came, the socket
  // went quiet: blame.cc's waiting codes): the path between them carried nothing. That is a
  // figure, zero, and evidence for the rounds (a dead path is a bad link, a dead node's every
  // pair is low), not a node to blame.
  for (const Verdict& v : got) {
    if (v.state != State::kPass && internal::WaitsOnOthers(v.code)) {
      f.ran = true;
      f.values[0] = 0.0;
      f.why = fmt::format("nothing crossed between {} and {}: {}: {} {}", ta.node, tb.node, v.node, v.code, v.detail);
      return f;
    }
  }
  f.why = fmt::format("{} and {}: the pair gave no figure", ta.node, tb.node);
  return f;
}

// Suspects first (errors, failures, warnings), then the rest, each in node order.
int Rank(const Verdict& v) {
  switch (v.state) {
    case State::kError: return 0;
    case State::kFail: return 1;
    case State::kWarn: return 2;
    case State::kSkip: return 3;
    case State::kPass: return 4;
  }
  return 5;
}

}  // namespace

Result<std::uint64_t> ParseSeed(std::string_view text) {
  std::string_view s = text;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size()) {
    return Error{fmt::format("--seed {}: not a number (give the seed a run printed, decimal or 0x-hex)",
                             text.size() > 40 ? std::string(text.substr(0, 40)) + "..." : std::string(text))};
  }
  if (ec == std::errc::result_out_of_range) {
    return Error{fmt::format("--seed {}: larger than 2^64-1", text.substr(0, 40))};
  }
  return v;
}

Verdict IsolationVerdict(const IsolationResult& r, std::size_t i) {
  const isolate::NodeVerdict& nv = r.node_verdicts[i];
  Verdict v;
  v.check = "isolate." + r.check;
  v.node = r.nodes[i];
  v.entity = "node";
  v.unit = r.unit;
  if (nv.worst_run) {
    const isolate::RunRecord& w = r.runs[*nv.worst_run];
    if (nv.measure < static_cast<int>(w.figures.values.size())) v.measured = w.figures.values[nv.measure];
  }
  if (r.median) {
    v.threshold = fmt::format(">= {:.2f} x the round-1 median {:.3g} {}", r.relative, *r.median, r.unit);
    if (r.floor) v.threshold += fmt::format(", and >= {}", r.floor_text);
  } else if (r.floor) {
    v.threshold = ">= " + r.floor_text;
  }
  const std::string partner = nv.partner ? r.nodes[*nv.partner] : "";
  const std::string ratio = Ratio(nv.worst_ratio);
  switch (nv.verdict) {
    case isolate::Verdict::kGood:
      v.state = State::kPass;
      v.detail = nv.worst_ratio ? fmt::format("its lowest run: {} x the round-1 median", ratio) : nv.why;
      break;
    case isolate::Verdict::kBadNode:
      Mark(v, "isolate.bad_node");
      v.detail = fmt::format("{} (lowest run {} x the median)", nv.why, ratio);
      break;
    case isolate::Verdict::kBadRail:
      Mark(v, "isolate.bad_rail");
      v.entity = fmt::format("rail {}", nv.measure - 1);
      v.detail = fmt::format("{} (lowest run {} x the median)", nv.why, ratio);
      break;
    case isolate::Verdict::kBadLink:
      Mark(v, "isolate.bad_link");
      v.entity = "link to " + partner;
      v.detail = fmt::format("{} (lowest run {} x the median)", nv.why, ratio);
      break;
    case isolate::Verdict::kLinkOrPartner:
      Mark(v, "isolate.link_or_partner");
      v.entity = "link to " + partner;
      v.detail = fmt::format("{} (lowest run {} x the median)", nv.why, ratio);
      break;
    case isolate::Verdict::kFlaky:
      Mark(v, "isolate.flaky");
      v.detail = fmt::format("{} (lowest run {} x the median)", nv.why, ratio);
      break;
    case isolate::Verdict::kCouldNotRun:
      Mark(v, "isolate.could_not_run");
      v.detail = nv.why;
      break;
    case isolate::Verdict::kUnjudged:
      Mark(v, "isolate.unjudged");
      v.detail = nv.why;
      break;
  }
  if (v.state != State::kPass) v.next_step = FindCode(v.code) ? std::string(FindCode(v.code)->next_step) : "";
  if (v.state != State::kPass && !partner.empty()) {
    v.next_step += fmt::format(" (gpuforge cabling INVENTORY --nodes {},{})", v.node, partner);
  }
  return v;
}

Result<IsolationResult> RunIsolation(remote::Connector& connector, std::span<const remote::Target> targets,
                                     const model::Cluster& c, const Thresholds& t, const ValidatePlan& tcp_plan,
                                     const plan::AgentBinary& agent, const IsolateRunOptions& o) {
  const PlannedRun* tmpl = nullptr;
  for (const PlannedRun& r : tcp_plan.runs) {
    if (ShapeOf(r) == Shape::kPair) {
      tmpl = &r;
      break;
    }
  }
  if (tmpl == nullptr) {
    std::string why = "fewer than two selected nodes share a storage or control network";
    if (!tcp_plan.left_out.empty()) why = tcp_plan.left_out.front().detail;
    return Error{fmt::format("--isolate runs {} pairs, and there is none to run: {}", "tcp.bandwidth", why)};
  }
  IsolationResult out;
  out.seed = o.seed;
  out.relative = o.relative;
  out.check = tmpl->check;
  out.unit = "Gb/s";
  out.network = tmpl->params.count("network") ? tmpl->params.at("network") : "";
  if (const model::Network* net = c.FindNetwork(out.network); net != nullptr && net->rate_bytes_per_s > 0) {
    const double line = net->rate_bytes_per_s * 8 / 1e9;
    const double fraction = t.Get("tcp.bandwidth.min_fraction");
    out.floor = fraction * line;
    out.floor_text = fmt::format("{:.3g} Gb/s ({:.0f}% of {:.3g} Gb/s, networks.{}.rate; {})", *out.floor,
                                 fraction * 100, line, net->name, t.SourceOf("tcp.bandwidth.min_fraction"));
  }

  // The nodes on that network, in selection order.
  std::vector<std::size_t> on;  // indices into targets
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const model::Node* n = c.FindNode(targets[i].node);
    if (n == nullptr) continue;
    const model::Profile& p = c.ProfileOf(*n);
    if (std::any_of(p.nics.begin(), p.nics.end(), [&](const model::NicSpec& x) { return x.network == out.network; })) {
      on.push_back(i);
    }
  }

  // The agent on every node first; a node without one never enters a round.
  remote::FanoutOptions fo;
  fo.width = o.fanout;
  fo.cancel = o.cancel;
  std::vector<remote::Target> selected;
  for (std::size_t i : on) selected.push_back(targets[i]);
  remote::Fleet fleet(connector, selected, fo);
  std::vector<AgentOnNode> agents(selected.size());
  std::vector<Verdict> outside;
  std::mutex mu;
  // A node that never enters a round: its own verdict, never good.
  auto Outside = [&](const std::string& node, std::string_view code, const std::string& why, std::string next) {
    Verdict v;
    v.check = "isolate." + out.check;
    v.node = node;
    v.entity = "node";
    Mark(v, code);
    v.detail = why + "; not in any round";
    v.next_step = std::move(next);
    return v;
  };
  fleet.Each([&](std::size_t i, remote::Session& s) {
    Result<AgentOnNode> a = EnsureAgent(s, agent);
    if (a.ok()) {
      agents[i] = *a;
      return true;
    }
    std::lock_guard lock(mu);
    outside.push_back(Outside(selected[i].node, "agent.missing", a.error().message,
                              "gpuforge apply INVENTORY --only agent --nodes " + selected[i].node));
    return false;
  });
  std::vector<std::size_t> in;  // indices into selected
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (fleet.lost(i)) {
      outside.push_back(Outside(selected[i].node, "node.unreachable", fleet.lost(i)->message,
                                "gpuforge run INVENTORY --nodes " + selected[i].node + " -- true"));
    } else if (!agents[i].empty()) {
      in.push_back(i);
      out.nodes.push_back(selected[i].node);
    }
  }

  isolate::Options io;
  io.seed = o.seed;
  io.measures = 1;
  io.relative = o.relative;
  io.retries = o.retries;
  if (out.floor) io.floors = {*out.floor};
  isolate::Isolator iso(out.nodes.size(), io);
  while (std::optional<std::vector<isolate::PairRun>> wave = iso.Next()) {
    std::vector<isolate::Figures> figures(wave->size());
    if (Interrupted(o.cancel)) {
      for (isolate::Figures& f : figures) {
        f.values.assign(1, std::nullopt);
        f.why = "interrupted";
      }
      iso.Record(figures);
      continue;
    }
    std::vector<std::future<isolate::Figures>> running;
    for (const isolate::PairRun& p : *wave) {
      const std::size_t a = in[static_cast<std::size_t>(p.a)], b = in[static_cast<std::size_t>(p.b)];
      running.push_back(std::async(std::launch::async, [&, a, b, p] {
        return RunOne(connector, selected[a], selected[b], agents[a], agents[b], c, t, *tmpl, p.a, p.b, o);
      }));
    }
    for (std::size_t k = 0; k < running.size(); ++k) figures[k] = running[k].get();
    iso.Record(figures);
  }

  // What validate pushed goes when the run ends, as RunPlan does.
  RemovePushedAgents(fleet, agents);
  fleet.Close();

  out.runs = iso.Runs();
  out.node_verdicts = iso.Verdicts();
  if (!iso.Medians().empty()) out.median = iso.Medians().front();
  out.notes = iso.Notes();
  if (Interrupted(o.cancel)) out.notes.push_back("interrupted: the runs after Ctrl-C did not run");
  out.rounds = iso.Rounds();
  out.waves = iso.Waves();
  std::vector<Verdict> judged;
  for (std::size_t i = 0; i < out.nodes.size(); ++i) judged.push_back(IsolationVerdict(out, i));
  judged.insert(judged.end(), outside.begin(), outside.end());
  std::stable_sort(judged.begin(), judged.end(), [](const Verdict& a, const Verdict& b) { return Rank(a) < Rank(b); });
  out.verdicts = std::move(judged);
  return out;
}

}  // namespace gpuforge::validate
