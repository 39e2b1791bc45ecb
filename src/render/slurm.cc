// Slurm: slurm.conf, gres.conf, cgroup.conf and topology.conf for the cluster and for every node
// with a Slurm role, and the guide's training job script (docs/render.md, "Slurm").

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/model/fabric.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/slurm_roles.h"
#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// RealMemory is this share of the inventory's memory: the kernel always reports less than the
// DIMMs hold, and a RealMemory above what slurmd finds drains the node ("Low RealMemory").
constexpr double kRealMemoryShare = 0.95;
// Slurm maps ClusterName to lower case and keeps at most 40 characters (slurm.conf(5)).
constexpr std::size_t kMaxClusterName = 40;

constexpr const char* kConfDir = "/etc/slurm";
constexpr const char* kJobScript = "/etc/gpuforge/jobs/train.sbatch";
constexpr int kRdzvPort = 29500;
// job_container/tmpfs keeps each job's /tmp here, on the node's disk: not /tmp itself, which
// the plugin refuses ("Cannot use /tmp or /dev/shm as BasePath"), and beside SlurmdSpoolDir.
constexpr const char* kJobContainerBase = "/var/lib/slurm/job_container";
// The health check program and what it reads (software.scheduler.health_check, #16 part 5):
// the paths plan pushes to, from model/slurm_roles.h.
constexpr std::string_view kHealthCheckProgram = model::kHealthCheckProgramPath;
constexpr std::string_view kHealthCheckAgent = model::kNodeAgentPath;
constexpr std::string_view kHealthCheckInventory = model::kHealthCheckInventoryPath;
constexpr std::string_view kHealthCheckModelTable = model::kHealthCheckModelTablePath;

// Configless (docs/render.md, "Configless"): above this many Slurm nodes slurmd fetches its
// configuration from slurmctld instead of every node holding a copy of slurm.conf and
// topology.conf, both O(N), so O(N^2) bytes to render, push and keep equal.
constexpr std::size_t kConfiglessAboveNodes = 128;
// Debian's slurmd.service (slurm-wlm 22.05.8, debian/slurmd.service) runs
// `slurmd -D -s $SLURMD_OPTIONS` with EnvironmentFile=-/etc/default/slurmd and
// ConditionPathExists=/etc/slurm/slurm.conf: a configless node has no slurm.conf, so the
// drop-in clears the condition and names the server on the command line, leaving
// /etc/default/slurmd to the operator.
constexpr const char* kConfiglessDropIn = "/etc/systemd/system/slurmd.service.d/gpuforge-configless.conf";

std::string GresType(const model::GpuSpec& g) {
  if (const model::GpuModelInfo* info = model::FindGpuModel(g.model)) return std::string(info->slurm_type);
  std::string out;
  for (char ch : g.model) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool AmdGpu(const model::GpuSpec& g) {
  const model::GpuModelInfo* info = model::FindGpuModel(g.model);
  return info != nullptr && info->vendor == "amd";
}

// The device file of GPU `index` (in bus order) as the driver numbers it.
std::string GpuDevice(const model::GpuSpec& g, int index) {
  return AmdGpu(g) ? fmt::format("/dev/dri/renderD{}", 128 + index) : fmt::format("/dev/nvidia{}", index);
}

// Inventory quantities are doubles and may be absurd; Slurm's fields are integers. Whole numbers
// up to 2^53 stay exact, and casting anything larger is undefined behaviour.
long long Whole(double v) {
  constexpr double kMax = 9007199254740992.0;  // 2^53
  if (!(v > 0)) return 0;
  return static_cast<long long>(std::min(v, kMax));
}

// Slurm's D-HH:MM:SS; a fraction of a second counts as a whole one. Slurm keeps minutes in 32 bits,
// its largest value meaning "infinite".
std::string SlurmDuration(double seconds) {
  long long s = Whole(std::ceil(seconds));
  if (s / 60 >= 0xffffffffLL) return "UNLIMITED";
  return fmt::format("{}-{:02}:{:02}:{:02}", s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
}

std::optional<long long> RealMemoryMiB(const model::Profile& p) {
  long long mib = Whole(std::floor(p.memory_bytes * kRealMemoryShare / kMiB));
  if (mib <= 0) return std::nullopt;
  return mib;
}

std::optional<long long> MemSpecMiB(const model::Scheduler& s) {
  if (!s.reserved_memory_bytes || *s.reserved_memory_bytes <= 0) return std::nullopt;
  return Whole(std::ceil(*s.reserved_memory_bytes / kMiB));
}

// scheduler.reserved.cpus counts CPUs (threads); Slurm reserves whole cores.
std::optional<int> CoreSpecCount(const model::Scheduler& s, const model::CpuSpec& cpu) {
  if (!s.reserved_cpus || *s.reserved_cpus <= 0) return std::nullopt;
  int tpc = std::max(1, cpu.threads_per_core);
  return (*s.reserved_cpus + tpc - 1) / tpc;
}

int Cpus(const model::CpuSpec& cpu) { return cpu.sockets * cpu.cores_per_socket * std::max(1, cpu.threads_per_core); }

// The NodeName attributes that decide whether two nodes can share a line, in slurm.conf order.
nlohmann::json NodeAttributes(const model::Cluster& c, const model::Profile& p) {
  const model::Scheduler& s = c.software.scheduler;
  std::vector<std::string> gres;
  for (const model::GpuSpec& g : p.gpus) {
    if (g.count > 0) gres.push_back(fmt::format("gpu:{}:{}", GresType(g), g.count));
  }
  nlohmann::json a = nlohmann::json::object();
  a["has_gres"] = !gres.empty();
  a["gres"] = fmt::format("{}", fmt::join(gres, ","));
  bool cpu = p.cpu.sockets > 0 && p.cpu.cores_per_socket > 0;
  a["has_cpu"] = cpu;
  a["cpus"] = cpu ? std::to_string(Cpus(p.cpu)) : "";
  a["sockets"] = std::to_string(p.cpu.sockets);
  a["cores_per_socket"] = std::to_string(p.cpu.cores_per_socket);
  a["threads_per_core"] = std::to_string(std::max(1, p.cpu.threads_per_core));
  std::optional<long long> mem = RealMemoryMiB(p);
  a["has_memory"] = mem.has_value();
  a["real_memory"] = mem ? std::to_string(*mem) : "";
  std::optional<int> core_spec = cpu ? CoreSpecCount(s, p.cpu) : std::nullopt;
  a["has_core_spec"] = core_spec.has_value();
  a["core_spec"] = core_spec ? std::to_string(*core_spec) : "";
  std::optional<long long> mem_spec = mem ? MemSpecMiB(s) : std::nullopt;
  a["has_mem_spec"] = mem_spec.has_value();
  a["mem_spec"] = mem_spec ? std::to_string(*mem_spec) : "";
  return a;
}

std::string AddressOf(const model::Node& n) { return n.address.empty() ? n.name : n.address; }

// NodeName (and NodeAddr) entries for one group of identical nodes. Slurm pairs the i-th name with
// the i-th address of the two expanded lists, so both are folded only when that pairing survives
// folding (which sorts); otherwise each node gets a line of its own.
std::vector<std::pair<std::string, std::string>> NameAddrLines(const std::vector<const model::Node*>& group) {
  std::vector<std::string> names, addrs;
  std::map<std::string, std::string> addr_of;
  bool any_addr = false;
  for (const model::Node* n : group) {
    names.push_back(n->name);
    addrs.push_back(AddressOf(*n));
    addr_of[n->name] = AddressOf(*n);
    any_addr = any_addr || AddressOf(*n) != n->name;
  }
  if (!any_addr) return {{hostlist::Fold(names), ""}};
  std::string folded_names = hostlist::Fold(names), folded_addrs = hostlist::Fold(addrs);
  Result<std::vector<std::string>> en = hostlist::Expand(folded_names);
  Result<std::vector<std::string>> ea = hostlist::Expand(folded_addrs);
  bool paired = en.ok() && ea.ok() && en->size() == ea->size();
  for (std::size_t i = 0; paired && i < en->size(); ++i) paired = addr_of[(*en)[i]] == (*ea)[i];
  if (paired) return {{folded_names, folded_addrs}};
  std::vector<std::pair<std::string, std::string>> out;
  for (const model::Node* n : group) out.emplace_back(n->name, AddressOf(*n));
  return out;
}

struct SlurmView {
  std::vector<const model::Node*> nodes;  // with a NodeName line, inventory order
  std::set<std::string> node_names;
  nlohmann::json partitions = nlohmann::json::array();
  std::vector<model::Partition> effective;  // declared, or the default 'gpu'
};

nlohmann::json NodeLines(const model::Cluster& c, const std::vector<const model::Node*>& nodes) {
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const model::Node*>> groups;
  std::map<std::string, nlohmann::json> attrs;
  for (const model::Node* n : nodes) {
    nlohmann::json a = NodeAttributes(c, c.ProfileOf(*n));
    std::string key = a.dump();
    if (!groups.count(key)) {
      keys.push_back(key);
      attrs[key] = a;
    }
    groups[key].push_back(n);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& key : keys) {
    for (const auto& [names, addrs] : NameAddrLines(groups[key])) {
      nlohmann::json line = attrs[key];
      line["names"] = names;
      line["has_addrs"] = !addrs.empty();
      line["addrs"] = addrs;
      out.push_back(line);
    }
  }
  return out;
}

// DefMemPerGPU: without a default, a job that asks for one GPU and no memory is given the whole
// node's memory under CR_Core_Memory, and nothing else fits beside it.
std::optional<long long> DefMemPerGpu(const model::Cluster& c, const std::vector<std::string>& nodes) {
  std::optional<long long> best;
  std::optional<long long> spec = MemSpecMiB(c.software.scheduler);
  for (const std::string& name : nodes) {
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) return std::nullopt;
    const model::Profile& p = c.ProfileOf(*n);
    std::optional<long long> mem = RealMemoryMiB(p);
    if (!mem || p.gpu_count() == 0) return std::nullopt;
    long long per = (*mem - spec.value_or(0)) / p.gpu_count();
    if (per <= 0) return std::nullopt;
    best = best ? std::min(*best, per) : per;
  }
  return best;
}

// DefCpuPerGPU: the CPUs a GPU brings with it when a job asks for GPUs but no CPUs, the node's
// CPUs less CoreSpecCount shared among its GPUs; otherwise such a job gets one CPU per task and
// its data loaders starve the GPUs.
std::optional<long long> DefCpuPerGpu(const model::Cluster& c, const std::vector<std::string>& nodes) {
  std::optional<long long> best;
  for (const std::string& name : nodes) {
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) return std::nullopt;
    const model::Profile& p = c.ProfileOf(*n);
    if (p.gpu_count() == 0 || p.cpu.sockets <= 0 || p.cpu.cores_per_socket <= 0) return std::nullopt;
    long long cpus = Cpus(p.cpu);
    if (std::optional<int> spec = CoreSpecCount(c.software.scheduler, p.cpu)) cpus -= *spec * std::max(1, p.cpu.threads_per_core);
    long long per = cpus / p.gpu_count();
    if (per <= 0) return std::nullopt;
    best = best ? std::min(*best, per) : per;
  }
  return best;
}

SlurmView BuildView(const model::Cluster& c) {
  SlurmView v;
  v.nodes = model::SlurmdNodes(c);
  for (const model::Node* n : v.nodes) v.node_names.insert(n->name);
  v.effective = c.software.scheduler.partitions;
  if (v.effective.empty()) {
    model::Partition p;
    p.name = "gpu";
    p.is_default = true;
    for (const model::Node* n : v.nodes) p.nodes.push_back(n->name);
    v.effective.push_back(std::move(p));
  }
  for (const model::Partition& p : v.effective) {
    std::optional<long long> def_mem = DefMemPerGpu(c, p.nodes);
    std::optional<long long> def_cpu = DefCpuPerGpu(c, p.nodes);
    v.partitions.push_back({{"name", p.name},
                            {"nodes", hostlist::Fold(p.nodes)},
                            {"default", p.is_default ? "YES" : "NO"},
                            {"max_time", p.max_time_s ? SlurmDuration(*p.max_time_s) : "UNLIMITED"},
                            {"has_def_mem", def_mem.has_value()},
                            {"def_mem_per_gpu", def_mem ? std::to_string(*def_mem) : ""},
                            {"has_def_cpu", def_cpu.has_value()},
                            {"def_cpu_per_gpu", def_cpu ? std::to_string(*def_cpu) : ""}});
  }
  return v;
}

// One gres.conf line; `notes` become comment lines above it.
nlohmann::json GresLine(const std::string& nodes, const std::string& type, const std::string& files,
                        std::optional<std::size_t> count, const std::string& cores, const std::vector<std::string>& notes) {
  return {{"nodes", nodes},
          {"type", type},
          {"has_files", !files.empty()},
          {"files", files},
          {"has_count", count.has_value()},
          {"count", count ? std::to_string(*count) : ""},
          {"has_cores", !cores.empty()},
          {"cores", cores},
          {"notes", notes}};
}

// The cores of socket `numa` when NUMA node `numa` is that socket, else "" (no Cores=, so Slurm
// does not bind GPUs to the wrong cores on NPS2/NPS4 layouts with more NUMA nodes than sockets).
std::string SocketCores(const model::Profile& p, std::optional<int> numa) {
  if (!numa || *numa < 0 || *numa >= p.cpu.sockets || p.cpu.cores_per_socket <= 0) return "";
  int from = *numa * p.cpu.cores_per_socket, to = from + p.cpu.cores_per_socket - 1;
  return from == to ? std::to_string(from) : fmt::format("{}-{}", from, to);
}

// gres.conf lines for one profile's nodes from the inventory alone: per NUMA node when the
// layout says where each GPU sits and NUMA nodes are sockets (Cores= is then that socket's
// cores), else one line. Without measured minors, File= assumes GPU i in bus order is
// /dev/nvidiaI, and the first line says so.
void InventoryGresLines(const model::Profile& p, const std::string& nodes, bool autodetect, nlohmann::json* out) {
  int index = 0;
  bool noted = false;
  for (const model::GpuSpec& g : p.gpus) {
    if (g.count <= 0) continue;
    int first = index;
    index += g.count;
    auto line = [&](const std::vector<int>& gpus, std::optional<int> numa) {
      std::vector<std::string> files, notes;
      for (int i : gpus) files.push_back(GpuDevice(g, i));
      if (!autodetect && !AmdGpu(g) && !noted) {
        notes.push_back(
            "Not measured: File= assumes the driver numbered these GPUs /dev/nvidia0.. in PCI bus order, which it "
            "does not promise.");
        notes.push_back("Render with --facts DIR (gpuforge facts INVENTORY --save DIR) to take each GPU's minor from its node.");
        noted = true;
      }
      std::string cores = SocketCores(p, numa);
      if (!cores.empty()) {
        notes.push_back(fmt::format("{} {} on NUMA node {} = socket {}: its cores", g.model,
                                    gpus.size() == 1 ? "GPU" : "GPUs", *numa, *numa));
      }
      out->push_back(GresLine(nodes, GresType(g), autodetect ? "" : hostlist::Fold(files),
                              autodetect ? std::optional<std::size_t>(gpus.size()) : std::nullopt, cores, notes));
    };
    std::vector<int> all;
    for (int i = 0; i < g.count; ++i) all.push_back(first + i);
    bool numa_known = !autodetect && static_cast<int>(g.numa_nodes.size()) == g.count && p.cpu.sockets > 0 &&
                      p.cpu.cores_per_socket > 0 &&
                      std::all_of(g.numa_nodes.begin(), g.numa_nodes.end(),
                                  [&](int x) { return x >= 0 && x < p.cpu.sockets; });
    if (!numa_known) {
      line(all, std::nullopt);
      continue;
    }
    std::map<int, std::vector<int>> by_numa;
    for (int i = 0; i < g.count; ++i) by_numa[g.numa_nodes[static_cast<std::size_t>(i)]].push_back(first + i);
    for (const auto& [numa, gpus] : by_numa) line(gpus, numa);
  }
}

// The one GPU model of a profile whose lines its nodes' measurements can give, or null: an
// NVIDIA model (minors are /dev/nvidiaN) and only one, since a measured GPU carries no model
// gpuforge could match to a Type.
const model::GpuSpec* MeasurableGpuSpec(const model::Profile& p) {
  const model::GpuSpec* only = nullptr;
  for (const model::GpuSpec& g : p.gpus) {
    if (g.count <= 0) continue;
    if (only != nullptr || AmdGpu(g)) return nullptr;
    only = &g;
  }
  return only;
}

// gres.conf lines for one node from what it measured: its GPUs in PCI bus order, which is the
// order slurmd's own AutoDetect=nvml walks them (Slurm src/plugins/gpu/nvml/gpu_nvml.c,
// _nvml_get_handle: "The GPU index (corresponds to PCI Bus ID order)"), each with the device
// file its driver gave it (gpu_nvml.c, _get_system_gpu_list_nvml: "/dev/nvidia%u" from
// nvmlDeviceGetMinorNumber, with "GPU index %u is different from minor number %u" when they
// differ). Neighbours share a line while their minors run on by one and they sit on one socket.
nlohmann::json MeasuredGresLines(const model::Profile& p, const model::GpuSpec& g,
                                 const std::vector<model::MeasuredGpu>& gpus) {
  nlohmann::json lines = nlohmann::json::array();
  std::vector<std::string> head = {
      fmt::format("Measured: {} {} in PCI bus order, each with the /dev/nvidia minor its driver reported.", gpus.size(),
                  gpus.size() == 1 ? "GPU" : "GPUs")};
  if (static_cast<int>(gpus.size()) != g.count) {
    head.push_back(fmt::format("The inventory says {}: slurmd offers the {} found, and slurmctld drains the node "
                               "(gres/gpu count below slurm.conf's Gres=) until the two agree.",
                               g.count, gpus.size()));
  }
  std::size_t i = 0;
  while (i < gpus.size()) {
    std::size_t j = i + 1;
    while (j < gpus.size() && gpus[j].minor == gpus[j - 1].minor + 1 && gpus[j].numa_node == gpus[i].numa_node) ++j;
    std::vector<std::string> files, notes;
    for (std::size_t k = i; k < j; ++k) files.push_back(fmt::format("/dev/nvidia{}", gpus[k].minor));
    if (i == 0) notes = head;
    std::string cores = SocketCores(p, gpus[i].numa_node);
    if (!cores.empty()) {
      notes.push_back(fmt::format("{} {} on NUMA node {} = socket {} (measured): its cores", g.model,
                                  j - i == 1 ? "GPU" : "GPUs", *gpus[i].numa_node, *gpus[i].numa_node));
    }
    // Each File= keeps bus order: hostlist::Fold would sort minors that run backwards.
    lines.push_back(GresLine("", GresType(g), j - i == 1 ? files[0] : hostlist::Fold(files), std::nullopt, cores, notes));
    i = j;
  }
  return lines;
}

nlohmann::json GresContext(const model::Cluster& c, const SlurmView& v, const MeasuredGpus* measured) {
  bool autodetect = c.software.scheduler.gres_autodetect_nvml;
  // Nodes of one profile share their lines; profiles keep inventory order. Within a profile,
  // measured nodes with the same lines share them too, and the unmeasured ones share theirs.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> by_profile;
  for (const model::Node* n : v.nodes) {
    if (c.ProfileOf(*n).gpu_count() == 0) continue;
    if (!by_profile.count(n->profile)) order.push_back(n->profile);
    by_profile[n->profile].push_back(n->name);
  }
  nlohmann::json lines = nlohmann::json::array();
  for (const std::string& profile : order) {
    const model::Profile& p = *c.FindProfile(profile);
    const model::GpuSpec* spec = autodetect ? nullptr : MeasurableGpuSpec(p);
    std::vector<std::string> assumed;
    std::vector<std::pair<nlohmann::json, std::vector<std::string>>> groups;  // lines -> nodes, first seen first
    std::map<std::string, std::size_t> group_of;                              // the lines, serialised -> groups[i]
    const bool can_measure = measured != nullptr && spec != nullptr;
    for (const std::string& node : by_profile[profile]) {
      auto it = can_measure ? measured->find(node) : MeasuredGpus::const_iterator{};
      if (!can_measure || it == measured->end() || it->second.empty()) {
        assumed.push_back(node);
        continue;
      }
      nlohmann::json mine = MeasuredGresLines(p, *spec, it->second);
      auto [at, added] = group_of.try_emplace(mine.dump(), groups.size());
      if (added) {
        groups.emplace_back(std::move(mine), std::vector<std::string>{node});
      } else {
        groups[at->second].second.push_back(node);
      }
    }
    if (!assumed.empty()) InventoryGresLines(p, hostlist::Fold(assumed), autodetect, &lines);
    for (auto& [group_lines, nodes] : groups) {
      const std::string folded = hostlist::Fold(nodes);
      for (nlohmann::json& l : group_lines) {
        l["nodes"] = folded;
        lines.push_back(std::move(l));
      }
    }
  }
  return {{"autodetect", autodetect}, {"lines", lines}};
}

// SchedulerParameters for backfill. bf_window (minutes) must reach the longest time limit a job
// can have, or the backfill scheduler never plans a start for the longest jobs and keeps filling
// their nodes with short ones (slurm.conf(5), bf_window: "at least as long as the highest allowed
// time limit"); never below Slurm's default of a day, never above its maximum of 30 days. A long
// window gets a coarser bf_resolution (seconds) so the plan keeps about a day's worth of slots,
// as slurm.conf(5) advises, within Slurm's 1..3600.
constexpr long long kBfWindowDefault = 1440, kBfWindowMax = 43200;
std::string SchedulerParameters(const SlurmView& v) {
  long long window = kBfWindowDefault;
  for (const model::Partition& p : v.effective) {
    long long minutes = p.max_time_s ? (Whole(std::ceil(*p.max_time_s)) + 59) / 60 : kBfWindowMax;
    window = std::max(window, std::min(minutes, kBfWindowMax));
  }
  std::string out = fmt::format("bf_window={}", window);
  if (window > kBfWindowDefault) out += fmt::format(",bf_resolution={}", std::min(3600LL, (window + kBfWindowDefault - 1) / kBfWindowDefault * 60));
  return out;
}

int TierRank(model::SwitchTier t) {
  switch (t) {
    case model::SwitchTier::kLeaf: return 0;
    case model::SwitchTier::kSpine: return 1;
    case model::SwitchTier::kCore: return 2;
  }
  return 0;
}

// topology.conf from the fabric as cabled: leaves list their Slurm nodes, upper tiers their
// lower switches. Switches that lead to no Slurm node are left out (Slurm refuses a switch with
// neither). Empty when the compute network has no such switch.
struct TopologyResult {
  nlohmann::json switches = nlohmann::json::array();
  std::string network;
  std::string skip_reason;  // switches exist but no tree could be built
  std::vector<std::string> notes;
};

TopologyResult BuildTopology(const model::Cluster& c, const SlurmView& v) {
  TopologyResult r;
  const model::Network* net = c.ComputeNetwork();
  if (net == nullptr) return r;
  r.network = net->name;
  model::Fabric fabric = model::AnalyzeFabric(c);
  std::vector<const model::SwitchLoad*> loads;
  for (const model::SwitchLoad& s : fabric.switches) {
    if (s.sw->network == net->name) loads.push_back(&s);
  }
  if (loads.empty()) return r;
  std::stable_sort(loads.begin(), loads.end(), [](const model::SwitchLoad* a, const model::SwitchLoad* b) {
    return TierRank(a->sw->tier) < TierRank(b->sw->tier);
  });
  // Rail-optimized (or any fabric where a node is cabled to several leaves): every node is cabled
  // to one leaf per rail, and topology/tree wants a node under one leaf switch; listing it under all of them made slurmctld warn "Multiple leaf
  // switches contain nodes" at every start (Slurm 25.11 src/plugins/topology/tree/
  // switch_record.c:572) and the tree carried no locality (#28 item 5). The leaves that share
  // nodes are one scalable unit: one switch per unit, its nodes under it, the spines above.
  std::map<std::string, std::string> unit_of;  // leaf -> unit switch name, where nodes span leaves
  std::map<std::string, int> leaves_of_node;
  for (const model::SwitchLoad* s : loads) {
    if (s->sw->tier != model::SwitchTier::kLeaf) continue;
    for (const std::string& n : s->nodes) {
      if (v.node_names.count(n)) ++leaves_of_node[n];
    }
  }
  if (std::any_of(leaves_of_node.begin(), leaves_of_node.end(), [](const auto& e) { return e.second > 1; })) {
    std::map<std::string, std::string> parent;  // leaf -> leaf, union-find
    std::function<std::string(const std::string&)> find = [&](const std::string& x) -> std::string {
      auto it = parent.find(x);
      if (it == parent.end() || it->second == x) return x;
      return it->second = find(it->second);
    };
    std::map<std::string, std::string> first_leaf;  // node -> a leaf it is cabled to
    for (const model::SwitchLoad* s : loads) {
      if (s->sw->tier != model::SwitchTier::kLeaf) continue;
      parent.emplace(s->sw->name, s->sw->name);
      for (const std::string& n : s->nodes) {
        if (!v.node_names.count(n)) continue;
        auto [it, fresh] = first_leaf.emplace(n, s->sw->name);
        if (!fresh) {
          const std::string a = find(it->second), b = find(s->sw->name);
          if (a != b) parent[b] = a;
        }
      }
    }
    std::map<std::string, std::vector<std::string>> units;  // representative -> leaves
    for (const auto& [leaf, _] : parent) units[find(leaf)].push_back(leaf);
    std::map<std::string, std::set<std::string>> unit_nodes;
    for (const auto& [node, leaf] : first_leaf) unit_nodes[find(leaf)].insert(node);
    int k = 0;
    std::vector<std::pair<std::string, std::vector<std::string>>> ordered(units.begin(), units.end());
    for (const auto& [rep, leaves] : ordered) {
      if (!unit_nodes.count(rep)) continue;  // leaves without Slurm nodes stay out, as before
      const std::string name = fmt::format("su{}", ++k);
      for (const std::string& leaf : leaves) unit_of[leaf] = name;
      const std::set<std::string>& nodes = unit_nodes[rep];
      r.switches.push_back({{"name", name}, {"has_nodes", true},
                            {"nodes", hostlist::Fold(std::vector<std::string>(nodes.begin(), nodes.end()))},
                            {"has_switches", false}, {"switches", ""}});
      r.notes.push_back(fmt::format("{} stands for the leaves {} of network {}: topology/tree puts a node under one "
                                    "leaf switch, and these nodes are cabled to several of them (one per rail)",
                                    name, hostlist::Fold(leaves), net->name));
    }
  }
  std::set<std::string> useful;
  for (const auto& [leaf, unit] : unit_of) useful.insert(unit);
  for (const model::SwitchLoad* s : loads) {
    if (unit_of.count(s->sw->name)) continue;  // stands in its scalable unit's switch
    std::vector<std::string> nodes, lower;
    for (const std::string& n : s->nodes) {
      if (v.node_names.count(n)) nodes.push_back(n);
    }
    std::set<std::string> seen;
    for (const std::string& l : s->lower_switches) {
      auto u = unit_of.find(l);
      const std::string& name = u != unit_of.end() ? u->second : l;
      if (useful.count(name) && seen.insert(name).second) lower.push_back(name);
    }
    if (nodes.empty() && lower.empty()) continue;
    useful.insert(s->sw->name);
    nlohmann::json sw = {{"name", s->sw->name}, {"has_nodes", false}, {"nodes", ""}, {"has_switches", false}, {"switches", ""}};
    if (!lower.empty()) {
      // topology/tree takes either child switches or nodes on one switch, not both.
      sw["has_switches"] = true;
      sw["switches"] = hostlist::Fold(lower);
      if (!nodes.empty()) {
        r.notes.push_back(fmt::format("{} also has nodes cabled to it directly ({}); topology/tree cannot say so, "
                                      "they are placed by their other switches",
                                      s->sw->name, hostlist::Fold(nodes)));
      }
    } else {
      sw["has_nodes"] = true;
      sw["nodes"] = hostlist::Fold(nodes);
    }
    r.switches.push_back(sw);
  }
  if (r.switches.empty()) {
    r.skip_reason = fmt::format("network '{}' has switches but no Slurm node is cabled to them (links)", net->name);
  }
  return r;
}

// The partition the training job goes to: the default one, else the first.
const model::Partition& JobPartition(const SlurmView& v) {
  for (const model::Partition& p : v.effective) {
    if (p.is_default) return p;
  }
  return v.effective.front();
}

void AddJobScript(const model::Cluster& c, const SlurmView& v, Plan* plan) {
  const model::Partition& part = JobPartition(v);
  int nodes = 0, gpus = 0, cpus = 0;
  bool cpus_known = true;
  for (const std::string& name : part.nodes) {
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) continue;
    const model::Profile& p = c.ProfileOf(*n);
    if (p.gpu_count() == 0) continue;
    int node_cpus = Cpus(p.cpu);
    if (std::optional<int> spec = CoreSpecCount(c.software.scheduler, p.cpu)) {
      node_cpus -= *spec * std::max(1, p.cpu.threads_per_core);
    }
    if (node_cpus <= 0) cpus_known = false;
    gpus = nodes == 0 ? p.gpu_count() : std::min(gpus, p.gpu_count());
    cpus = nodes == 0 ? node_cpus : std::min(cpus, node_cpus);
    ++nodes;
  }
  if (nodes == 0) {
    plan->skipped.push_back({"", kJobScript, fmt::format("partition '{}' has no node with GPUs", part.name)});
    return;
  }
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, val] : c.software.nccl_env) {
    // nccl.conf sets NCCL_TOPO_FILE only where the file is rendered (render/nccl.cc).
    if (k == "NCCL_TOPO_FILE") continue;
    env.push_back({{"key", k}, {"value", ShellQuote(NcclEnvValue(k, val))}});
  }
  // On an IB or RoCE compute network NCCL_NET=IB makes NCCL fail at init when its IB transport
  // cannot open a device, instead of quietly carrying the job over TCP sockets (NCCL's env.rst,
  // "NCCL_NET": the named network is used or init fails). The inventory's own value wins.
  const model::Network* net = c.ComputeNetwork();
  bool rdma = net != nullptr && (net->kind == model::NetKind::kInfiniband || net->kind == model::NetKind::kRoce);
  bool own_net = std::any_of(c.software.nccl_env.begin(), c.software.nccl_env.end(),
                             [](const auto& kv) { return kv.first == "NCCL_NET"; });
  nlohmann::json ctx = {{"partition", part.name},
                        {"nodes", std::to_string(nodes)},
                        {"gpus_per_node", std::to_string(gpus)},
                        {"has_cpus", cpus_known && cpus > 0},
                        {"cpus_per_task", std::to_string(cpus)},
                        {"has_time", part.max_time_s.has_value()},
                        {"time", part.max_time_s ? SlurmDuration(*part.max_time_s) : ""},
                        {"has_env", !env.empty()},
                        {"env", env},
                        {"nccl_net_ib", rdma && !own_net},
                        {"network", net != nullptr ? net->name : ""},
                        {"rdzv_port", std::to_string(kRdzvPort)}};
  plan->jobs.push_back({"", kJobScript, "slurm-train.sbatch.mustache", ctx, CommentStyle::kHash, "0755"});
}

}  // namespace

void AddSlurmJobs(const model::Cluster& c, const Options& o, Plan* plan, const MeasuredGpus* gpus) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kSlurm) return;
  const std::string conf = std::string(kConfDir) + "/slurm.conf";
  const model::Node* controller = s.controller.empty() ? nullptr : c.FindNode(s.controller);
  if (controller == nullptr) {
    plan->skipped.push_back({"", conf, "software.scheduler.controller names no node of the inventory; slurm.conf needs "
                                       "SlurmctldHost"});
    return;
  }
  SlurmView v = BuildView(c);
  if (v.nodes.empty()) {
    plan->skipped.push_back({"", conf, "no compute node, GPU node or partition member for slurmd to run on"});
    return;
  }

  std::string cluster_name;
  for (char ch : c.name) cluster_name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (cluster_name.size() > kMaxClusterName) cluster_name.resize(kMaxClusterName);
  std::string ctl = controller->name;
  if (AddressOf(*controller) != controller->name) ctl += "(" + controller->address + ")";

  // slurmctld serves slurm.conf, gres.conf, cgroup.conf, job_container.conf and
  // topology.conf to a slurmd started with --conf-server (Slurm 22.05
  // src/slurmctld/proc_req.c, slurmd_config_files[]); client commands on a node without slurmd
  // still read /etc/slurm (22.05 has no sackd; its DNS SRV lookup needs a record gpuforge does
  // not manage), so the controller and login nodes keep their files.
  const bool configless = s.configless.value_or(v.nodes.size() > kConfiglessAboveNodes);
  const std::string configless_why =
      s.configless ? "software.scheduler.configless: on"
                   : fmt::format("more than {} Slurm nodes", kConfiglessAboveNodes);
  TopologyResult topo = BuildTopology(c, v);
  bool tree = !topo.switches.empty();
  nlohmann::json notes = nlohmann::json::array();
  for (const std::string& n : topo.notes) notes.push_back({{"note", n}});

  nlohmann::json slurm_ctx = {{"cluster_name", cluster_name},
                              {"controller", ctl},
                              {"topology", tree},
                              {"network", topo.network},
                              {"nodes", NodeLines(c, v.nodes)},
                              {"partitions", v.partitions},
                              {"scheduler_parameters", SchedulerParameters(v)},
                              {"job_container_base", kJobContainerBase},
                              {"declared_partitions", !s.partitions.empty()},
                              {"default_partition", s.partitions.empty()},
                              {"configless", configless},
                              {"configless_why", configless_why}};

  // HealthCheck* only when the inventory asks (slurm.conf(5): without HealthCheckInterval the
  // program never runs; without HealthCheckNodeState it runs in any state).
  std::vector<std::string> gres_types;
  for (const model::Node* n : v.nodes) {
    for (const model::GpuSpec& g : c.ProfileOf(*n).gpus) gres_types.push_back(GresType(g));
  }
  slurm_ctx.update(SlurmAccountingContext(c, gres_types));
  slurm_ctx["health_check"] = s.health_check.has_value();
  slurm_ctx["health_check_program"] = std::string(kHealthCheckProgram);
  slurm_ctx["health_check_interval"] = s.health_check ? std::to_string(s.health_check->interval_s) : "";
  slurm_ctx["has_health_check_node_state"] = s.health_check && !s.health_check->node_state.empty();
  slurm_ctx["health_check_node_state"] =
      s.health_check ? fmt::format("{}", fmt::join(s.health_check->node_state, ",")) : "";
  nlohmann::json gres_ctx = GresContext(c, v, gpus);
  nlohmann::json topo_ctx = {{"network", topo.network}, {"switches", topo.switches}, {"notes", notes}};

  // slurmd_only (model::kSlurmdOnlyFiles): a node without slurmd does not get them, so a change
  // to them never asks for a slurmd restart where there is none.
  struct File {
    std::string path;
    std::string template_name;
    nlohmann::json context;
    bool slurmd_only = model::IsSlurmdOnlyFile(path);
  };
  std::vector<File> files = {{conf, "slurm.conf.mustache", slurm_ctx},
                             {std::string(kConfDir) + "/gres.conf", "slurm-gres.conf.mustache", gres_ctx},
                             {std::string(kConfDir) + "/cgroup.conf", "slurm-cgroup.conf.mustache", nlohmann::json::object()},
                             {std::string(kConfDir) + "/job_container.conf", "slurm-job_container.conf.mustache",
                              {{"base_path", kJobContainerBase}}}};
  if (tree) files.push_back({std::string(kConfDir) + "/topology.conf", "slurm-topology.conf.mustache", topo_ctx});
  if (!topo.skip_reason.empty()) plan->skipped.push_back({"", std::string(kConfDir) + "/topology.conf", topo.skip_reason});

  // Slurm wants the same files on every node (slurm.conf(5)); the cluster-wide copy is the one
  // to review, the per-node copies are what gets pushed.
  // One context per file, shared by the cluster-wide copy and every node's copy.
  std::vector<Context> contexts;
  for (const File& f : files) contexts.emplace_back(f.context);
  for (std::size_t i = 0; i < files.size(); ++i) {
    plan->jobs.push_back({"", files[i].path, files[i].template_name, contexts[i], CommentStyle::kHash, "0644"});
  }
  Context dropin_ctx = nlohmann::json{{"server", fmt::format("{}:6817", AddressOf(*controller))},
                                      {"nodes", std::to_string(v.nodes.size())},
                                      {"configless_why", configless_why}};
  for (const model::Node* n : SelectedNodes(c, o)) {
    bool slurmd = v.node_names.count(n->name) > 0;
    bool is_controller = n->name == controller->name;
    // The slurmdbd node too: sacctmgr there reads slurm.conf (model::SlurmRole::client).
    bool role = slurmd || n->role == model::NodeRole::kController || n->role == model::NodeRole::kLogin ||
                is_controller || (s.accounting && s.accounting->host == n->name);
    if (!role) continue;
    if (configless && slurmd && !is_controller) {
      // Fetches every file from slurmctld; no copy to render, push or keep equal.
      plan->jobs.push_back({n->name, kConfiglessDropIn, "slurmd-configless.conf.mustache", dropin_ctx,
                            CommentStyle::kHash, "0644"});
      continue;
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      const File& f = files[i];
      // In configless mode the controller serves the slurmd files, so it holds them too.
      if (f.slurmd_only && !slurmd && !(configless && is_controller)) continue;
      plan->jobs.push_back({n->name, f.path, f.template_name, contexts[i], CommentStyle::kHash, "0644"});
    }
    // slurmd runs the health check program, so only slurmd nodes get it, each with its own
    // inventory name (a host name can differ from it).
    if (slurmd && s.health_check) {
      nlohmann::json hc = {{"node", ShellQuote(n->name)},
                           {"node_comment", CommentText(n->name)},
                           {"agent", std::string(kHealthCheckAgent)},
                           {"inventory", std::string(kHealthCheckInventory)},
                           {"model_table", std::string(kHealthCheckModelTable)}};
      plan->jobs.push_back({n->name, std::string(kHealthCheckProgram), "slurm-healthcheck.sh.mustache", hc, CommentStyle::kHash, "0755"});
    }
  }
  AddSlurmAccountingJobs(c, o, plan);
  AddJobScript(c, v, plan);
}

}  // namespace gpuforge::render
