// Judges of the checks that exercise the GPU fabric: the IB ports (ib.counters), NCCL
// all-reduce on a node and across nodes, and RDMA writes between nodes.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/facts/ib_link.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace internal {
namespace {

const probe::Measurement* FindEntity(const probe::ProbeResult& r, std::string_view entity, std::string_view metric) {
  for (const probe::Measurement& m : r.measurements) {
    if (m.entity == entity && m.metric == metric) return &m;
  }
  return nullptr;
}

std::string InfoOf(const probe::Measurement& m, const std::string& key) {
  auto it = m.info.find(key);
  return it == m.info.end() ? std::string() : it->second;
}

// A NIC's line rate in Gb/s (10^9 bits): its own, else its network's; 0 when neither says.
double LineGbits(const model::Cluster& c, const model::NicSpec& nic) {
  double rate = nic.rate_bytes_per_s;
  if (rate <= 0) {
    if (const model::Network* net = c.FindNetwork(nic.network)) rate = net->rate_bytes_per_s;
  }
  return rate * 8 / 1e9;
}

// Where LineGbits's rate comes from: the NIC's own rate in its profile, or its network's.
std::string LineSource(const model::Cluster& c, const std::string& node, const model::NicSpec& nic) {
  const model::Node* n = c.FindNode(node);
  const std::string profile = n != nullptr ? c.ProfileOf(*n).name : "?";
  if (nic.rate_bytes_per_s > 0) return fmt::format("inventory profiles.{}.nics[{}].rate", profile, nic.name);
  return fmt::format("inventory networks.{}.rate", nic.network);
}

const model::NicSpec* NicNamed(const model::Cluster& c, const std::string& node, const std::string& name) {
  const model::Node* n = c.FindNode(node);
  if (n == nullptr) return nullptr;
  for (const model::NicSpec* nic : ComputeRdmaNics(c, c.ProfileOf(*n))) {
    if (nic->name == name) return nic;
  }
  return nullptr;
}

std::vector<Verdict> JudgeIbPorts(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                  const probe::ProbeResult& r) {
  std::vector<Verdict> out;
  const model::Node* node = c.FindNode(run.node);
  if (node == nullptr) return {Missing(run, "rate")};
  const double max_downed = t.Get("ib.counters.max_link_downed");
  const double max_errors = t.Get("ib.counters.max_errors");
  for (const model::NicSpec* nic : ComputeRdmaNics(c, c.ProfileOf(*node))) {
    const std::string entity = fmt::format("{}:{}", nic->name, nic->port);
    Verdict v = Base(run, entity);
    const probe::Measurement* rate = FindEntity(r, entity, "rate");
    if (rate == nullptr) {
      Mark(v, "ib.port_missing");
      v.detail = fmt::format("the node has no port {} under /sys/class/infiniband", entity);
      v.next_step = "check that the HCA is seated and its driver (mlx5_core, ib_core) loaded; `ibstat`";
      out.push_back(std::move(v));
      continue;
    }
    const std::string state = InfoOf(*rate, "state");
    const std::string width = InfoOf(*rate, "width");
    const double want = facts::InventoryLineGbits(c, *nic);
    v.measured = rate->value;
    v.unit = "Gb/s";
    v.threshold = want > 0 ? fmt::format("ACTIVE, 4X, >= {} Gb/s ({})", Fixed(want), LineSource(c, run.node, *nic))
                           : "ACTIVE, 4X";
    const int lanes = std::atoi(width.c_str());
    // The rule `facts --check` applies to the same port (facts/ib_link.h): 2X by design passes.
    const facts::IbLinkVerdict link =
        facts::JudgeIbLink(lanes > 0 ? std::optional<int>(lanes) : std::nullopt, rate->value, want);
    const probe::Measurement* downed = FindEntity(r, entity, "link_downed");
    std::vector<std::string> errors;
    double error_total = 0;
    for (const char* counter : {"symbol_error", "link_error_recovery", "port_rcv_errors", "local_link_integrity_errors",
                                "excessive_buffer_overrun_errors", "port_xmit_discards"}) {
      if (const probe::Measurement* m = FindEntity(r, entity, counter); m != nullptr && m->value > 0) {
        errors.push_back(fmt::format("{} {:.0f}", counter, m->value));
        error_total += m->value;
      }
    }
    if (state != "ACTIVE") {
      Mark(v, "ib.port_down");
      v.detail = fmt::format("{} is {} ({}), not ACTIVE", entity, state.empty() ? "in no state" : state,
                             InfoOf(*rate, "phys_state"));
      v.next_step = "check the cable and the switch port; for Polling, the link partner; for INIT, the subnet manager";
    } else if (link == facts::IbLinkVerdict::kWidth) {
      Mark(v, "ib.link_width");
      v.detail = fmt::format("{} trained at {} instead of 4X", entity, width);
      v.next_step = "reseat or replace the cable or transceiver";
    } else if (link == facts::IbLinkVerdict::kRate) {
      Mark(v, "ib.link_rate");
      v.detail = fmt::format("{} runs at {} Gb/s, the inventory gives {} Gb/s", entity, Fixed(rate->value), Fixed(want));
      v.next_step = "check the cable's rating, the switch port speed and the HCA firmware";
    } else if (downed != nullptr && downed->value > max_downed) {
      Mark(v, "ib.link_flaps");
      v.measured = downed->value;
      v.unit = "link downs";
      v.threshold = fmt::format("<= {:.0f} ({})", max_downed, t.SourceOf("ib.counters.max_link_downed"));
      v.detail = fmt::format("{} went down {:.0f} times since its counters were last cleared", entity, downed->value);
      v.next_step = "a flapping link: replace the cable or transceiver; then clear the counters (perfquery -x -R)";
    } else if (error_total > max_errors) {
      Mark(v, "ib.port_errors");
      v.measured = error_total;
      v.unit = "errors";
      v.threshold = fmt::format("<= {:.0f} ({})", max_errors, t.SourceOf("ib.counters.max_errors"));
      v.detail = fmt::format("{}: {}", entity, fmt::join(errors, ", "));
      v.next_step = "watch whether they grow under load (rerun after nccl.allreduce); a growing count means a bad link";
    } else {
      v.state = State::kPass;
    }
    out.push_back(std::move(v));
  }
  if (out.empty()) return {Missing(run, "rate")};
  return out;
}

bool InventoryHasRdmaCompute(const model::Cluster& c) {
  const model::Network* net = c.ComputeNetwork();
  return net != nullptr && net->kind != model::NetKind::kEthernet;
}

}  // namespace

std::vector<Verdict> JudgeRdma(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                               const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  const bool bw = run.check == "rdma.write_bw";
  const probe::Measurement* m = Find(r, bw ? "write_bw" : "write_lat");
  if (m == nullptr) return {Missing(run, bw ? "write_bw" : "write_lat")};
  if (!bw) {
    const double limit = t.Get("rdma.write_lat.max_us");
    return {AtMost(run, run.entity, m->value, "us", limit,
                   fmt::format("{} us ({})", Fixed(limit), t.SourceOf("rdma.write_lat.max_us")),
                   "compare with a pair on the same leaf switch; check for congestion, PFC/ECN settings on RoCE, and "
                   "the HCAs' NUMA placement")};
  }
  const auto dev = run.params.find("device");
  const model::NicSpec* nic = dev == run.params.end() ? nullptr : NicNamed(c, run.node, dev->second);
  const double line = nic != nullptr ? LineGbits(c, *nic) : 0;
  if (line <= 0) return {NoLineRate(run, run.entity, m->value, "Gb/s", "the HCA", "the NIC or its network")};
  const double fraction = t.Get("rdma.write.min_fraction");
  return {AtLeast(run, run.entity, m->value, "Gb/s", fraction * line,
                  fmt::format("{} Gb/s ({:.0f}% of {} Gb/s, {}; {:.0f}%: {})", Fixed(fraction * line),
                              fraction * 100, Fixed(line), LineSource(c, run.node, *nic), fraction * 100,
                              t.SourceOf("rdma.write.min_fraction")),
                  "test each end against a known-good peer to tell a bad HCA from a bad link; check the port's rate "
                  "(ib.counters), the cable, PCIe width of the HCA (facts) and its NUMA placement")};
}

namespace {

// The NCCL all-reduce checks. `theoretical_gbs` > 0 for a multi-node run: the slowest node's
// compute NIC bandwidth.
std::vector<Verdict> JudgeNccl(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                               const probe::ProbeResult& r, const std::string& entity, double theoretical_gbs) {
  std::vector<Verdict> out;
  if (r.outcome == probe::Outcome::kError && r.code == "nccl.wrong_data") {
    // Wrong sums are the hardware's fault, not the tool's: a FAIL with what the probe saw.
    Verdict v = Base(run, entity);
    Mark(v, "nccl.wrong_data");
    if (const probe::Measurement* w = Find(r, "wrong_total")) {
      v.measured = w->value;
      v.unit = "wrong elements";
    }
    v.threshold = "0 (nccl-tests' #wrong)";
    v.detail = r.reason;
    v.next_step = "a GPU, NVLink or NIC corrupts data: read gpu.health (Xid, ECC, row remap), then bisect with "
                  "--param nccl.allreduce.gpus=N";
    return {v};
  }
  if (r.outcome != probe::Outcome::kOk) {
    Verdict v = NotOk(run, r);
    v.entity = entity;
    return {v};
  }
  const probe::Measurement* busbw = FindEntity(r, "allreduce", "busbw");
  if (busbw == nullptr) return {Missing(run, "busbw")};

  // The transport: NCCL on sockets where the inventory promises RDMA.
  if (InventoryHasRdmaCompute(c) && InfoOf(*busbw, "ib_no_device") == "1") {
    Verdict v = Base(run, entity);
    Mark(v, "nccl.no_ib");
    v.threshold = "NET/IB in use (the compute network is InfiniBand/RoCE)";
    v.detail = fmt::format("NCCL found no IB device and used network {}: \"{}\"", InfoOf(*busbw, "network"),
                           InfoOf(*busbw, "ib_no_device_line"));
    v.next_step = "check `ibstat` (ports ACTIVE), that rdma-core and the HCA driver are installed, NCCL_IB_HCA in "
                  "/etc/nccl.conf, and that the container sees /dev/infiniband";
    out.push_back(std::move(v));
  }

  if (run.params.count("preset") && run.params.at("preset") == "quick") {
    const probe::Measurement* q = FindEntity(r, "allreduce", "quick_op_ms");
    if (q == nullptr) return {Missing(run, "quick_op_ms")};
    const double limit = t.Get("nccl.quick.max_ms");
    out.push_back(AtMost(run, entity, q->value, "ms", limit,
                         fmt::format("{} ms per op ({})", Fixed(limit), t.SourceOf("nccl.quick.max_ms")),
                         "the guide blames the NCCL topology file: run `gpuforge render` again, or drop "
                         "NCCL_TOPO_FILE and compare"));
    return out;
  }

  const probe::Measurement* ranks = FindEntity(r, "allreduce", "ranks");
  const double fraction = t.Get("nccl.allreduce.min_fraction");
  const std::string size = InfoOf(*busbw, "size");
  const std::string at = size.empty() ? "" : fmt::format(" at {} B", size);
  if (ranks != nullptr && ranks->value <= 1) {
    Verdict v = Base(run, entity);
    Mark(v, "nccl.single_gpu");
    v.detail = "one rank: an all-reduce moves nothing between GPUs (busbw is 0 by nccl-tests' definition); data was "
               "still checked";
    out.push_back(std::move(v));
    return out;
  }
  if (theoretical_gbs > 0) {
    out.push_back(AtLeast(run, entity, busbw->value, "GB/s", fraction * theoretical_gbs,
                          fmt::format("{} GB/s{} ({:.0f}% of {} GB/s, the slowest node's compute NICs, rates from "
                                      "the inventory's nics[].rate or their networks' rate; {:.0f}%: {})",
                                      Fixed(fraction * theoretical_gbs), at, fraction * 100, Fixed(theoretical_gbs),
                                      fraction * 100, t.SourceOf("nccl.allreduce.min_fraction")),
                          "run nccl.allreduce on each node alone to find a slow node, rdma.write_bw for a slow rail, "
                          "and check NCCL's log for the transport (GDRDMA, rings, channels)"));
    return out;
  }
  if (theoretical_gbs < 0) {
    out.push_back(NoLineRate(run, entity, busbw->value, "GB/s", "a compute NIC", "the compute NICs or their network"));
    return out;
  }
  const model::Node* node = c.FindNode(run.node);
  const model::Profile* prof = node != nullptr ? &c.ProfileOf(*node) : nullptr;
  const std::string model = prof != nullptr ? GpuModel(*prof) : "";
  const int gpus = prof != nullptr ? prof->gpu_count() : 0;
  const std::optional<ModelFigure> figure = t.ForModel(model, "allreduce_busbw_gbs");
  if (!figure || gpus != 8) {
    Verdict v = Base(run, entity);
    Mark(v, "threshold.no_reference");
    v.measured = busbw->value;
    v.unit = "GB/s";
    v.detail = !figure ? fmt::format("no allreduce_busbw_gbs figure for {} in the GPU model data file",
                                     model.empty() ? "?" : model)
                       : fmt::format("the data file's figure is for 8 GPUs per node; this node has {}", gpus);
    v.next_step = fmt::format("add a figure measured on a known-good node of this kind to {}", DefaultModelTablePath());
    out.push_back(std::move(v));
    return out;
  }
  out.push_back(AtLeast(run, entity, busbw->value, "GB/s", fraction * figure->value,
                        fmt::format("{} GB/s{} ({:.0f}% of {} GB/s at 16 GiB; {})", Fixed(fraction * figure->value), at,
                                    fraction * 100, Fixed(figure->value), figure->source),
                        "compare GPUs with gpu.copy and gpu.health (NVLink down, throttling); check that "
                        "nvidia-fabricmanager runs and the NCCL topology file (nccl.quick)"));
  return out;
}

// The sweep's out-of-place busbw per message size (the rows nccl-tests prints), kept on the
// busbw verdicts for the acceptance report's plot.
void AttachBusbwCurve(const probe::ProbeResult& r, std::vector<Verdict>& verdicts) {
  std::vector<std::pair<double, double>> curve;
  for (const probe::Measurement& m : r.measurements) {
    if (m.metric != "busbw" || !m.entity.starts_with("out-of-place ")) continue;
    auto size = m.info.find("size");
    if (size == m.info.end()) continue;
    curve.emplace_back(std::strtod(size->second.c_str(), nullptr), m.value);
  }
  std::sort(curve.begin(), curve.end());
  for (Verdict& v : verdicts) {
    if (v.measured && v.unit == "GB/s") v.curve = curve;
  }
}

}  // namespace

std::vector<Verdict> JudgeIbCounters(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                     const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  return JudgeIbPorts(c, t, run, r);
}

std::vector<Verdict> JudgeNcclNode(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                   const probe::ProbeResult& r) {
  std::vector<Verdict> out = JudgeNccl(c, t, run, r, run.entity, 0);
  AttachBusbwCurve(r, out);
  return out;
}

std::vector<const model::NicSpec*> ComputeRdmaNics(const model::Cluster& c, const model::Profile& p) {
  std::vector<const model::NicSpec*> out;
  for (const model::NicSpec& nic : p.nics) {
    if (nic.kind == model::NetKind::kEthernet) continue;
    const model::Network* net = c.FindNetwork(nic.network);
    if (net != nullptr && net->role != model::NetRole::kCompute) continue;
    out.push_back(&nic);
  }
  return out;
}

// Theoretical bus bandwidth across nodes: the slowest node's compute NICs all busy at once
// (one ring per rail), as the estimate's allreduce.ring_inter_s takes it.
double SlowestComputeGBs(const model::Cluster& c, std::span<const std::string> nodes) {
  double slowest = -1;
  for (const std::string& name : nodes) {
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) continue;
    double total = 0;
    bool unknown = false;
    for (const model::NicSpec* nic : ComputeRdmaNics(c, c.ProfileOf(*n))) {
      const double g = LineGbits(c, *nic);
      if (g <= 0) unknown = true;
      total += g / 8;
    }
    if (unknown || total <= 0) return -1;
    slowest = slowest < 0 ? total : std::min(slowest, total);
  }
  return slowest;
}

std::vector<Verdict> JudgeNcclGroup(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                    std::span<const probe::ProbeResult* const> results) {
  std::vector<Verdict> out;
  const std::string entity = fmt::format("{} nodes together", run.group.size());
  const probe::ProbeResult* judged = nullptr;
  for (std::size_t i = 0; i < results.size() && i < run.group.size(); ++i) {
    const probe::ProbeResult* r = results[i];
    if (r == nullptr) continue;
    if (r->outcome == probe::Outcome::kOk || r->code == "nccl.wrong_data") {
      if (judged == nullptr) judged = r;
      continue;
    }
    // A member that could not take part: its own reason, on its own node.
    PlannedRun member = run;
    member.node = run.group[i];
    Verdict v = NotOk(member, *r);
    v.entity = "member of " + entity;
    out.push_back(std::move(v));
  }
  if (judged == nullptr) return out;
  PlannedRun whole = run;
  whole.node = hostlist::Fold(run.group);
  const double slowest = SlowestComputeGBs(c, run.group);
  std::vector<Verdict> v = JudgeNccl(c, t, whole, *judged, entity, slowest > 0 ? slowest : -1);
  AttachBusbwCurve(*judged, v);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace internal
}  // namespace gpuforge::validate
