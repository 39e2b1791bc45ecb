#include "gpuforge/validate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>

#include "gpuforge/model/gpu_catalog.h"
#include "validate/planners.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

using namespace internal;  // NOLINT: the verdict helpers and planners shared with judge_fabric.cc, plan_checks.cc

// The sum of a "code:n,code:n" list (probe/gpu/health.cc Codes); "none" is 0.
double XidTotal(const probe::Measurement* m, const char* key) {
  auto it = m->info.find(key);
  if (it == m->info.end()) return m->value;  // an agent that does not split them: all count
  double total = 0;
  std::string_view list = it->second;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (std::size_t colon = item.find(':'); colon != std::string_view::npos) {
      int n = 0;
      std::from_chars(item.data() + colon + 1, item.data() + item.size(), n);
      total += n;
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return total;
}

struct ExpectedNvLinks {
  double links;
  std::string why;
};

// NVLinks that must be up on a GPU of this profile: none when the profile states no NVLink
// (nvlink_bandwidth 0 or a PCIe card) or has one GPU and no NVSwitch (no peer to train
// with); otherwise every link NVML lists.
ExpectedNvLinks ExpectNvLinks(const model::Profile* prof, double listed) {
  if (prof == nullptr || prof->gpus.empty()) return {listed, "every link NVML lists"};
  const model::GpuSpec& g = prof->gpus.front();
  if (g.nvlink_bytes_per_s <= 0 || g.form_factor == model::FormFactor::kPcie) {
    return {0, fmt::format("profiles.{} has no NVLink", prof->name)};
  }
  if (prof->gpu_count() == 1 && !g.nvswitch) {
    return {0, fmt::format("profiles.{} has one GPU and no NVSwitch: no NVLink peer", prof->name)};
  }
  return {listed, "every link NVML lists"};
}

// One verdict per GPU entity the probe reported: the first problem found, or PASS.
std::vector<Verdict> JudgeGpuHealth(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                    const probe::ProbeResult& r, const model::Profile* prof) {
  (void)c;
  std::vector<Verdict> out;
  // Node: the GPU count against the inventory, Xid events.
  if (const probe::Measurement* m = Find(r, "gpu_count", "node"); m != nullptr && prof != nullptr) {
    Verdict v = Base(run, "node");
    v.measured = m->value;
    v.unit = "GPUs";
    v.threshold = fmt::format("== {} (inventory profiles.{}.gpus.count)", prof->gpu_count(), prof->name);
    v.state = State::kPass;
    if (static_cast<int>(m->value) != prof->gpu_count()) {
      Mark(v, "gpu.count");
      v.detail = fmt::format("NVML sees {} GPUs, the profile has {}", m->value, prof->gpu_count());
      v.next_step = "nvidia-smi -L; look for a GPU fallen off the bus (Xid 79) and reseat or replace it";
    }
    out.push_back(std::move(v));
  }
  // The node's count holds every Xid of the kernel log; only hardware ones fail it (#15 item
  // 17): application Xids (13, 31, 43, 45, unlisted) warn per GPU below.
  const probe::Measurement* node_xid = Find(r, "xid_count", "node");
  const double node_hardware = node_xid != nullptr ? XidTotal(node_xid, "hardware_codes") : 0;
  if (node_hardware > 0) {
    const probe::Measurement* m = node_xid;
    Verdict v = Base(run, "node");
    Mark(v, "gpu.xid");
    v.measured = node_hardware;
    v.unit = "events";
    v.threshold = "== 0 hardware Xids";
    auto codes = m->info.find("hardware_codes");
    v.detail = fmt::format("{} hardware Xid event(s) in the kernel log{}", node_hardware,
                           codes != m->info.end() ? " (codes " + codes->second + ")" : std::string());
    v.next_step = "look each Xid up in NVIDIA's Xid catalogue; 48, 64, 74, 79, 94, 95 mean the GPU or its link";
    out.push_back(std::move(v));
  }
  std::vector<std::string> gpus;
  for (const probe::Measurement& m : r.measurements) {
    if (m.entity != "node" && std::find(gpus.begin(), gpus.end(), m.entity) == gpus.end()) gpus.push_back(m.entity);
  }
  for (const std::string& gpu : gpus) {
    auto value = [&](std::string_view metric) -> std::optional<double> {
      const probe::Measurement* m = Find(r, metric, gpu);
      return m != nullptr ? std::optional<double>(m->value) : std::nullopt;
    };
    std::vector<Verdict> problems;
    auto problem = [&](std::string_view code, double measured, std::string unit, std::string threshold,
                       std::string detail, std::string next) {
      Verdict v = Base(run, gpu);
      Mark(v, code);
      v.measured = measured;
      v.unit = std::move(unit);
      v.threshold = std::move(threshold);
      v.detail = std::move(detail);
      v.next_step = std::move(next);
      problems.push_back(std::move(v));
    };
    const std::string replace = "drain the node and open an RMA for the GPU";
    for (const char* m : {"ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"}) {
      if (auto v = value(m); v && *v > 0) {
        problem("gpu.ecc_uncorrected", *v, "errors", "== 0 (anchors.md: any uncorrectable fails)",
                std::string(m) + " is not zero", replace);
      }
    }
    if (auto v = value("ecc_corrected_sram_aggregate"); v && *v > t.Get("gpu.health.max_sram_correctable")) {
      problem("gpu.ecc_sram_correctable", *v, "errors",
              fmt::format("<= {:.0f} ({})", t.Get("gpu.health.max_sram_correctable"),
                          t.SourceOf("gpu.health.max_sram_correctable")),
              "correctable SRAM errors past the mark", replace);
    }
    if (auto v = value("ecc_corrected_dram_aggregate"); v && *v > t.Get("gpu.health.max_dram_correctable")) {
      problem("gpu.ecc_dram_correctable", *v, "errors",
              fmt::format("<= {:.0f} ({})", t.Get("gpu.health.max_dram_correctable"),
                          t.SourceOf("gpu.health.max_dram_correctable")),
              "correctable DRAM errors past the mark", replace);
    }
    if (auto v = value("retired_pages_pending"); v && *v > 0) {
      problem("gpu.retired_pages_pending", 1, "", "none pending", "a page retirement waits for a reset",
              "drain the node and reset the GPU (or reboot)");
    }
    if (auto v = value("remap_pending"); v && *v > 0) {
      problem("gpu.remap_pending", 1, "", "none pending (anchors.md)", "a row remap waits for a reset",
              "drain the node and reset the GPU (or reboot)");
    }
    if (auto v = value("remap_failure"); v && *v > 0) {
      problem("gpu.remap_failure", 1, "", "no failure (anchors.md)", "row remapping failed: no spare rows left",
              replace);
    }
    if (auto v = value("throttle_slowdown"); v && *v > 0) {
      const probe::Measurement* m = Find(r, "throttle_slowdown", gpu);
      auto reasons = m->info.find("reasons");
      problem("gpu.clock_throttle", 1, "",
              "no HW slowdown, thermal or power brake (anchors.md: IBM Autopilot, Azure)",
              "clocks held down: " + (reasons != m->info.end() ? reasons->second : std::string("?")),
              "check inlet temperature, fans or coolant flow and the PSUs; idle and SW power cap are allowed");
    }
    if (auto cur = value("pcie_width_current"), max = value("pcie_width_max"); cur && max && *cur < *max) {
      problem("pcie.link_width", *cur, "lanes", fmt::format("== x{:.0f} (DCGM)", *max),
              fmt::format("the link trained at x{:.0f} of x{:.0f}", *cur, *max), "reseat the GPU or its riser; check the slot");
    }
    if (auto cur = value("pcie_gen_current"), max = value("pcie_gen_max"); cur && max && *cur < *max) {
      problem("gpu.pcie_gen", *cur, "gen", fmt::format("== Gen{:.0f} under load", *max),
              fmt::format("Gen{:.0f} of Gen{:.0f}; idle GPUs lower the link generation, so this matters only under load",
                          *cur, *max),
              "run gpu.h2d: if it passes, the link rises under load");
    }
    if (auto up = value("nvlink_up"), total = value("nvlink_total"); up && total) {
      // Against the links the inventory expects up (#15 item 13): a GPU with no NVLink peer by
      // design (an SXM GPU passed through alone, a profile without NVLink) lists its links
      // down, and that is not a fault.
      const ExpectedNvLinks want = ExpectNvLinks(prof, *total);
      if (*up < want.links) {
        problem("gpu.nvlink_down", *up, "links", fmt::format(">= {:.0f} ({})", want.links, want.why),
                fmt::format("{:.0f} of {:.0f} NVLinks are up", *up, *total), "reseat the GPU tray; check fabric manager's log");
      }
    }
    if (auto v = value("xid_count"); v && *v > 0) {
      const probe::Measurement* m = Find(r, "xid_count", gpu);
      auto codes = m->info.find("codes");
      problem("gpu.xid", *v, "events", "== 0",
              "Xid events for this GPU: " + (codes != m->info.end() ? codes->second : std::string("?")),
              "look each Xid up in NVIDIA's Xid catalogue; 48, 64, 74, 79, 94, 95 mean the GPU or its link");
    }
    if (auto v = value("xid_app_count"); v && *v > 0) {
      const probe::Measurement* m = Find(r, "xid_app_count", gpu);
      auto codes = m->info.find("codes");
      problem("gpu.xid_app", *v, "events", "== 0 application Xids (a warning)",
              "application Xids for this GPU: " + (codes != m->info.end() ? codes->second : std::string("?")),
              "see which job faulted (dmesg, pid and name in the Xid line); the GPU is not at fault unless they repeat "
              "across jobs");
    }
    if (auto v = value("persistence"); v && *v == 0) {
      problem("gpu.persistence_off", 0, "", "on (anchors.md)", "persistence mode is off: every job pays the "
              "driver load", "systemctl enable --now nvidia-persistenced (gpuforge apply does)");
    }
    if (problems.empty()) {
      Verdict v = Base(run, gpu);
      v.state = State::kPass;
      // Informational Xids (63 a remap recorded, 92 a high single-bit rate) are shown, not
      // judged: what they lead to (a pending remap, correctable counts) is judged above.
      if (auto n = value("xid_info_count"); n && *n > 0) {
        const probe::Measurement* m = Find(r, "xid_info_count", gpu);
        auto codes = m->info.find("codes");
        v.detail = fmt::format("informational Xids {} (NVIDIA's catalog: IGNORE; a recorded remap activates at the "
                               "next GPU reset)",
                               codes != m->info.end() ? codes->second : std::string("?"));
      }
      if (auto temp = value("temperature")) {
        v.measured = *temp;
        v.unit = "C";
      }
      out.push_back(std::move(v));
    } else {
      out.insert(out.end(), problems.begin(), problems.end());
    }
  }
  return out;
}

// Per-GPU rates against the model's figure in the data file.
std::vector<Verdict> JudgeGpuRate(const Thresholds& t, const PlannedRun& run, const probe::ProbeResult& r,
                                  const model::Profile* prof) {
  // The rows `thresholds show` lists too (thresholds.cc ModelMarks).
  const ModelMark* rule = nullptr;
  for (const ModelMark& x : ModelMarks()) {
    if (x.check == run.check) rule = &x;
  }
  std::vector<Verdict> out;
  const std::string model = prof != nullptr ? GpuModel(*prof) : "";
  const std::optional<ModelFigure> figure = t.ForModel(model, rule->figure);
  const double fraction = t.Get(rule->fraction_key);
  for (const probe::Measurement& m : r.measurements) {
    if (m.metric != rule->metric) continue;
    // gpu.compute is an FMA kernel: its reference is the GPU's own FMA peak (SMs x fp32 lanes x
    // 2 x peak SM clock, from the probe), not a PyTorch matmul figure (#15 item 7). The model
    // figure stays the fallback for a GPU whose peak the probe could not compute.
    if (run.check == "gpu.compute") {
      const probe::Measurement* f = Find(r, "fp32_peak_fraction", m.entity);
      if (f != nullptr && f->value > 0) {
        const double peak = m.value / f->value;
        const double min_fraction = t.Get("gpu.compute.min_peak_fraction");
        auto basis = f->info.find("peak_basis");
        out.push_back(AtLeast(run, m.entity, m.value, std::string(rule->unit), peak * min_fraction,
                              fmt::format("{} {} ({:.0f}% of the GPU's FMA peak {} {}: {})", Fixed(peak * min_fraction),
                                          rule->unit, min_fraction * 100, Fixed(peak), rule->unit,
                                          basis != f->info.end() ? basis->second : std::string("SMs x lanes x 2 x clock")),
                              "check clocks and power capping (gpu.health); compare with another GPU of the node"));
        continue;
      }
    }
    if (!figure) {
      Verdict v = Base(run, m.entity);
      Mark(v, "threshold.no_reference");
      v.measured = m.value;
      v.unit = std::string(rule->unit);
      v.detail = fmt::format("no {} figure for {} in the GPU model data file", rule->figure, model.empty() ? "?" : model);
      v.next_step = fmt::format("add {}.{} to {} from a known-good node", model, rule->figure, DefaultModelTablePath());
      out.push_back(std::move(v));
      continue;
    }
    const double mark = figure->value * fraction;
    out.push_back(AtLeast(run, m.entity, m.value, std::string(rule->unit), mark,
                          fmt::format("{} {} ({:.0f}% of {} {}; {})", Fixed(mark), rule->unit, fraction * 100,
                                      Fixed(figure->value), rule->unit, figure->source),
                          "compare with another GPU of the node; check clocks (gpu.health), the PCIe link and NUMA "
                          "placement"));
  }
  if (out.empty()) return {Missing(run, rule->metric)};
  return out;
}


// Rates and times of the storage and TCP probes. Each judge starts from a probe result that
// may be a SKIP or ERROR; the fabric judges are in judge_fabric.cc.
int GpusOf(const model::Cluster& c, const PlannedRun& run) {
  const model::Node* node = c.FindNode(run.node);
  return node != nullptr ? std::max(1, c.ProfileOf(*node).gpu_count()) : 1;
}
const model::Profile* ProfileOf(const model::Cluster& c, const PlannedRun& run) {
  const model::Node* node = c.FindNode(run.node);
  return node != nullptr ? &c.ProfileOf(*node) : nullptr;
}

std::vector<Verdict> JudgeGpuHealthResult(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                          const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  return JudgeGpuHealth(c, t, run, r, ProfileOf(c, run));
}

std::vector<Verdict> JudgeGpuRateResult(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                        const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  return JudgeGpuRate(t, run, r, ProfileOf(c, run));
}

// What the node says its file system is (statfs f_type, the mount's type) against what the
// inventory calls the tier. A shared one the inventory calls local means every node's test file
// and reads went to one file system at once; a local one where the inventory has a shared tier
// means that tier is most likely not mounted there. Agreement is a note on the figure.
std::optional<Verdict> SharedFsFinding(const model::Cluster& c, const PlannedRun& run, const probe::Measurement& m) {
  const model::StorageTier* tier = nullptr;
  for (const model::StorageTier& t : c.storage.tiers) {
    if (t.mount == run.entity) tier = &t;
  }
  if (tier == nullptr) return std::nullopt;
  const auto info = [&](const char* key) {
    auto it = m.info.find(key);
    return it == m.info.end() ? std::string() : it->second;
  };
  const std::string shared = info("shared_fs"), fs = info("filesystem"), size = info("size");
  // An agent that does not say what the file system is (an older one) gives nothing to compare.
  if (fs.empty()) return std::nullopt;
  const bool inventory_shared = tier->kind != model::StorageKind::kLocalNvme;
  if (!shared.empty() == inventory_shared) return std::nullopt;
  Verdict v = Base(run, run.entity);
  if (!shared.empty()) {
    Mark(v, "storage.shared_fs");
    v.threshold = fmt::format("a node-local file system (inventory storage.tiers[{}].kind: {})", tier->name,
                              model::ToString(tier->kind));
    v.detail = fmt::format("{} is on {}, shared with other nodes: every selected node wrote its own {}-byte test "
                           "file there and read it at once, so the figure is one client's share under that load",
                           run.entity, shared, size.empty() ? "?" : size);
    v.next_step = fmt::format("give the tier its kind in the inventory (lustre, beegfs, nfs, nas), or point its mount "
                              "at the local disk; --param storage.read.size= writes less");
  } else {
    Mark(v, "storage.not_shared");
    v.threshold = fmt::format("a shared file system (inventory storage.tiers[{}].kind: {})", tier->name,
                              model::ToString(tier->kind));
    v.detail = fmt::format("{} is on {} here, a file system local to the node: the {} tier is most likely not mounted "
                           "on it, and the figure is the local disk's",
                           run.entity, fs, model::ToString(tier->kind));
    v.next_step = fmt::format("findmnt {} on the node; mount the tier (gpuforge apply) or fix the inventory's kind",
                              run.entity);
  }
  return v;
}

std::vector<Verdict> JudgeStorageRead(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                      const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  const int gpus = GpusOf(c, run);
  const probe::Measurement* m = Find(r, "read_bandwidth");
  if (m == nullptr) return {Missing(run, "read_bandwidth")};
  // The per-GPU figure is the workload's when it gives one, else the threshold's: the text names
  // whichever was used, not the default's guide when the inventory's value won.
  const bool from_workload = c.workload.read_bytes_per_s_per_gpu > 0;
  const double per_gpu =
      from_workload ? c.workload.read_bytes_per_s_per_gpu / 1e9 : t.Get("storage.read.min_gbs_per_gpu");
  const double need = per_gpu * gpus;
  const std::string source =
      from_workload ? "inventory workload.read_bandwidth_per_gpu" : t.SourceOf("storage.read.min_gbs_per_gpu");
  // A node without GPUs is held to one GPU's share, and the text says so (#28 item 12: it said
  // "1 GPU x 1.00 GB/s" on a GPU-less node).
  const model::Profile* prof = ProfileOf(c, run);
  const bool gpu_less = prof != nullptr && prof->gpu_count() == 0;
  const std::string basis = gpu_less ? fmt::format("no GPU on this node: one GPU's share, {} GB/s", Fixed(per_gpu))
                                     : fmt::format("{} GPU{} x {} GB/s", gpus, gpus == 1 ? "" : "s", Fixed(per_gpu));
  std::vector<Verdict> out = {AtLeast(run, run.entity, m->value, "GB/s", need,
                                      fmt::format("{} GB/s ({}; {})", Fixed(need), basis, source),
                                      "check the mount options, the client's network path to the storage and the "
                                      "tier's load")};
  if (std::optional<Verdict> v = SharedFsFinding(c, run, *m)) out.push_back(std::move(*v));
  return out;
}

std::vector<Verdict> JudgeStorageCheckpoint(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                            const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  const probe::Measurement* m = Find(r, "write_bandwidth");
  if (m == nullptr) return {Missing(run, "write_bandwidth")};
  const double limit = t.Get("storage.checkpoint.max_seconds");
  if (!c.workload.present || c.workload.params <= 0) {
    Verdict v = Base(run, run.entity);
    Mark(v, "storage.no_workload");
    v.measured = m->value;
    v.unit = "GB/s";
    v.detail = fmt::format("measured {} GB/s; the inventory has no workload, so there is no checkpoint size to time",
                           Fixed(m->value));
    return {v};
  }
  const std::size_t compute_nodes = std::max<std::size_t>(1, c.ComputeNodes().size());
  const double share = c.workload.params * c.workload.checkpoint_bytes_per_param() / static_cast<double>(compute_nodes);
  const double seconds = m->value > 0 ? share / (m->value * 1e9) : std::numeric_limits<double>::infinity();
  Verdict v = AtMost(run, run.entity, seconds, "s", limit,
                     fmt::format("{} s ({})", Fixed(limit), t.SourceOf("storage.checkpoint.max_seconds")),
                     "write checkpoints to a faster tier, shard them across more nodes, or checkpoint asynchronously");
  v.detail = fmt::format("{:.1f} GB per node ({} nodes share the checkpoint) at {} GB/s", share / 1e9, compute_nodes,
                         Fixed(m->value));
  return {v};
}

std::vector<Verdict> JudgeStorageMetadata(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                          const probe::ProbeResult& r) {
  (void)c;
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  const probe::Measurement* m = Find(r, "p99_latency");
  if (m == nullptr) return {Missing(run, "p99_latency")};
  const double limit_ms = t.Get("storage.metadata.max_p99_latency_ms");
  return {AtMost(run, run.entity, m->value * 1e3, "ms", limit_ms,
                 fmt::format("{} ms ({})", Fixed(limit_ms), t.SourceOf("storage.metadata.max_p99_latency_ms")),
                 "look for a saturated metadata server, a congested storage network or sync mount options")};
}

std::vector<Verdict> JudgeTcp(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                              const probe::ProbeResult& r) {
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  const probe::Measurement* m = Find(r, "bandwidth");
  if (m == nullptr) return {Missing(run, "bandwidth")};
  const model::Network* net = c.FindNetwork(run.params.count("network") ? run.params.at("network") : "");
  const double line_gbits = net != nullptr ? net->rate_bytes_per_s * 8 / 1e9 : 0;
  const double fraction = t.Get("tcp.bandwidth.min_fraction");
  if (line_gbits <= 0) return {NoLineRate(run, run.entity, m->value, "Gb/s", "the network", "the network")};
  return {AtLeast(run, run.entity, m->value, "Gb/s", fraction * line_gbits,
                  fmt::format("{} Gb/s ({:.0f}% of {} Gb/s, inventory networks.{}.rate; {:.0f}%: {})",
                              Fixed(fraction * line_gbits), fraction * 100, Fixed(line_gbits), net->name,
                              fraction * 100, t.SourceOf("tcp.bandwidth.min_fraction")),
                  "test the pair again with a known-good peer to tell a bad node from a bad link; check MTU, "
                  "NIC firmware, cabling and the switch port")};
}

// The profile's NIC a drift names (its subject is the NIC's name, or "NAME port N").
const model::NicSpec* NicOfDrift(const model::Cluster& c, const facts::Drift& d) {
  const model::Node* node = c.FindNode(d.node);
  if (node == nullptr) return nullptr;
  const std::string name = d.subject.substr(0, d.subject.find(' '));
  for (const model::NicSpec& nic : c.ProfileOf(*node).nics) {
    if (nic.name == name || (!nic.netdev.empty() && nic.netdev == name)) return &nic;
  }
  return nullptr;
}

// Where a drift's expected value comes from: the inventory key it was read from, the other
// nodes, the device itself, or (for gpuforge's own rules) the catalogue's source.
std::string ExpectedFrom(const model::Cluster& c, const facts::Drift& d, const facts::DriftCode* row) {
  // Drift codes are facts' (facts/drift.h), not validate's: compared by name here, never given.
  struct From {
    std::string_view drift;
    bool in_profile;  // `text` follows "inventory profiles.NAME"
    std::string_view text;
  };
  static constexpr std::array<From, 10> kFrom = {{
      {"gpu.count", true, ".gpus.count"},
      {"gpu.model", true, ".gpus.model"},
      {"nic.missing", true, ".nics"},
      {"ib.link_rate", true, ".nics[].rate"},
      {"version.driver", false, "inventory software.driver.version or .branch"},
      {"version.cuda", false, "inventory software.cuda"},
      {"version.nccl", false, "inventory software.nccl.version"},
      {"version.firmware", false, "inventory vars of the node"},
      {"version.skew", false, "the value most nodes of the profile have"},
      {"pcie.link_gen", false, "the device's own maximum, read on the node"},
  }};
  const model::Node* node = c.FindNode(d.node);
  for (const From& f : kFrom) {
    if (f.drift != d.code) continue;
    if (!f.in_profile) return std::string(f.text);
    return fmt::format("inventory profiles.{}{}", node != nullptr ? c.ProfileOf(*node).name : "?", f.text);
  }
  if (d.code.starts_with("pcie.")) return "the device's own maximum, read on the node";
  return row != nullptr ? std::string(row->source) : std::string();
}

// The catalogue's next step is written for the common case; where the inventory says what the
// subject is, the advice names what is true of it. An Ethernet NIC is a netdev with its own
// driver (ice, bnxt_en, mlx5_core...), never an HCA's problem.
void DriftNextStep(const model::Cluster& c, const facts::Drift& d, Verdict& v) {
  constexpr std::string_view kNicMissing = "nic.missing";  // facts' drift code
  if (d.code != kNicMissing) return;
  const model::NicSpec* nic = NicOfDrift(c, d);
  if (nic == nullptr) return;
  if (nic->kind == model::NetKind::kEthernet) {
    const std::string dev = nic->netdev.empty() ? nic->name : nic->netdev;
    v.next_step = fmt::format(
        "`ip -br link` on the node: is {0} there under another name (predictable names change with the slot or "
        "firmware)? Then `ethtool -i {0}` or `lspci -k` for the card's driver, and fix the card or the inventory's "
        "name",
        dev);
  } else {
    v.next_step = fmt::format(
        "`ibv_devices` and `ibstat` on the node: is {} listed? If not, check that the HCA is seated and its RDMA "
        "driver is loaded (mlx5_ib for ConnectX, bnxt_re for Broadcom, irdma for Intel), then the inventory's name",
        nic->name);
  }
}

constexpr RetryPolicy kUntilGood{.on_fail = true};
// Wrong sums are not a slow run: an NCCL check whose data check failed is never tried again,
// so a flaky corruption cannot be outvoted by a later clean attempt.
constexpr RetryPolicy kUntilGoodUnlessWrong{.on_fail = true, .except_code = "nccl.wrong_data"};

}  // namespace

// One row per check, in the order they are planned and listed: node-local, then pairs and
// groups. A new check is a row: its shape, retry policy, timeout, planner and judge.
std::span<const CheckInfo> Checks() {
  static constexpr std::array kChecks = {
      CheckInfo{.key = "facts",
                .description = "hardware and software facts against the inventory (drift codes, docs/facts.md)",
                .timeout_s = 120,
                .health = true,
                .plan = &PlanEveryNode},
      CheckInfo{.key = "gpu.health",
                .probe = "gpu.health",
                .description = "NVML: GPU count, ECC, retired pages, row remapping, clock throttling, PCIe link, "
                               "NVLink, persistence, Xid events",
                .timeout_s = 120,
                .health = true,
                .needs_gpu = true,
                .plan = &PlanNvidiaNode,
                .judge = &JudgeGpuHealthResult},
      CheckInfo{.key = "gpu.copy",
                .probe = "gpu.copy",
                .description = "device-to-device copy bandwidth (HBM) per GPU",
                .retry = kUntilGood,
                .timeout_s = 600,
                .needs_gpu = true,
                .plan = &PlanNvidiaNode,
                .judge = &JudgeGpuRateResult},
      CheckInfo{.key = "gpu.h2d",
                .probe = "gpu.h2d",
                .description = "pinned host-to-device copy bandwidth (PCIe) per GPU",
                .retry = kUntilGood,
                .timeout_s = 600,
                .needs_gpu = true,
                .plan = &PlanNvidiaNode,
                .judge = &JudgeGpuRateResult},
      CheckInfo{.key = "gpu.d2h",
                .probe = "gpu.d2h",
                .description = "device-to-host copy bandwidth into pinned memory (PCIe) per GPU",
                .retry = kUntilGood,
                .timeout_s = 600,
                .needs_gpu = true,
                .plan = &PlanNvidiaNode,
                .judge = &JudgeGpuRateResult},
      CheckInfo{.key = "gpu.compute",
                .probe = "gpu.compute",
                .description = "fp32 FMA throughput of gpuforge's own kernel per GPU",
                .retry = kUntilGood,
                .timeout_s = 600,
                .needs_gpu = true,
                .plan = &PlanNvidiaNode,
                .judge = &JudgeGpuRateResult},
      CheckInfo{.key = "gpu.gemm",
                .probe = "gpu.gemm",
                .description = "bf16 GEMM throughput through cuBLASLt per GPU",
                .retry = kUntilGood,
                .timeout_s = 900,
                .needs_gpu = true,
                .plan = &PlanNvidiaNode,
                .judge = &JudgeGpuRateResult},
      CheckInfo{.key = "ib.counters",
                .probe = "ib.counters",
                .description = "InfiniBand/RoCE ports of the compute HCAs: state, rate and width against the "
                               "inventory, link-down and error counters",
                .timeout_s = 60,
                .health = true,
                .plan = &PlanIbCounters,
                .judge = &JudgeIbCounters},
      CheckInfo{.key = "nccl.quick",
                .probe = "nccl.allreduce",
                .description = "the guides' quick NCCL check: 1024x1024 float all-reduce over the node's GPUs, time "
                               "per op",
                .retry = kUntilGoodUnlessWrong,
                .timeout_s = 300,
                .needs_gpu = true,
                .plan = &PlanNcclQuick,
                .judge = &JudgeNcclNode},
      CheckInfo{.key = "nccl.allreduce",
                .probe = "nccl.allreduce",
                .description = "NCCL all-reduce over the node's GPUs, nccl-tests' sweep: bus bandwidth, wrong "
                               "elements, the transport",
                .retry = kUntilGoodUnlessWrong,
                .timeout_s = 900,
                .needs_gpu = true,
                .plan = &PlanNcclNode,
                .judge = &JudgeNcclNode},
      CheckInfo{.key = "storage.read",
                .probe = "storage.read",
                .description = "sequential read bandwidth of each storage tier's mount",
                .retry = kUntilGood,
                .timeout_s = 1800,
                .plan = &PlanStorage,
                .judge = &JudgeStorageRead},
      CheckInfo{.key = "storage.checkpoint",
                .probe = "storage.checkpoint",
                .description = "checkpoint write (write + fsync) turned into time for this node's share of the "
                               "workload's checkpoint",
                .retry = kUntilGood,
                .timeout_s = 1800,
                .plan = &PlanCheckpoint,
                .judge = &JudgeStorageCheckpoint},
      CheckInfo{.key = "storage.metadata",
                .probe = "storage.metadata",
                .description = "metadata operations per second and 4 KiB write latency",
                .retry = kUntilGood,
                .timeout_s = 600,
                .plan = &PlanStorage,
                .judge = &JudgeStorageMetadata},
      CheckInfo{.key = "tcp.bandwidth",
                .probe = "tcp.bandwidth",
                .description = "TCP bandwidth between neighbouring nodes on storage and control networks",
                .shape = Shape::kPair,
                .retry = kUntilGood,
                .timeout_s = 120,
                .plan = &PlanTcpPairs,
                .judge = &JudgeTcp},
      CheckInfo{.key = "rdma.write_bw",
                .probe = "rdma.write_bw",
                .description = "RDMA write bandwidth per compute HCA to the same rail of the next node "
                               "(ib_write_bw's method)",
                .shape = Shape::kPair,
                .retry = kUntilGood,
                .timeout_s = 300,
                .plan = &PlanRdmaPairs,
                .judge = &JudgeRdma},
      CheckInfo{.key = "rdma.write_lat",
                .probe = "rdma.write_lat",
                .description = "RDMA write ping-pong latency per compute HCA to the same rail of the next node "
                               "(ib_write_lat's method)",
                .shape = Shape::kPair,
                .retry = kUntilGood,
                .timeout_s = 120,
                .plan = &PlanRdmaPairs,
                .judge = &JudgeRdma},
      CheckInfo{.key = "nccl.multinode",
                .probe = "nccl.allreduce",
                .description = "NCCL all-reduce across the selected nodes, one agent per node (the unique id passed "
                               "by gpuforge)",
                .shape = Shape::kGroup,
                .retry = kUntilGoodUnlessWrong,
                .timeout_s = 1800,
                .needs_gpu = true,
                .plan = &PlanNcclGroup,
                .judge_group = &JudgeNcclGroup},
  };
  return kChecks;
}

const CheckInfo* FindCheck(std::string_view key, std::span<const CheckInfo> table) {
  for (const CheckInfo& c : table) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

const CheckInfo* CheckOf(const PlannedRun& run) { return run.info != nullptr ? run.info : FindCheck(run.check); }

Shape ShapeOf(const PlannedRun& run) {
  if (const CheckInfo* info = CheckOf(run)) return info->shape;
  return !run.group.empty() ? Shape::kGroup : !run.peer.empty() ? Shape::kPair : Shape::kNode;
}


std::vector<Verdict> Judge(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                           const probe::ProbeResult& r) {
  const CheckInfo* check = CheckOf(run);
  if (check != nullptr && check->judge != nullptr) return check->judge(c, t, run, r);
  if (r.outcome != probe::Outcome::kOk) return {NotOk(run, r)};
  Verdict v = Base(run, run.entity);
  Mark(v, "check.no_judge");
  v.detail = fmt::format("gpuforge has no rule to judge {}", run.check);
  return {v};
}

std::vector<Verdict> JudgeGroup(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                std::span<const probe::ProbeResult* const> results) {
  const CheckInfo* check = CheckOf(run);
  return (check != nullptr && check->judge_group != nullptr ? check->judge_group : &JudgeNcclGroup)(c, t, run, results);
}

bool RetryAgain(const PlannedRun& run, std::span<const Verdict> last) {
  const CheckInfo* check = CheckOf(run);
  const std::string_view except = check != nullptr ? check->retry.except_code : std::string_view();
  return std::any_of(last.begin(), last.end(), [](const Verdict& v) { return v.state == State::kFail; }) &&
         (except.empty() || std::none_of(last.begin(), last.end(), [&](const Verdict& v) { return v.code == except; }));
}

std::vector<Verdict> JudgeDrift(const model::Cluster& c, std::span<const facts::Drift> drift,
                                std::span<const std::string> nodes) {
  std::vector<Verdict> out;
  for (const std::string& node : nodes) {
    bool any = false;
    for (const facts::Drift& d : drift) {
      if (d.node != node) continue;
      any = true;
      Verdict v;
      v.check = "facts";
      v.node = node;
      v.entity = d.subject.empty() ? "node" : d.subject;
      v.code = d.code;
      v.detail = d.message;
      const facts::DriftCode* row = nullptr;
      for (const facts::DriftCode& code : facts::DriftCodes()) {
        if (code.code == d.code) row = &code;
      }
      // More CPUs or memory than the inventory says warns; less, and every other drift, fails.
      v.state = row != nullptr && row->only_warns ? State::kWarn : State::kFail;
      if (row != nullptr) v.next_step = std::string(row->next_step);
      v.threshold = d.expected;
      if (!d.expected.empty()) {
        const std::string from = ExpectedFrom(c, d, row);
        if (!from.empty()) v.threshold += " (" + from + ")";
      }
      DriftNextStep(c, d, v);
      out.push_back(std::move(v));
    }
    if (!any) {
      Verdict v;
      v.check = "facts";
      v.node = node;
      v.entity = "node";
      v.state = State::kPass;
      v.detail = "no drift from the inventory";
      out.push_back(std::move(v));
    }
  }
  return out;
}

bool Good(std::span<const Verdict> v) {
  return std::none_of(v.begin(), v.end(), [](const Verdict& x) { return x.state == State::kFail || x.state == State::kError; });
}

bool FailsRun(const Verdict& v, bool strict) {
  return !v.left_out && (v.state == State::kFail || v.state == State::kError || (strict && v.state == State::kWarn));
}

int ExitCode(std::span<const Verdict> v, bool strict) {
  bool error = false, fail = false, measured = false;
  for (const Verdict& x : v) {
    if (x.left_out) continue;
    error = error || x.state == State::kError;
    fail = fail || (x.state != State::kError && FailsRun(x, strict));
    measured = measured || x.state != State::kSkip;
  }
  // --strict: a run that measured nothing (every check skipped or left out) gates nothing, so it fails.
  return error ? 2 : fail ? 1 : (strict && !measured && !v.empty()) ? 1 : 0;
}

}  // namespace gpuforge::validate