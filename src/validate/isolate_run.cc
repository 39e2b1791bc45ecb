#include "gpuforge/validate/isolate_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/validate/agent.h"
#include "gpuforge/validate/runner.h"
#include "gpuforge/validate/prepare.h"
#include "validate/blame.h"
#include "validate/planners.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

using internal::Mark;

bool Interrupted(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(); }

// A node's worst run as its verdict's detail says it: "lowest run 0.42 x the median", or for a
// latency "slowest run 2.31 x the median latency".
std::string WorstRun(const IsolationResult& r, std::optional<double> ratio) {
  if (!r.lower_is_better) return fmt::format("lowest run {} x the median", ratio ? fmt::format("{:.2f}", *ratio) : "-");
  const std::optional<double> shown = r.Shown(ratio);
  return shown ? fmt::format("slowest run {:.2f} x the median latency", *shown)
               : std::string(ratio ? "slowest run: no reply at all" : "slowest run: -");
}

// What one planned run gave: its figure, or why not and whom that blames.
struct RunOutcome {
  std::optional<double> value;
  std::string why;
  std::optional<std::string> blamed;  // node name
};

// `worst` is the figure of a run that carried nothing: 0 for a bandwidth, +inf for a latency.
RunOutcome Classify(const PlannedRun& run, const std::vector<Verdict>& got, double worst) {
  RunOutcome out;
  // A group run (NCCL pairs) is judged as one job, on the folded names of its members.
  const std::string whole = run.group.empty() ? run.node : hostlist::Fold(run.group);
  for (const Verdict& v : got) {
    if (v.check == run.check && v.code == "nccl.wrong_data") {
      // Data corrupted between the two: never a good pair, whatever its speed; a node that
      // corrupts with every partner is a bad node, one path that does is a bad link.
      out.value = worst;
      out.why = fmt::format("{}: nccl.wrong_data {}", v.node, v.detail);
      return out;
    }
  }
  for (const Verdict& v : got) {
    if (v.check == run.check && (v.node == run.node || v.node == whole) && v.measured) {
      out.value = *v.measured;
      return out;
    }
  }
  // Did not run because a node failed on its own (its agent, a port it could not bind or that
  // is down, its session): that node is blamed, and the rounds retest its partner.
  for (const Verdict& v : got) {
    if (v.state == State::kPass || v.state == State::kWarn || v.code == "pair.peer_failed" ||
        internal::WaitsOnOthers(v.code)) {
      continue;
    }
    out.why = fmt::format("{}: {} {}", v.node, v.code, v.detail);
    out.blamed = v.node == run.peer ? run.peer : run.node;
    return out;
  }
  // Both ends were up and only waited on each other (the connection never came, the socket
  // went quiet: blame.cc's waiting codes): the path between them carried nothing. That is a
  // figure, zero, and evidence for the rounds (a dead path is a bad link, a dead node's every
  // pair is low), not a node to blame.
  for (const Verdict& v : got) {
    if (v.state != State::kPass && internal::WaitsOnOthers(v.code)) {
      out.value = worst;
      out.why = fmt::format("nothing crossed between {} and {}: {}: {} {}", run.node, run.peer, v.node, v.code, v.detail);
      return out;
    }
  }
  out.why = fmt::format("{} and {}: the run gave no figure", run.node, run.peer);
  return out;
}

// One pair of a wave: its runs in turn (one for TCP, one per rail for RDMA), as Figures. With
// rails, measure 0 is their sum (bandwidth) or the slowest of them (latency).
isolate::Figures RunOne(const IsolationMeasure& m, const model::Cluster& c, const PairRunner& runner,
                        const std::vector<std::string>& nodes, int ia, int ib, const IsolateRunOptions& o) {
  isolate::Figures f;
  f.values.assign(m.names.size(), std::nullopt);
  const model::Node* a = c.FindNode(nodes[static_cast<std::size_t>(ia)]);
  const model::Node* b = c.FindNode(nodes[static_cast<std::size_t>(ib)]);
  const std::vector<std::pair<int, PlannedRun>> runs = m.runs(*a, *b);
  const bool rails = m.names.size() > 1;
  int carried = 0;
  std::optional<std::string> blamed;
  std::vector<std::string> whys;
  const double worst = m.lower_is_better ? std::numeric_limits<double>::infinity() : 0.0;
  double whole = 0;
  for (const auto& [measure, run] : runs) {
    if (Interrupted(o.cancel)) {
      whys.push_back("interrupted");
      break;
    }
    RunOutcome r = Classify(run, runner(run), worst);
    const std::string label = rails ? m.names[static_cast<std::size_t>(measure)] + ": " : "";
    if (!r.why.empty()) whys.push_back(label + r.why);
    if (r.value) {
      ++carried;
      f.values[static_cast<std::size_t>(measure)] = *r.value;
      whole = m.lower_is_better ? std::max(whole, *r.value) : whole + *r.value;
    } else if (r.blamed && !blamed) {
      blamed = r.blamed;
    }
    if (r.blamed && rails) {
      // A rail that failed on one node's side (its port down, its device missing) carried
      // nothing: zero on that rail (a latency without end), so the rounds find it low with
      // every partner; never the best figure of the round.
      f.values[static_cast<std::size_t>(measure)] = worst;
      if (m.lower_is_better) whole = worst;
    }
  }
  for (const std::string& w : whys) f.why += (f.why.empty() ? "" : "; ") + w;
  if (carried == 0) {
    // Nothing crossed on any run: the pair did not run; the node that failed on its own is blamed.
    f.values.assign(m.names.size(), std::nullopt);
    if (blamed) f.blamed = *blamed == a->name ? ia : ib;
    if (f.why.empty()) f.why = fmt::format("{} and {}: the pair gave no figure", a->name, b->name);
    return f;
  }
  f.ran = true;
  if (rails) f.values[0] = whole;
  return f;
}

// Every NIC end of the inventory's links: "node:nic" -> "leaf3:17 (inv.yaml:97)", the first
// link that names it. One pass over the links, not one per NIC: a cluster of thousands of nodes
// has a hundred thousand links.
std::unordered_map<std::string, std::string> NicCables(const model::Cluster& c) {
  std::unordered_map<std::string, std::string> out;
  for (const model::Link& l : c.links) {
    for (const auto& [self, other] : {std::pair{&l.a, &l.b}, std::pair{&l.b, &l.a}}) {
      if (self->kind != model::Endpoint::Kind::kNic) continue;
      const std::string key = self->device + ":" + self->nic;
      if (out.count(key) > 0) continue;
      // A link's position leaves the file out (load_fabric.cc): it is the inventory's own.
      SourcePos at = l.where;
      if (at.file.empty()) at.file = c.source_file;
      out.emplace(key, at.line > 0 ? fmt::format("{} ({})", other->ToString(), at.ToString()) : other->ToString());
    }
  }
  return out;
}

// Bad links are paths between two nodes; several of them with an end on one switch that not
// every node hangs off point at something they share there (an uplink, the switch itself), which
// no node-to-node verdict can name: bench/isolate's path-aware run turns one bad uplink into a
// few `bad link` pairs, each with an end on its leaf. A note per such switch (at most 3),
// from the inventory's links.
std::vector<std::string> SharedSwitchNotes(const model::Cluster& c, const IsolationResult& r) {
  std::set<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i < r.node_verdicts.size(); ++i) {
    const isolate::NodeVerdict& nv = r.node_verdicts[i];
    if ((nv.verdict != isolate::Verdict::kBadLink && nv.verdict != isolate::Verdict::kLinkOrPartner) || !nv.partner) continue;
    pairs.insert(std::minmax(r.nodes[i], r.nodes[*nv.partner]));
  }
  if (pairs.size() < 2) return {};
  const std::set<std::string> in(r.nodes.begin(), r.nodes.end());
  std::map<std::string, std::set<std::string>> on;  // switch -> the isolation's nodes cabled to it
  for (const model::Link& l : c.links) {
    for (const auto& [self, other] : {std::pair{&l.a, &l.b}, std::pair{&l.b, &l.a}}) {
      if (self->kind == model::Endpoint::Kind::kNic && other->kind == model::Endpoint::Kind::kSwitchPort &&
          in.count(self->device) > 0) {
        on[other->device].insert(self->device);
      }
    }
  }
  std::vector<std::pair<std::size_t, std::string>> shared;  // (pairs with an end there, switch)
  for (const auto& [sw, nodes] : on) {
    if (nodes.size() >= in.size()) continue;  // every node hangs off it: it tells nothing apart
    std::size_t n = 0;
    for (const auto& [a, b] : pairs) n += nodes.count(a) > 0 || nodes.count(b) > 0 ? 1 : 0;
    if (n >= 2) shared.emplace_back(n, sw);
  }
  std::stable_sort(shared.begin(), shared.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<std::string> out;
  for (std::size_t k = 0; k < shared.size() && k < 3; ++k) {
    const auto& [n, sw] = shared[k];
    std::vector<std::string> ends;
    for (const auto& [a, b] : pairs) {
      if (on[sw].count(a) > 0) ends.push_back(a);
      if (on[sw].count(b) > 0) ends.push_back(b);
    }
    out.push_back(fmt::format("{} of the {} suspect links have an end on {} ({}), which {} of the {} nodes hang off: "
                              "a fault they share there (an uplink, the switch) is likelier than {} bad paths; "
                              "check {}'s ports and uplinks and run gpuforge cabling",
                              n, pairs.size(), sw, hostlist::Fold(ends), on[sw].size(), in.size(), n, sw));
  }
  return out;
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

// NCCL pairs: a 2-node all-reduce of nccl.multinode (one agent per node, the unique id through
// the exchange) between the members of validate's group run. Its figure is the bus bandwidth at
// the largest size (GB/s); the floor is nccl.allreduce.min_fraction x what the slowest member's
// compute NICs carry at once, as JudgeNcclGroup takes the theoretical figure across nodes.
Result<IsolationMeasure> NcclPairs(const model::Cluster& c, const Thresholds& t, const PlannedRun& group,
                                   std::span<const std::string> probe_params) {
  IsolationMeasure m;
  m.check = group.check;
  m.unit = "GB/s";
  m.names = {"the pair"};
  m.floors = {0};
  m.nodes = group.group;
  if (const model::Network* net = c.ComputeNetwork(); net != nullptr) m.network = net->name;
  const double slowest = internal::SlowestComputeGBs(c, m.nodes);
  if (slowest > 0) {
    const double fraction = t.Get("nccl.allreduce.min_fraction");
    m.floors[0] = fraction * slowest;
    m.floor_text = fmt::format("nccl.allreduce.min_fraction {:.0f}% of {:.4g} GB/s, the compute NICs' line rate of "
                               "the slowest node; {}",
                               fraction * 100, slowest, t.SourceOf("nccl.allreduce.min_fraction"));
  } else {
    m.floor_text = "none: a node's compute NICs have no known line rate (the relative rule judges alone)";
  }
  // The --param words once, on the template every pair copies (PlanRun checked them already).
  // The sizes are left out first, so that what the words set shows: #32 asks for 1-8 GiB, big
  // enough to fill the rails, without the small sizes the group check sweeps; a max_bytes given
  // alone is the one size run, since it may be below the 1 GiB start ("max_bytes is smaller
  // than min_bytes" on every node otherwise).
  ValidatePlan one;
  one.runs.push_back(group);
  PlannedRun& tmpl = one.runs.front();
  tmpl.params.erase("min_bytes");
  tmpl.params.erase("max_bytes");
  tmpl.params["nodes"] = "2";
  (void)ApplyParams(one, probe_params);
  if (tmpl.params.count("max_bytes") == 0) {
    tmpl.params["max_bytes"] = "8GiB";
    tmpl.params.emplace("min_bytes", "1GiB");
  } else {
    tmpl.params.emplace("min_bytes", tmpl.params.at("max_bytes"));
  }
  m.runs = [pair = std::move(tmpl)](const model::Node& a, const model::Node& b) {
    PlannedRun run = pair;
    run.node = a.name;
    run.peer = b.name;  // whom a failure that is not a's blames (Classify)
    run.group = {a.name, b.name};
    run.entity = "pair with " + b.name;
    return std::vector<std::pair<int, PlannedRun>>{{0, std::move(run)}};
  };
  return m;
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
  const std::size_t m = static_cast<std::size_t>(nv.measure);
  const std::optional<double> median = m < r.medians.size() ? r.medians[m] : r.median;
  const double floor = m < r.floors.size() ? r.floors[m] : r.floor.value_or(0);
  const std::string on = m < r.measure_names.size() && r.measure_names.size() > 1 ? " on " + r.measure_names[m] : "";
  // Latency turns both rules over: at most median / relative, at most the ceiling.
  const char* side = r.words().side;
  const double times = r.RelativeShown();
  if (median) {
    v.threshold = fmt::format("{} {:.2f} x the round-1 median {:.3g} {}{}", side, times, *median, r.unit, on);
    if (floor > 0) v.threshold += fmt::format(", and {} {:.3g} {} ({})", side, floor, r.unit, r.floor_text);
  } else if (floor > 0) {
    v.threshold = fmt::format("{} {:.3g} {}{} ({})", side, floor, r.unit, on, r.floor_text);
  }
  const std::string partner = nv.partner ? r.nodes[*nv.partner] : "";
  const std::string ratio = WorstRun(r, nv.worst_ratio);
  switch (nv.verdict) {
    case isolate::Verdict::kGood:
      v.state = State::kPass;
      // With whom: a good node's lowest run is often the one with a bad partner.
      v.detail = nv.worst_ratio ? "its " + ratio : nv.why;
      if (nv.worst_ratio && nv.worst_run) {
        const isolate::PairRun& w = r.runs[*nv.worst_run].run;
        v.detail += fmt::format(" (with {})", r.nodes[static_cast<std::size_t>(w.a == static_cast<int>(i) ? w.b : w.a)]);
      }
      break;
    case isolate::Verdict::kBadNode:
      Mark(v, "isolate.bad_node");
      v.detail = fmt::format("{} ({})", nv.why, ratio);
      break;
    case isolate::Verdict::kBadRail:
      Mark(v, "isolate.bad_rail");
      v.entity = fmt::format("rail {}", nv.measure - 1);
      v.detail = fmt::format("{} ({})", nv.why, ratio);
      if (i < r.rail_nics.size() && static_cast<std::size_t>(nv.measure - 1) < r.rail_nics[i].size()) {
        // The join with the design's cabling: which HCA, and the switch port its cable goes to.
        const std::string& nic = r.rail_nics[i][static_cast<std::size_t>(nv.measure - 1)];
        v.entity += " (" + nic + ")";
        const auto cable = r.cables.find(v.node + ":" + nic);
        if (cable != r.cables.end()) v.detail += fmt::format("; its cable: {}:{} to {}", v.node, nic, cable->second);
      }
      break;
    case isolate::Verdict::kBadLink:
      Mark(v, "isolate.bad_link");
      v.entity = "link to " + partner;
      v.detail = fmt::format("{} ({})", nv.why, ratio);
      break;
    case isolate::Verdict::kLinkOrPartner:
      Mark(v, "isolate.link_or_partner");
      v.entity = "link to " + partner;
      v.detail = fmt::format("{} ({})", nv.why, ratio);
      break;
    case isolate::Verdict::kFlaky:
      Mark(v, "isolate.flaky");
      v.detail = fmt::format("{} ({})", nv.why, ratio);
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

Result<IsolationMeasure> PlanIsolationMeasure(const model::Cluster& c, const Thresholds& t, const ValidatePlan& plan,
                                              std::span<const std::string> selected,
                                              std::span<const std::string> probe_params) {
  const PlannedRun* tmpl = nullptr;
  for (const PlannedRun& r : plan.runs) {
    if ((ShapeOf(r) == Shape::kPair &&
         (r.check == "tcp.bandwidth" || r.check == "rdma.write_bw" || r.check == "rdma.write_lat")) ||
        (ShapeOf(r) == Shape::kGroup && r.check == "nccl.multinode")) {
      tmpl = &r;
      break;
    }
  }
  if (tmpl == nullptr) {
    std::string check = "tcp.bandwidth";
    std::string why = "fewer than two selected nodes share a storage or control network";
    for (const Verdict& v : plan.left_out) {
      if (v.check == "rdma.write_bw" || v.check == "rdma.write_lat" || v.check == "tcp.bandwidth" ||
          v.check == "nccl.multinode") {
        check = v.check;
        why = v.detail;
        break;
      }
    }
    return Error{fmt::format("--isolate runs {} pairs, and there is none to run: {}", check, why)};
  }
  IsolationMeasure m;
  m.check = tmpl->check;
  if (m.check == "nccl.multinode") return NcclPairs(c, t, *tmpl, probe_params);
  if (m.check == "tcp.bandwidth") {
    m.network = tmpl->params.count("network") ? tmpl->params.at("network") : "";
    m.names = {"the pair"};
    m.floors = {0};
    if (const model::Network* net = c.FindNetwork(m.network); net != nullptr && net->rate_bytes_per_s > 0) {
      const double line = net->rate_bytes_per_s * 8 / 1e9;
      const double fraction = t.Get("tcp.bandwidth.min_fraction");
      m.floors[0] = fraction * line;
      m.floor_text = fmt::format("{:.0f}% of {:.3g} Gb/s, networks.{}.rate; {}", fraction * 100, line, net->name,
                                 t.SourceOf("tcp.bandwidth.min_fraction"));
    }
    for (const std::string& name : selected) {
      const model::Node* n = c.FindNode(name);
      if (n == nullptr) continue;
      const model::Profile& p = c.ProfileOf(*n);
      if (std::any_of(p.nics.begin(), p.nics.end(), [&](const model::NicSpec& x) { return x.network == m.network; })) {
        m.nodes.push_back(name);
      }
    }
    const PlannedRun tcp = *tmpl;
    m.runs = [tcp](const model::Node& a, const model::Node& b) {
      PlannedRun run = tcp;
      run.node = a.name;
      run.peer = b.name;
      run.peer_address = b.address.empty() ? b.name : b.address;
      run.params["peer"] = run.peer_address;
      run.entity = fmt::format("peer {} ({})", b.name, run.params.count("network") ? run.params.at("network") : "");
      return std::vector<std::pair<int, PlannedRun>>{{0, std::move(run)}};
    };
    return m;
  }

  // rdma.write_bw and rdma.write_lat: the nodes with compute HCAs; a measure per rail position,
  // named by the first such node's HCA there, with the lowest line rate any node has there.
  const bool latency = m.check == "rdma.write_lat";
  if (latency) {
    m.unit = "us";
    m.lower_is_better = true;
  }
  std::size_t rails = 0;
  std::vector<double> line;  // per rail position, Gb/s
  for (const std::string& name : selected) {
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) continue;
    const std::vector<const model::NicSpec*> nics = internal::ComputeRdmaNics(c, c.ProfileOf(*n));
    if (nics.empty()) continue;
    if (m.names.empty()) {
      m.names.push_back(latency ? "the slowest rail" : "the sum of rails");
      for (std::size_t k = 0; k < nics.size(); ++k) m.names.push_back(fmt::format("rail {} ({})", k, nics[k]->name));
      m.network = nics.front()->network;
    }
    rails = std::max(rails, nics.size());
    line.resize(rails, 0);
    for (std::size_t k = 0; k < nics.size(); ++k) {
      const model::Network* net = c.FindNetwork(nics[k]->network);
      const double rate = (nics[k]->rate_bytes_per_s > 0 ? nics[k]->rate_bytes_per_s
                           : net != nullptr          ? net->rate_bytes_per_s
                                                     : 0) * 8 / 1e9;
      if (rate > 0 && (line[k] == 0 || rate < line[k])) line[k] = rate;
    }
    m.nodes.push_back(name);
  }
  for (std::size_t k = m.names.size() - 1; k < rails; ++k) m.names.push_back(fmt::format("rail {}", k));
  if (latency) {
    // The ceiling validate's rdma.write_lat judges a rail by (JudgeRdma), for every rail and so
    // for the slowest one: it does not scale with the line rate.
    const double ceiling = t.Get("rdma.write_lat.max_us");
    m.floors.assign(rails + 1, ceiling);
    m.floor_text = fmt::format("a rail: rdma.write_lat.max_us {:.3g} us; {}", ceiling, t.SourceOf("rdma.write_lat.max_us"));
  } else {
    const double fraction = t.Get("rdma.write.min_fraction");
    m.floors.assign(rails + 1, 0);
    for (std::size_t k = 0; k < rails; ++k) m.floors[k + 1] = fraction * line[k];
    m.floor_text = fmt::format("a rail: {:.0f}% of its HCA's line rate; {}", fraction * 100,
                               t.SourceOf("rdma.write.min_fraction"));
  }
  const CheckInfo* info = CheckOf(*tmpl);
  const std::vector<std::string> params(probe_params.begin(), probe_params.end());
  m.runs = [&c, info, params](const model::Node& a, const model::Node& b) {
    ValidatePlan one;
    std::vector<int> positions;
    for (internal::RailRun& r : internal::RailRuns(c, *info, a, b)) {
      positions.push_back(r.position);
      one.runs.push_back(std::move(r.run));
    }
    // The --param words, as PlanRun applied them to validate's own runs (already checked there).
    (void)ApplyParams(one, params);
    std::vector<std::pair<int, PlannedRun>> out;
    for (std::size_t k = 0; k < one.runs.size(); ++k) out.emplace_back(positions[k] + 1, std::move(one.runs[k]));
    return out;
  };
  return m;
}

IsolationResult Isolate(const model::Cluster& c, const IsolationMeasure& m, std::vector<std::string> nodes,
                        const PairRunner& runner, const IsolateRunOptions& o, std::vector<Verdict> outside) {
  IsolationResult out;
  out.seed = o.seed;
  out.relative = o.relative;
  out.check = m.check;
  out.unit = m.unit;
  out.lower_is_better = m.lower_is_better;
  out.network = m.network;
  out.measure_names = m.names;
  out.floors = m.floors;
  out.floor_text = m.floor_text;
  if (!m.floors.empty() && m.floors[0] > 0) out.floor = m.floors[0];
  // One measure: the floor with where it comes from; per rail, each rail's floor is listed apart.
  if (m.names.size() == 1 && out.floor) out.floor_text = fmt::format("{:.3g} {} ({})", *out.floor, m.unit, m.floor_text);
  out.nodes = std::move(nodes);
  const std::unordered_map<std::string, std::string> cables =
      m.names.size() > 1 ? NicCables(c) : std::unordered_map<std::string, std::string>{};
  for (const std::string& name : out.nodes) {
    std::vector<std::string> nics;
    if (m.names.size() > 1) {
      for (const model::NicSpec* nic : internal::ComputeRdmaNics(c, c.ProfileOf(*c.FindNode(name)))) {
        nics.push_back(nic->name);
        const auto cable = cables.find(name + ":" + nic->name);
        if (cable != cables.end()) out.cables.insert(*cable);
      }
    }
    out.rail_nics.push_back(std::move(nics));
  }

  isolate::Options io;
  io.seed = o.seed;
  io.measures = static_cast<int>(m.names.size());
  io.relative = o.relative;
  io.retries = o.retries;
  io.floors = m.floors;
  io.lower_is_better = m.lower_is_better;
  isolate::Isolator iso(out.nodes.size(), io);
  while (std::optional<std::vector<isolate::PairRun>> wave = iso.Next()) {
    std::vector<isolate::Figures> figures(wave->size());
    if (Interrupted(o.cancel)) {
      for (isolate::Figures& f : figures) {
        f.values.assign(m.names.size(), std::nullopt);
        f.why = "interrupted";
      }
      iso.Record(figures);
      continue;
    }
    std::vector<std::future<isolate::Figures>> running;
    for (const isolate::PairRun& p : *wave) {
      running.push_back(std::async(std::launch::async, [&, p] { return RunOne(m, c, runner, out.nodes, p.a, p.b, o); }));
    }
    for (std::size_t k = 0; k < running.size(); ++k) figures[k] = running[k].get();
    iso.Record(figures);
  }

  out.runs = iso.Runs();
  out.node_verdicts = iso.Verdicts();
  out.medians = iso.Medians();
  if (!out.medians.empty()) out.median = out.medians.front();
  out.notes = iso.Notes();
  for (std::string& n : SharedSwitchNotes(c, out)) out.notes.push_back(std::move(n));
  if (Interrupted(o.cancel)) out.notes.push_back("interrupted: the runs after Ctrl-C did not run");
  out.rounds = iso.Rounds();
  out.waves = iso.Waves();
  std::vector<Verdict> judged;
  for (std::size_t i = 0; i < out.nodes.size(); ++i) judged.push_back(IsolationVerdict(out, i));
  for (Verdict& v : outside) v.check = "isolate." + out.check;
  judged.insert(judged.end(), outside.begin(), outside.end());
  std::stable_sort(judged.begin(), judged.end(), [](const Verdict& a, const Verdict& b) { return Rank(a) < Rank(b); });
  out.verdicts = std::move(judged);
  return out;
}

Result<IsolationResult> RunIsolation(remote::Connector& connector, std::span<const remote::Target> targets,
                                     const model::Cluster& c, const Thresholds& t, const ValidatePlan& plan,
                                     std::span<const std::string> probe_params, const plan::AgentBinary& agent,
                                     const IsolateRunOptions& o) {
  std::vector<std::string> names;
  for (const remote::Target& x : targets) names.push_back(x.node);
  Result<IsolationMeasure> m = PlanIsolationMeasure(c, t, plan, names, probe_params);
  if (!m.ok()) return m.error();

  std::vector<remote::Target> selected;
  for (const std::string& name : m->nodes) {
    for (const remote::Target& x : targets) {
      if (x.node == name) selected.push_back(x);
    }
  }

  // The agent on every node first; a node without one never enters a round.
  remote::FanoutOptions fo;
  fo.width = o.fanout;
  fo.cancel = o.cancel;
  remote::Fleet fleet(connector, selected, fo);
  std::vector<AgentOnNode> agents(selected.size());
  std::vector<Verdict> outside;
  std::mutex mu;
  // A node that never enters a round: its own verdict, never good.
  auto Outside = [&](const std::string& node, std::string_view code, const std::string& why, std::string next) {
    Verdict v;
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
  std::vector<std::string> in;
  std::map<std::string, std::size_t> index;  // node -> index into selected
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (fleet.lost(i)) {
      outside.push_back(Outside(selected[i].node, "node.unreachable", fleet.lost(i)->message,
                                "gpuforge run INVENTORY --nodes " + selected[i].node + " -- true"));
    } else if (!agents[i].empty()) {
      in.push_back(selected[i].node);
      index[selected[i].node] = i;
    }
  }

  // Each run on fresh sessions to both nodes, as validate runs a pair check (RunPair).
  const PairRunner runner = [&](const PlannedRun& run) -> std::vector<Verdict> {
    const std::size_t a = index.at(run.node), b = index.at(run.peer);
    RunOptions ro;
    ro.retries = 1;  // isolation's own rounds retry; a pair is run once per wave
    ro.timeout_s = o.timeout_s;
    ro.cancel = o.cancel;
    std::array<std::unique_ptr<remote::Session>, 2> s;
    for (const std::size_t k : {a, b}) {
      Result<std::unique_ptr<remote::Session>> got = connector.Connect(selected[k]);
      if (!got.ok()) {
        Verdict v;
        v.check = run.check;
        v.node = selected[k].node;
        v.entity = "node";
        Mark(v, "node.unreachable");
        v.detail = got.error().message;
        return {v};
      }
      s[k == a ? 0 : 1] = std::move(*got);
    }
    if (ShapeOf(run) == Shape::kGroup) {
      // NCCL pairs: both agents at once, node_index 0 and 1, as validate runs a group check.
      const std::array<remote::Session*, 2> sessions = {s[0].get(), s[1].get()};
      const std::array<AgentOnNode, 2> pair_agents = {agents[a], agents[b]};
      return RunGroupCheck(sessions, pair_agents, c, t, run, ro);
    }
    return RunPair(*s[0], agents[a], *s[1], agents[b], c, t, run, ro);
  };
  IsolationResult out = Isolate(c, *m, std::move(in), runner, o, std::move(outside));

  // What validate pushed goes when the run ends, as RunPlan does.
  RemovePushedAgents(fleet, agents);
  fleet.Close();
  return out;
}

}  // namespace gpuforge::validate
