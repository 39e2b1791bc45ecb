#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/base/quantity.h"

namespace gpuforge::estimate::internal {

namespace {

using quantity::FormatBandwidthBits;
using quantity::FormatBandwidthBytes;
using quantity::FormatDuration;
using quantity::FormatSize;

// Why string_views and a conversion: these ids are used in several branches, and a global
// std::string would need a static constructor.
struct Id {
  std::string_view key;
  std::string_view label;
  std::string_view unit;
  operator FigureId() const {  // NOLINT: implicit by design, ids are used as FigureIds
    return {std::string(key), std::string(label), std::string(unit)};
  }
};

constexpr Id kGradient{"allreduce.gradient_bytes", "Gradient bytes per all-reduce", "bytes"};
constexpr Id kNaiveInter{"allreduce.naive_inter_s",
                         "Inter-node all-reduce as the guide computes it (size / one NIC)", "s"};
constexpr Id kRingInter{"allreduce.ring_inter_s", "Inter-node ring all-reduce", "s"};
constexpr Id kNaiveIntra{"allreduce.naive_intra_s",
                         "Intra-node all-reduce as the guide computes it (size / NVLink)", "s"};
constexpr Id kRingIntra{"allreduce.ring_intra_s", "Intra-node NVLink ring all-reduce", "s"};

// The distinct profiles of the compute nodes, in first-seen order.
std::vector<const model::Profile*> ComputeProfiles(const model::Cluster& c) {
  std::vector<const model::Profile*> out;
  for (const model::Node* n : c.ComputeNodes()) {
    const model::Profile* p = &c.ProfileOf(*n);
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// One profile's NICs on the compute network.
struct NodeNics {
  const model::Profile* profile = nullptr;
  std::vector<double> rates;  // bytes/s, one per NIC
  double slowest = 0;
  std::string slowest_nic;  // its name, for the naive formula
  double total = 0;
};

// "8 x 400 Gb/s" when the NICs are alike, else "400 Gb/s + 200 Gb/s".
std::string DescribeRates(const std::vector<double>& rates) {
  bool alike = std::all_of(rates.begin(), rates.end(), [&](double r) { return r == rates[0]; });
  if (alike) return fmt::format("{} x {}", rates.size(), FormatBandwidthBits(rates[0]));
  std::vector<std::string> parts;
  for (double r : rates) parts.push_back(FormatBandwidthBits(r));
  return fmt::format("{}", fmt::join(parts, " + "));
}

void InterNode(const model::Cluster& c, double bytes, Section& s) {
  const std::size_t n = c.ComputeNodes().size();
  if (n == 0) {
    s.figures.push_back(Unknown(kNaiveInter, "nodes (role: compute)"));
    s.figures.push_back(Unknown(kRingInter, "nodes (role: compute)"));
    return;
  }
  if (n == 1) {
    const std::string why = "one compute node: gradients never cross the network";
    s.figures.push_back(NotApplicable(kNaiveInter, why));
    s.figures.push_back(NotApplicable(kRingInter, why));
    return;
  }
  const model::Network* net = c.ComputeNetwork();
  if (net == nullptr) {
    const std::string missing = "networks.<name>.role: compute";
    s.figures.push_back(Unknown(kNaiveInter, missing));
    s.figures.push_back(Unknown(kRingInter, missing));
    return;
  }

  std::string missing;
  std::vector<NodeNics> nodes;
  for (const model::Profile* p : ComputeProfiles(c)) {
    NodeNics nn;
    nn.profile = p;
    bool on_network = false;
    for (const model::NicSpec& nic : p->nics) {
      if (nic.network != net->name) continue;
      on_network = true;
      // A NIC without its own rate runs at its network's port rate.
      double rate = Usable(nic.rate_bytes_per_s) ? nic.rate_bytes_per_s : net->rate_bytes_per_s;
      if (!Usable(rate)) {
        missing = JoinMissing({missing, fmt::format("profiles.{}.nics[{}].rate or "
                                                    "networks.{}.rate",
                                                    p->name, nic.name, net->name)});
        continue;
      }
      if (nn.rates.empty() || rate < nn.slowest) {
        nn.slowest = rate;
        nn.slowest_nic = nic.name;
      }
      nn.rates.push_back(rate);
      nn.total += rate;
    }
    if (!on_network) {
      missing = JoinMissing(
          {missing, fmt::format("profiles.{}.nics[].network: {}", p->name, net->name)});
    }
    nodes.push_back(std::move(nn));
  }
  if (!missing.empty()) {
    s.figures.push_back(Unknown(kNaiveInter, missing));
    s.figures.push_back(Unknown(kRingInter, missing));
    return;
  }

  // Why the slowest: a collective moves at the pace of its slowest member.
  const NodeNics* slow_nic = &nodes[0];
  const NodeNics* slow_node = &nodes[0];
  for (const NodeNics& nn : nodes) {
    if (nn.slowest < slow_nic->slowest) slow_nic = &nn;
    if (nn.total < slow_node->total) slow_node = &nn;
  }

  double naive = bytes / slow_nic->slowest;
  Figure f = Known(kNaiveInter, naive,
                   fmt::format("{} / {} (one {} NIC, {} on {}) = {}", FormatSize(bytes),
                               FormatBandwidthBytes(slow_nic->slowest),
                               FormatBandwidthBits(slow_nic->slowest), slow_nic->slowest_nic,
                               slow_nic->profile->name, FormatDuration(naive)));
  f.note = fmt::format(
      "as {} ('Networking: The Hidden Bottleneck') computes it: the whole gradient through one "
      "link, no ring factor, one NIC per node; allreduce.ring_inter_s is the closer estimate",
      guide::k000);
  if (slow_nic->slowest == 100e9 / 8) {
    f.note +=
        "; the guide takes 100GbE as 10 GB/s and gets 14 s for 140 GB, while 100 Gb/s is 12.5 "
        "GB/s (11.2 s)";
  }
  s.figures.push_back(std::move(f));

  const double factor = 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
  double ring = factor * bytes / slow_node->total;
  Figure r = Known(kRingInter, ring,
                   fmt::format("2 x ({}-1)/{} x {} / {} ({} per node, {}) = {}", n, n,
                               FormatSize(bytes), FormatBandwidthBytes(slow_node->total),
                               DescribeRates(slow_node->rates), slow_node->profile->name,
                               FormatDuration(ring)));
  r.note =
      "ring over the compute nodes with every compute NIC of a node busy at once (one ring per "
      "rail); 2(n-1)/n is the bus-bandwidth factor nccl-tests uses; line rate, no protocol "
      "overhead, no overlap with compute";
  s.figures.push_back(std::move(r));
}

void IntraNode(const model::Cluster& c, double bytes, Section& s) {
  std::vector<const model::Profile*> profiles = ComputeProfiles(c);
  if (profiles.empty()) {
    s.figures.push_back(Unknown(kNaiveIntra, "nodes (role: compute)"));
    s.figures.push_back(Unknown(kRingIntra, "nodes (role: compute)"));
    return;
  }
  // The slowest profile sets the pace, as across nodes.
  struct Pick {
    const model::Profile* profile;
    int gpus;
    double nvlink;
    std::string model;
    double ring;
  };
  std::optional<Pick> worst;
  std::string missing;
  for (const model::Profile* p : profiles) {
    int n = p->gpu_count();
    if (n <= 1) continue;
    double nvlink = 0;
    std::string model;
    for (const model::GpuSpec& g : p->gpus) {
      if (g.count <= 0) continue;
      if (model.empty() || g.nvlink_bytes_per_s < nvlink) {
        nvlink = g.nvlink_bytes_per_s;
        model = g.model;
      }
    }
    if (!Usable(nvlink)) {
      missing = JoinMissing({missing, fmt::format("profiles.{}.gpus.nvlink_bandwidth", p->name)});
      continue;
    }
    double ring = 2.0 * (n - 1) / n * bytes / nvlink;
    if (!worst || ring > worst->ring) worst = Pick{p, n, nvlink, model, ring};
  }
  if (!missing.empty()) {
    Figure naive = Unknown(kNaiveIntra, missing);
    Figure ring = Unknown(kRingIntra, missing);
    naive.note = ring.note = "no NVLink figure: GPUs without NVLink reduce over PCIe, which is "
                             "not estimated";
    s.figures.push_back(std::move(naive));
    s.figures.push_back(std::move(ring));
    return;
  }
  if (!worst) {
    const std::string why = "one GPU per node: nothing to reduce inside a node";
    s.figures.push_back(NotApplicable(kNaiveIntra, why));
    s.figures.push_back(NotApplicable(kRingIntra, why));
    return;
  }

  double naive = bytes / worst->nvlink;
  Figure f = Known(kNaiveIntra, naive,
                   fmt::format("{} / {} ({} NVLink per GPU, {}) = {}", FormatSize(bytes),
                               FormatBandwidthBytes(worst->nvlink), worst->model,
                               worst->profile->name, FormatDuration(naive)));
  f.note = fmt::format(
      "{} ('Networking: The Hidden Bottleneck') says \"<1ms\" with NVSwitch inside an 8-GPU "
      "node; 140 GB over 900 GB/s is ~0.16 s this way and ~0.27 s as a ring of 8, not under 1 ms",
      guide::k000);
  s.figures.push_back(std::move(f));

  Figure r = Known(kRingIntra, worst->ring,
                   fmt::format("2 x ({}-1)/{} x {} / {} ({} NVLink per GPU, {}) = {}", worst->gpus,
                               worst->gpus, FormatSize(bytes), FormatBandwidthBytes(worst->nvlink),
                               worst->model, worst->profile->name, FormatDuration(worst->ring)));
  r.note = "ring of the node's GPUs over NVLink at its full per-GPU rate; NVSwitch in-network "
           "reduction (NVLS) can do better";
  s.figures.push_back(std::move(r));
}

}  // namespace

Section AllreduceSection(const model::Cluster& c, const Estimates& /*so_far*/) {
  Section s{"allreduce", "All-reduce of one step's gradients", {}};
  const model::Workload& w = c.workload;
  if (!w.present || !Usable(w.params)) {
    for (const Id& id : {kGradient, kNaiveInter, kRingInter, kNaiveIntra, kRingIntra}) {
      s.figures.push_back(Unknown(id, "workload.params"));
    }
    return s;
  }
  const double per_param = w.gradient_bytes_per_param();
  const double bytes = w.params * per_param;
  Figure g = Known(kGradient, bytes,
                   fmt::format("{} params x {} bytes ({}) = {}", quantity::FormatCount(w.params),
                               Num(per_param), w.precision, FormatSize(bytes)));
  g.note = "the full model's gradients, reduced by plain data parallelism as the guide does; "
           "tensor and pipeline parallelism shrink each rank's share";
  s.figures.push_back(std::move(g));
  InterNode(c, bytes, s);
  IntraNode(c, bytes, s);
  return s;
}

}  // namespace gpuforge::estimate::internal
