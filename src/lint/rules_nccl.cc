// nccl.*: the cluster-wide NCCL environment (software.nccl_env, software.nccl_topo_file).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>

#include "gpuforge/base/text.h"
#include "gpuforge/model/nccl_defaults.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

// NCCL's own defaults (anchors.md, "NCCL configuration"): what an unset variable means.
constexpr int kNcclDefaultIbTimeout = 20;
constexpr int kNcclDefaultIbRetryCnt = 7;

using gpuforge::text::Lower;

std::optional<long> ParseInt(std::string_view s) {
  long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------- NCCL_IB_HCA

// NCCL_IB_HCA syntax (anchors.md, "NCCL configuration"): an optional leading '^' excludes
// the listed devices instead of selecting them; an optional '=' after it makes names exact
// instead of prefixes; entries are comma-separated, each "name" or "name:port".
struct HcaEntry {
  std::string text;  // as written, for messages
  std::string name;
  std::optional<int> port;
};

struct HcaList {
  bool exclude = false;
  bool exact = false;
  std::vector<HcaEntry> entries;
  std::vector<std::string> errors;
};

HcaList ParseHca(std::string_view v) {
  HcaList out;
  if (v.starts_with('^')) {
    out.exclude = true;
    v.remove_prefix(1);
  }
  if (v.starts_with('=')) {
    out.exact = true;
    v.remove_prefix(1);
  }
  while (!v.empty()) {
    std::size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    if (item.empty()) continue;
    HcaEntry e;
    e.text = std::string(item);
    std::size_t colon = item.find(':');
    e.name = std::string(item.substr(0, colon));
    if (colon != std::string_view::npos) {
      std::optional<long> port = ParseInt(item.substr(colon + 1));
      if (!port || *port < 1) {
        out.errors.push_back(
            fmt::format("entry '{}' has a port that is not a positive number", item));
        continue;
      }
      e.port = static_cast<int>(*port);
    }
    out.entries.push_back(std::move(e));
  }
  return out;
}

bool Matches(const HcaList& list, const HcaEntry& e, const model::NicSpec& nic) {
  bool name_ok = list.exact ? nic.name == e.name : nic.name.starts_with(e.name);
  return name_ok && (!e.port || *e.port == nic.port);
}

// An RDMA device on a GPU node, and whether it is on a compute network.
struct Device {
  std::string node;
  const model::NicSpec* nic;
  bool compute;
};

// "mlx5_4 (network storage) on gpu[001-004]" per NIC name.
std::string DeviceList(const std::vector<const Device*>& devs) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_nic;
  for (const Device* d : devs) by_nic[{d->nic->name, d->nic->network}].push_back(d->node);
  std::vector<std::string> parts;
  for (const auto& [key, nodes] : by_nic) {
    parts.push_back(key.second.empty() ? fmt::format("{} on {}", key.first, FoldNames(nodes))
                                       : fmt::format("{} (network {}) on {}", key.first, key.second,
                                                     FoldNames(nodes)));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

void IbHca(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::vector<Device> devices;
  std::size_t most_per_node = 0;
  for (const model::Node* n : GpuNodes(c)) {
    std::size_t per_node = 0;
    for (const model::NicSpec& nic : c.ProfileOf(*n).nics) {
      if (!IsRdma(nic.kind)) continue;
      bool compute = IsComputeNetwork(c, nic.network);
      devices.push_back({n->name, &nic, compute});
      if (compute) ++per_node;
    }
    most_per_node = std::max(most_per_node, per_node);
  }
  const SourcePos& where = c.software.nccl_where;
  std::optional<std::string> value = NcclEnv(c.software, "NCCL_IB_HCA");
  if (!value) {
    if (most_per_node > 1) {
      ctx.Report(Severity::kWarning,
                 fmt::format("NCCL_IB_HCA is unset while GPU nodes have {} RDMA compute NICs each; "
                             "bind them explicitly so NCCL cannot pick a storage NIC or mix "
                             "devices",
                             most_per_node),
                 {}, where);
    }
    return;
  }
  HcaList list = ParseHca(*value);
  for (const std::string& e : list.errors) {
    ctx.Report(fmt::format("NCCL_IB_HCA={}: {}", *value, e), {}, where);
  }
  std::vector<bool> matched(devices.size(), false);
  for (const HcaEntry& e : list.entries) {
    std::vector<const Device*> compute, other;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (!Matches(list, e, *devices[i].nic)) continue;
      matched[i] = true;
      (devices[i].compute ? compute : other).push_back(&devices[i]);
    }
    if (list.exclude) {
      if (!compute.empty()) {
        ctx.Report(fmt::format("NCCL_IB_HCA={} excludes compute NICs {}; NCCL will not use them",
                               *value, DeviceList(compute)),
                   {}, where);
      } else if (other.empty()) {
        ctx.Report(
            fmt::format("NCCL_IB_HCA={} excludes '{}', which no GPU node has", *value, e.text), {},
            where);
      }
      continue;
    }
    if (compute.empty()) {
      std::string instead =
          other.empty() ? std::string() : fmt::format("; it matches {} instead", DeviceList(other));
      ctx.Report(fmt::format("NCCL_IB_HCA={} names '{}', which is no compute NIC of any GPU node{}",
                             *value, e.text, instead),
                 {}, where);
    } else if (!other.empty()) {
      ctx.Report(fmt::format("NCCL_IB_HCA={}: '{}' also matches {}, which is not a compute NIC",
                             *value, e.text, DeviceList(other)),
                 {}, where);
    }
  }
  // What NCCL ends up with: in select mode the matched devices, in exclude mode the rest.
  std::vector<const Device*> left_out, let_in;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    bool used = list.exclude ? !matched[i] : matched[i];
    if (devices[i].compute && !used && !list.exclude) left_out.push_back(&devices[i]);
    if (!devices[i].compute && used && list.exclude) let_in.push_back(&devices[i]);
  }
  if (!left_out.empty()) {
    ctx.Report(fmt::format("NCCL_IB_HCA={} leaves out compute NICs {}; NCCL will not use them",
                           *value, DeviceList(left_out)),
               {}, where);
  }
  if (!let_in.empty()) {
    ctx.Report(fmt::format("NCCL_IB_HCA={} still lets NCCL use {}, which {} not compute NICs",
                           *value, DeviceList(let_in), let_in.size() > 1 ? "are" : "is"),
               {}, where);
  }
}

// ---------------------------------------------------------------- timeouts

void CheckAtLeast(const model::Software& s, RuleContext& ctx, std::string_view var,
                  int nccl_default, double min, bool rdma) {
  std::optional<std::string> v = NcclEnv(s, var);
  if (!v) {
    if (!rdma) return;
    // Unset in the inventory: on RDMA nodes render writes gpuforge's value into nccl.conf, so
    // that is what NCCL runs with (model/nccl_defaults.h; #28 item 9).
    if (std::optional<std::string_view> rendered = model::RdmaNcclDefaultOf(var)) {
      std::optional<long> n = ParseInt(*rendered);
      if (n && *n < min) {
        ctx.Report(fmt::format("{} is unset in the inventory, so gpuforge renders {}={} into nccl.conf, below {}", var,
                               var, *n, FormatNumber(min)),
                   {}, s.nccl_where);
      }
      return;
    }
    if (nccl_default < min) {
      ctx.Report(fmt::format("{} is unset, so NCCL uses its default {}, below {}", var,
                             nccl_default, FormatNumber(min)),
                 {}, s.nccl_where);
    }
    return;
  }
  std::optional<long> n = ParseInt(*v);
  if (!n) {
    ctx.Report(fmt::format("{}={} is not a whole number", var, *v), {}, s.nccl_where);
  } else if (*n < min) {
    ctx.Report(fmt::format("{}={} is below {}", var, *n, FormatNumber(min)), {}, s.nccl_where);
  }
}

void IbTimeout(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const bool rdma = HasRdmaComputeFabric(c);
  CheckAtLeast(c.software, ctx, "NCCL_IB_TIMEOUT", kNcclDefaultIbTimeout, ctx.Param("min_timeout"),
               rdma);
  CheckAtLeast(c.software, ctx, "NCCL_IB_RETRY_CNT", kNcclDefaultIbRetryCnt, ctx.Param("min_retry"),
               rdma);
  // NCCL_IB_GID_INDEX is not asked for: NCCL picks the RoCE v2 IPv4 GID itself
  // (src/transport/net_ib.cc ncclIbGetGidIndex) and a fixed index moves with the port's
  // addresses; roce.nccl judges a pinned one against the network (#13 part 3).
}

void IbDisabled(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::optional<std::string> v = NcclEnv(c.software, "NCCL_IB_DISABLE");
  if (!v || !HasRdmaComputeFabric(c)) return;
  std::optional<long> n = ParseInt(*v);
  if (!n || *n == 0) return;
  ctx.Report(fmt::format("NCCL_IB_DISABLE={} on an InfiniBand/RoCE compute fabric: NCCL falls "
                         "back to TCP sockets",
                         *v),
             {}, c.software.nccl_where);
}

// ---------------------------------------------------------------- algorithm, topology, debug

void Algo(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::optional<std::string> v = NcclEnv(c.software, "NCCL_ALGO");
  if (!v) return;  // NCCL then picks per message size, which is what most jobs want
  const double large = ctx.Param("large_cluster_gpus");
  const int gpus = ComputeGpus(c);
  const std::string algo = Lower(*v);
  if (algo == "tree" && gpus < large) {
    ctx.Report(fmt::format("NCCL_ALGO={} forced on {}, below {}; small clusters do better with "
                           "Ring, or with NCCL_ALGO unset",
                           *v, text::Plural(gpus, "GPU"), FormatNumber(large)),
               {}, c.software.nccl_where);
  } else if (algo == "ring" && gpus >= large) {
    ctx.Report(fmt::format("NCCL_ALGO={} forced on {} (from {} a cluster is large); large "
                           "clusters do better with Tree, or with NCCL_ALGO unset",
                           *v, text::Plural(gpus, "GPU"), FormatNumber(large)),
               {}, c.software.nccl_where);
  }
}

// A node is a VM when its profile says so (profiles.NAME.virtual, which also gives nccl.conf
// NCCL_IB_PCI_RELAXED_ORDERING); gpuforge cannot tell from the inventory alone, and facts
// come later.
bool IsVm(const model::Cluster& c, const model::Node& n) { return c.ProfileOf(n).virtual_machine; }

// Bare metal: NCCL reads the real PCI tree from sysfs, and a file can only make it worse (NCCL
// keeps the parent a file gives a device, src/graph/xml.cc, so a flat or guessed file erases
// the PCIe switches and GPUDirect RDMA goes off). VMs: the hypervisor's sysfs hides the
// switches, and only a file shaped like the host's tree (the cloud vendor's) gives them back.
void TopoFile(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::optional<std::string> hand = NcclEnv(c.software, "NCCL_TOPO_FILE");
  std::vector<std::string> bare, vms;
  for (const model::Node* n : GpuNodes(c)) {
    if (c.ProfileOf(*n).gpu_count() < 2) continue;
    (IsVm(c, *n) ? vms : bare).push_back(n->name);
  }
  if (hand && !bare.empty()) {
    ctx.Report(fmt::format("NCCL_TOPO_FILE={} is set by hand for bare-metal {}; NCCL keeps every "
                           "PCI parent the file gives, so a file that is not the measured tree "
                           "moves GPUs and NICs off their PCIe switches and turns GPUDirect RDMA "
                           "off: leave it unset and let NCCL read sysfs",
                           *hand, NodeList(bare)),
               bare, c.software.nccl_where);
  }
  if (!hand && !vms.empty()) {
    ctx.Report(fmt::format("{} {} VMs (profile virtual) whose sysfs hides the host's PCIe "
                           "switches; set NCCL_TOPO_FILE to the cloud vendor's topology file "
                           "(e.g. Azure's ND v4/v5 files, which nest each GPU and its NIC under "
                           "a bridge)",
                           NodeList(vms), vms.size() == 1 ? "is a" : "are"),
               vms, c.software.nccl_where);
  }
}

void Debug(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::optional<std::string> v = NcclEnv(c.software, "NCCL_DEBUG");
  if (!v) return;
  std::string level = Lower(*v);
  if (level != "info" && level != "trace") return;
  ctx.Report(fmt::format("NCCL_DEBUG={} is set cluster-wide; it floods job logs in production, "
                         "so set it per job when debugging",
                         *v),
             {}, c.software.nccl_where);
}

}  // namespace

void AddNcclRules(std::vector<Rule>& rules) {
  rules.push_back({"nccl.ib_hca",
                   Severity::kError,
                   "NCCL_IB_HCA against the GPU nodes' RDMA compute NICs (unset with several "
                   "NICs per node: warning)",
                   "004_910c09f65559b553.txt, The Training Setup That Scales (\"explicit HCA "
                   "binding to avoid NIC selection conflicts\"); 000_bf90931f775ecd9c.txt, "
                   "Orchestration: Kubernetes + Slurm (job script)",
                   {},
                   &IbHca});
  rules.push_back(
      {"nccl.ib_timeout",
       Severity::kWarning,
       "NCCL_IB_TIMEOUT and NCCL_IB_RETRY_CNT at least the guide's values (unset: NCCL's "
       "default)",
       "004_910c09f65559b553.txt, The Training Setup That Scales (launch script: "
       "NCCL_IB_TIMEOUT=22, NCCL_IB_RETRY_CNT=7, NCCL_IB_GID_INDEX=3)",
       {{"min_timeout", 22, "NCCL_IB_TIMEOUT exponent",
         "least NCCL_IB_TIMEOUT; guide 004 (22); NCCL's default is 20"},
        {"min_retry", 7, "retries", "least NCCL_IB_RETRY_CNT; guide 004 and NCCL's default (7)"}},
       &IbTimeout});
  rules.push_back({"nccl.ib_disabled",
                   Severity::kError,
                   "NCCL_IB_DISABLE set on an InfiniBand/RoCE compute fabric (TCP fallback)",
                   "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (\"Use RDMA ... "
                   "TCP stack adds 50-100us per operation\") and Orchestration: Kubernetes + "
                   "Slurm (job script sets NCCL_IB_DISABLE=0)",
                   {},
                   &IbDisabled});
  rules.push_back(
      {"nccl.algo",
       Severity::kWarning,
       "NCCL_ALGO forced to Tree on a small cluster or to Ring on a large one (unset is fine)",
       "000_bf90931f775ecd9c.txt, Software Stack: What Actually Works (\"Set NCCL_ALGO=Ring for "
       "small clusters, NCCL_ALGO=Tree for large ones\")",
       {{"large_cluster_gpus", 128, "GPUs",
         "GPU count from which a cluster counts as large; gpuforge's reading of guide 000"}},
       &Algo});
  rules.push_back({"nccl.topo_file",
                   Severity::kWarning,
                   "NCCL_TOPO_FILE set by hand on bare-metal multi-GPU nodes, or missing on VMs "
                   "(profiles.NAME.virtual) whose sysfs hides the PCIe switches",
                   "004_910c09f65559b553.txt, NCCL Topology File (\"Write this file manually\"), "
                   "reversed for bare metal by NCCL src/graph/xml.cc ncclTopoGetXmlFromSys (a node that already has a "
                   "parent keeps it) and src/graph/paths.cc ncclTopoCheckGdr (GPUDirect RDMA "
                   "off beyond PXB); vendor VM files in shared/fixtures/nccl-topo (Azure ND "
                   "v4/v5)",
                   {},
                   &TopoFile});
  rules.push_back({"nccl.debug",
                   Severity::kInfo,
                   "NCCL_DEBUG=INFO or TRACE in the cluster-wide environment",
                   "000_bf90931f775ecd9c.txt, Orchestration: Kubernetes + Slurm (its job script "
                   "sets NCCL_DEBUG=INFO; fine for one job, noisy as a default)",
                   {},
                   &Debug});
}

}  // namespace gpuforge::lint
