// Kubernetes with Volcano, for clusters whose scheduler is Kubernetes: the training Job and
// its Queue (guide 000, "Orchestration"), the kubelet settings of guide 004's "The Node
// Configuration", and guide 004's FSDP launch script ("The Training Setup That Scales").
// docs/render.md says where every value comes from.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/gpu_numa.h"
#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

constexpr int kRendezvousPort = 29400;  // guide 004's MASTER_PORT
// Whole-job restarts before Volcano gives the Job up (spec.maxRetry; the CRD's default is 3,
// written out so the file says what happens).
constexpr int kMaxRetry = 3;
constexpr std::string_view kJobPath = "/etc/gpuforge/k8s/volcano-job.yaml";
constexpr std::string_view kQueuePath = "/etc/gpuforge/k8s/volcano-queue.yaml";
constexpr std::string_view kKubeletPath = "/etc/kubernetes/kubelet.conf.d/90-gpuforge.conf";
// kubeadm's packages start the kubelet from /usr/lib/systemd/system/kubelet.service.d/
// 10-kubeadm.conf (kubernetes/release cmd/krel/templates/latest/kubeadm/10-kubeadm.conf),
// whose ExecStart has no --config-dir; systemd applies drop-ins in file-name order, so this
// one's ExecStart replaces it.
constexpr std::string_view kKubeletUnitPath = "/etc/systemd/system/kubelet.service.d/20-gpuforge.conf";
constexpr std::string_view kKubeletDropinDir = "/etc/kubernetes/kubelet.conf.d";
// The kubelet's default hard eviction threshold, memory.available<100Mi (pkg/kubelet/apis/
// config/v1beta1/defaults.go DefaultEvictionHard); gpuforge does not change it.
constexpr double kEvictionHardBytes = 100.0 * 1024 * 1024;
constexpr std::string_view kLaunchPath = "/usr/local/bin/gpuforge-launch-fsdp.sh";
// RFC 2606 reserves .invalid: the placeholder can never pull a real image by accident.
constexpr std::string_view kPlaceholderImage = "registry.invalid/gpuforge/set-defaults-vars-train-image:unset";

std::string AddressOf(const model::Node& n) { return n.address.empty() ? n.name : n.address; }

// IPv6 literals need brackets before a port.
std::string HostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

// Object names are DNS-1123 labels ([a-z0-9-], alphanumeric at both ends, at most 63); cluster
// names may hold capitals, '_' and '.'. Volcano names pods "<job>-worker-<i>", so the base is
// kept well under 63.
std::string K8sName(std::string_view cluster) {
  std::string out;
  for (char c : cluster) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) return "gpuforge";
  // Service and pod host names must start with a letter (DNS-1035).
  if (out.front() < 'a' || out.front() > 'z') out = "gpuforge-" + out;
  return out;
}

// Kubernetes quantity text: the largest suffix that divides exactly, binary before decimal of
// the same size, so 16Gi stays "16Gi" and 16 GB becomes "16G", not "15625000Ki".
std::string K8sBytes(double bytes) {
  auto whole = [](double v) { return v == std::floor(v); };
  for (auto [div, suffix] : {std::pair{1024.0 * 1024 * 1024 * 1024, "Ti"}, {1e12, "T"}, {1024.0 * 1024 * 1024, "Gi"},
                             {1e9, "G"}, {1024.0 * 1024, "Mi"}, {1e6, "M"}, {1024.0, "Ki"}, {1e3, "k"}}) {
    if (bytes >= div && whole(bytes / div)) return fmt::format("{}{}", static_cast<long long>(bytes / div), suffix);
  }
  return fmt::format("{}", static_cast<long long>(std::llround(bytes)));
}

// "13b", "1.5b", "350m": the spelling guide 004's --model_size uses.
std::string ModelSize(double params) {
  if (params >= 1e9) return fmt::format("{}b", params / 1e9);
  return fmt::format("{}m", params / 1e6);
}

// The nodes a training job spans: compute nodes with GPUs, in inventory order. One Volcano
// task (and one torchrun --nproc_per_node) needs one shape, so mixed GPU counts are refused.
struct Training {
  std::vector<const model::Node*> nodes;
  int gpus_per_node = 0;
  std::string why_not;  // set when no job can be written
};

Training TrainingNodes(const model::Cluster& c) {
  Training t;
  for (const model::Node* n : c.ComputeNodes()) {
    int gpus = c.ProfileOf(*n).gpu_count();
    if (gpus == 0) continue;
    if (t.nodes.empty()) {
      t.gpus_per_node = gpus;
    } else if (gpus != t.gpus_per_node && t.why_not.empty()) {
      t.why_not = fmt::format("compute nodes {} ({} GPUs) and {} ({} GPUs) differ; one Volcano task and one torchrun "
                              "--nproc_per_node need every node alike",
                              t.nodes.front()->name, t.gpus_per_node, n->name, gpus);
    }
    t.nodes.push_back(n);
  }
  if (t.nodes.empty()) t.why_not = "the inventory has no compute node with GPUs";
  return t;
}

// What the NCCL family writes on each training node, asked of the family itself so the pod
// mounts exactly the files that will be there (a hostPath of type File refuses to start
// without its file, and a wrong topology file is worse than none).
struct HostNcclFiles {
  bool conf = false;      // /etc/nccl.conf on every training node
  std::string topo_path;  // the topology file, when it is rendered on every training node
};

HostNcclFiles NcclFilesOnEveryNode(const model::Cluster& c, const Training& t) {
  Plan nccl;
  AddNcclJobs(c, Options{}, &nccl);
  std::set<std::pair<std::string_view, std::string_view>> written;
  for (const Job& j : nccl.jobs) written.emplace(j.node, j.path);
  auto rendered = [&](std::string_view path) {
    if (path.empty()) return false;
    return std::all_of(t.nodes.begin(), t.nodes.end(),
                       [&](const model::Node* n) { return written.count({n->name, path}) > 0; });
  };
  HostNcclFiles out;
  out.conf = rendered("/etc/nccl.conf");
  if (rendered(c.software.nccl_topo_file)) out.topo_path = c.software.nccl_topo_file;
  return out;
}

// A cluster-wide value from the inventory's vars: defaults.vars reach every node, so the first
// training node's resolved vars hold it.
std::string Var(const Training& t, const std::string& key) {
  if (t.nodes.empty()) return "";
  auto it = t.nodes.front()->vars.find(key);
  return it == t.nodes.front()->vars.end() ? "" : it->second;
}

// NCCL environment for the job: the inventory's, in written order; the topology file only when
// it exists on every node.
std::vector<std::pair<std::string, std::string>> NcclEnv(const model::Cluster& c, const HostNcclFiles& files) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& [k, v] : c.software.nccl_env) {
    if (k != "NCCL_TOPO_FILE") env.emplace_back(k, NcclEnvValue(k, v));
  }
  if (!files.topo_path.empty()) env.emplace_back("NCCL_TOPO_FILE", files.topo_path);
  return env;
}

// train.py and guide 004's FSDP arguments; the model size and precision come from the
// inventory's workload when it has one.
std::vector<std::string> TrainCommand(const model::Cluster& c, const Training& t) {
  std::string script = Var(t, "train_script");
  std::vector<std::string> args = {script.empty() ? "train.py" : script};
  if (c.workload.present && c.workload.params > 0) {
    args.insert(args.end(), {"--model_size", ModelSize(c.workload.params)});
  }
  args.insert(args.end(), {"--batch_size", "4", "--gradient_accumulation_steps", "8", "--sharding_strategy", "FULL_SHARD",
                           "--mixed_precision", c.workload.present ? c.workload.precision : "bf16",
                           "--activation_checkpointing", "--sequence_parallel"});
  return args;
}

// The device plugin's resource name: AMD's plugin registers amd.com/gpu, NVIDIA's (and so any
// GPU the catalogue does not know) nvidia.com/gpu.
std::string GpuResource(const model::Cluster& c, const Training& t) {
  const model::Profile& p = c.ProfileOf(*t.nodes.front());
  const model::GpuModelInfo* info = p.gpus.empty() ? nullptr : model::FindGpuModel(p.gpus.front().model);
  return info != nullptr && info->vendor == "amd" ? "amd.com/gpu" : "nvidia.com/gpu";
}

bool RdmaCompute(const model::Cluster& c, const Training& t) {
  const model::Profile& p = c.ProfileOf(*t.nodes.front());
  return std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& n) { return n.kind != model::NetKind::kEthernet; });
}

// The device plugin's RDMA resource, defaults.vars.k8s_rdma_resource.
std::string RdmaResource(const Training& t) { return Var(t, "k8s_rdma_resource"); }

// Why `r` is not an extended resource name the API server accepts in a container's resources
// (k8s.io/apimachinery validation IsQualifiedName; pkg/apis/core/v1/helper
// IsExtendedResourceName: a domain prefix outside kubernetes.io), or "".
std::string ExtendedResourceWhyNot(std::string_view r) {
  std::size_t slash = r.find('/');
  if (slash == std::string_view::npos) return "it needs a domain prefix, DOMAIN/NAME (rdma/ib, nvidia.com/hostdev)";
  std::string_view domain = r.substr(0, slash);
  std::string_view name = r.substr(slash + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  auto dns = [&](char c) { return (std::islower(static_cast<unsigned char>(c)) != 0) || std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.'; };
  if (domain.empty() || domain.size() > 253 || !alnum(domain.front()) || !alnum(domain.back()) ||
      !std::all_of(domain.begin(), domain.end(), dns)) {
    return fmt::format("the prefix '{}' is not a lower-case DNS subdomain", domain);
  }
  if (domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")) return "the kubernetes.io domain is reserved for native resources";
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back()) ||
      !std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; })) {
    return fmt::format("the name '{}' must be 1-63 characters of [A-Za-z0-9._-], alphanumeric at both ends", name);
  }
  return "";
}

// Headroom left on a node beside the training pod: DaemonSets the GPU and Network Operators,
// the CNI and kube-proxy run on every node request CPU and memory of their own, and the
// kubelet's memory capacity is MemTotal (installed memory less what firmware and the kernel
// keep), with the default hard eviction threshold (memory.available<100Mi) taken off too. A
// pod that asks for all of allocatable stays Pending forever.
constexpr int kDaemonSetCpus = 2;
constexpr double kMemoryHeadroom = 0.05;  // of installed memory
constexpr double kGi = 1024.0 * 1024 * 1024;

// What one training pod asks for and is limited to: equal requests and limits for every
// resource of its one container give it the Guaranteed QoS class (Kubernetes
// pkg/apis/core/v1/helper/qos/qos.go, GetPodQOS), so it is evicted and OOM-killed last, and with the
// static CPU manager its CPUs are exclusive.
struct PodSize {
  int cpus = 0;
  double memory_bytes = 0;  // whole Gi
  double shm_bytes = 0;     // whole Gi
  std::string why_not;
};

PodSize SizePod(const model::Cluster& c, const Training& t) {
  const model::Profile& p = c.ProfileOf(*t.nodes.front());
  const model::Scheduler& s = c.software.scheduler;
  PodSize out;
  int logical = p.cpu.sockets * p.cpu.cores_per_socket * std::max(1, p.cpu.threads_per_core);
  if (logical == 0 || p.memory_bytes <= 0) {
    out.why_not = fmt::format(
        "profile '{}' of {} states no {}; the Job's Guaranteed CPU and memory requests are sized from the node (set "
        "profiles.{}.cpu sockets and cores_per_socket, and profiles.{}.memory)",
        p.name, t.nodes.front()->name, logical == 0 ? "CPU count" : "memory", p.name, p.name);
    return out;
  }
  out.cpus = logical - s.reserved_cpus.value_or(0) - kDaemonSetCpus;
  double memory = p.memory_bytes * (1 - kMemoryHeadroom) - s.reserved_memory_bytes.value_or(0);
  out.memory_bytes = std::floor(memory / kGi) * kGi;
  if (out.cpus < 1 || out.memory_bytes < kGi) {
    out.why_not = fmt::format("profile '{}' leaves the training pod {} CPUs and {} GiB after software.scheduler.reserved and "
                              "the DaemonSet headroom ({} CPUs, {}% of memory)",
                              p.name, out.cpus, out.memory_bytes / kGi, kDaemonSetCpus, kMemoryHeadroom * 100);
    return out;
  }
  // /dev/shm is a tmpfs whose pages count against the container's memory limit: a quarter
  // of it for DataLoader workers' batches and NCCL's shared-memory segments.
  out.shm_bytes = std::max(kGi, std::floor(out.memory_bytes / 4 / kGi) * kGi);
  return out;
}

nlohmann::json JobContext(const model::Cluster& c, const Training& t, const HostNcclFiles& files, const PodSize& size,
                          const std::string& name) {
  const model::Node& master = *t.nodes.front();
  std::vector<std::string> command = {"torchrun",
                                      fmt::format("--nnodes={}", t.nodes.size()),
                                      fmt::format("--nproc_per_node={}", t.gpus_per_node),
                                      "--rdzv_backend=c10d",
                                      fmt::format("--rdzv_endpoint={}", HostPort(AddressOf(master), kRendezvousPort)),
                                      fmt::format("--rdzv_id={}", name)};
  for (std::string& a : TrainCommand(c, t)) command.push_back(std::move(a));
  nlohmann::json cmd = nlohmann::json::array();
  for (const std::string& a : command) cmd.push_back({{"arg", YamlQuote(a)}});
  bool rdma = RdmaCompute(c, t);
  std::vector<std::pair<std::string, std::string>> env_vars = NcclEnv(c, files);
  // NCCL_NET picks the transport by name and fails the communicator when that one cannot
  // start, instead of falling back to sockets in silence (NCCL src/init.cc parseCommConfig
  // reads NCCL_NET; src/net.cc ncclNetInit matches it against each transport's name, "IB" in
  // src/transport/net_ib.cc). The inventory's own NCCL_NET stands.
  bool has_net = std::any_of(env_vars.begin(), env_vars.end(), [](const auto& kv) { return kv.first == "NCCL_NET"; });
  if (rdma && !has_net) env_vars.emplace_back("NCCL_NET", "IB");
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : env_vars) env.push_back({{"name", YamlQuote(k)}, {"value", YamlQuote(v)}});
  nlohmann::json nodes = nlohmann::json::array();
  for (const model::Node* n : t.nodes) nodes.push_back({{"name", YamlQuote(n->name)}});
  std::string image = Var(t, "train_image");
  std::string rdma_resource = RdmaResource(t);
  return {{"name", YamlQuote(name)},
          {"queue", YamlQuote(K8sName(c.name))},
          {"replicas", t.nodes.size()},
          {"gpu_resource", YamlQuote(GpuResource(c, t))},
          {"gpus_per_node", t.gpus_per_node},
          {"nodes", nodes},
          {"master", master.name},
          {"command", cmd},
          {"env", env},
          {"has_env", !env.empty()},
          {"image", YamlQuote(image.empty() ? std::string(kPlaceholderImage) : image)},
          {"placeholder_image", image.empty()},
          {"rdma", rdma},
          {"cpus", YamlQuote(std::to_string(size.cpus))},
          {"memory", YamlQuote(K8sBytes(size.memory_bytes))},
          {"shm", YamlQuote(K8sBytes(size.shm_bytes))},
          {"max_retry", kMaxRetry},
          {"has_rdma_resource", !rdma_resource.empty()},
          {"rdma_resource", YamlQuote(rdma_resource)},
          {"nccl_conf", files.conf},
          {"has_topo", !files.topo_path.empty()},
          {"topo_path", YamlQuote(files.topo_path)}};
}

// Topology alignment is asked for when the inventory pins CPUs (cpu_manager_policy: static) or
// picks a topology manager policy that refuses unaligned pods (restricted, single-numa-node)
// and leaves the CPU manager unset; an explicit cpu_manager_policy: none stands.
bool AlignmentAsked(const model::Scheduler& s) {
  if (s.cpu_manager_policy == "static") return true;
  return s.cpu_manager_policy.empty() &&
         (s.topology_manager_policy == "restricted" || s.topology_manager_policy == "single-numa-node");
}

// Why the kubelet would refuse this node's settings, or "".
std::string KubeletWhyNot(const model::Cluster& c, const model::Node& n) {
  const model::Scheduler& s = c.software.scheduler;
  if (!AlignmentAsked(s)) return "";
  // The static CPU manager needs CPUs held back for the shared pool (pkg/kubelet/cm/cpumanager/
  // cpu_manager.go NewManager: "the static policy requires systemreserved.cpu + kubereserved.cpu
  // to be greater than zero").
  if (s.reserved_cpus.value_or(0) == 0) {
    return fmt::format("the static CPU manager (topology alignment for {}) needs CPUs reserved for the system, and "
                       "software.scheduler.reserved.cpus is {}; the kubelet would not start",
                       s.cpu_manager_policy == "static" ? "cpu_manager_policy: static"
                                                        : "topology_manager_policy: " + s.topology_manager_policy,
                       s.reserved_cpus ? "0" : "unset");
  }
  const model::Profile& p = c.ProfileOf(n);
  int logical = p.cpu.sockets * p.cpu.cores_per_socket * std::max(1, p.cpu.threads_per_core);
  if (logical > 0 && *s.reserved_cpus >= logical) {
    return fmt::format("software.scheduler.reserved.cpus ({}) leaves none of {}'s {} CPUs to pods", *s.reserved_cpus, n.name,
                       logical);
  }
  return "";
}

nlohmann::json KubeletContext(const model::Cluster& c, const model::Node& n) {
  const model::Scheduler& s = c.software.scheduler;
  bool from_inventory = !s.topology_manager_policy.empty();
  bool align = AlignmentAsked(s);
  std::string cpu_policy = align ? "static" : s.cpu_manager_policy;
  double reserved_memory = s.reserved_memory_bytes.value_or(0) + kEvictionHardBytes;
  nlohmann::json ctx = {
      {"node", n.name},
      {"dropin_dir", std::string(kKubeletDropinDir)},
      {"policy", YamlQuote(from_inventory ? s.topology_manager_policy : "best-effort")},
      {"policy_why", from_inventory ? "inventory software.scheduler.topology_manager_policy"
                                    : "guide 004's best-effort; the inventory sets no topology_manager_policy"},
      {"has_cpu_manager", !cpu_policy.empty()},
      {"cpu_manager", YamlQuote(cpu_policy)},
      {"cpu_static", cpu_policy == "static"},
      {"cpu_static_implied", align && s.cpu_manager_policy.empty()},
      {"align", align},
      {"reserved_memory_total", YamlQuote(K8sBytes(reserved_memory))},
      {"has_reserved_cpus", s.reserved_cpus.has_value()},
      {"reserved_cpus", YamlQuote(s.reserved_cpus ? std::to_string(*s.reserved_cpus) : "")},
      {"has_reserved_memory", s.reserved_memory_bytes.has_value()},
      {"reserved_memory", YamlQuote(s.reserved_memory_bytes ? K8sBytes(*s.reserved_memory_bytes) : "")},
  };
  ctx["has_reserved"] = ctx["has_reserved_cpus"].get<bool>() || ctx["has_reserved_memory"].get<bool>();
  return ctx;
}

nlohmann::json LaunchContext(const model::Cluster& c, const Training& t, const HostNcclFiles& files, const std::string& name) {
  const model::Node& master = *t.nodes.front();
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : NcclEnv(c, files)) env.push_back({{"name", k}, {"value", ShellQuote(v)}});
  std::string train;
  for (const std::string& a : TrainCommand(c, t)) train += (train.empty() ? "" : " ") + ShellQuote(a);
  return {{"nodes", ShellQuote(std::to_string(t.nodes.size()))},
          {"node_count", std::to_string(t.nodes.size())},
          {"gpus", ShellQuote(std::to_string(t.gpus_per_node))},
          {"master_addr", ShellQuote(AddressOf(master))},
          {"master_name", master.name},
          {"master_port", ShellQuote(std::to_string(kRendezvousPort))},
          {"ipv6", AddressOf(master).find(':') != std::string::npos},
          {"rdzv_id", ShellQuote(name)},
          {"env", env},
          {"train", train}};
}

// The kubelet's single-numa-node policy admits a pod only when all its GPUs share a NUMA node
// (pkg/kubelet/cm/topologymanager/policy_single_numa_node.go, canAdmitPodResult). The training
// pod takes every GPU of its node; where they span NUMA nodes, every pod is rejected with
// TopologyAffinityError and the Job retries until it fails. Refused, as lint's
// k8s.single_numa_gpus says (#28 item 2: render wrote it and exited 0).
std::string SingleNumaWhyNot(const model::Cluster& c, const Training& t) {
  if (c.software.scheduler.topology_manager_policy != "single-numa-node") return "";
  for (const model::Node* n : t.nodes) {
    const model::Profile& p = c.ProfileOf(*n);
    std::optional<model::GpuNumaSpread> numa = model::GpuNumaOf(p);
    if (!numa || t.gpus_per_node <= numa->most) continue;
    return fmt::format("software.scheduler.topology_manager_policy is single-numa-node, and a training pod takes all {} "
                       "GPUs of its node while profile '{}' has at most {} on one NUMA node ({}): the kubelet would "
                       "reject every pod with TopologyAffinityError (lint k8s.single_numa_gpus); use restricted or "
                       "best-effort",
                       t.gpus_per_node, p.name, numa->most, numa->spread);
  }
  return "";
}

}  // namespace

void AddKubernetesJobs(const model::Cluster& c, const Options& o, Plan* plan) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kKubernetes) return;

  // Kubelet settings belong to every GPU node, whatever runs on it, with the unit drop-in
  // that makes the kubelet read them: it merges --config-dir's *.conf files over its
  // --config file only when the flag is given (cmd/kubelet/app/server.go, NewKubeletCommand:
  // "Merge the kubelet configurations if --config-dir is set", mergeKubeletConfigurations).
  for (const model::Node* n : SelectedNodes(c, o)) {
    if (c.ProfileOf(*n).gpu_count() == 0) continue;
    if (std::string why = KubeletWhyNot(c, *n); !why.empty()) {
      for (std::string_view path : {kKubeletPath, kKubeletUnitPath}) plan->skipped.push_back({n->name, std::string(path), why});
      continue;
    }
    plan->jobs.push_back({n->name, std::string(kKubeletPath), "k8s-kubelet-config.yaml.mustache", KubeletContext(c, *n),
                          CommentStyle::kHash, "0644"});
    plan->jobs.push_back({n->name, std::string(kKubeletUnitPath), "k8s-kubelet-service.conf.mustache",
                          {{"dropin_dir", std::string(kKubeletDropinDir)}}, CommentStyle::kHash, "0644"});
  }

  // What the files take for granted and gpuforge does not install (#28 item 12: the plan said
  // nothing of it): the kubelet's container runtime with NVIDIA's runtime, and the device
  // plugin that registers nvidia.com/gpu, which the Job asks for.
  plan->notes.push_back(
      {"", std::string(kKubeletDropinDir),
       "Kubernetes: gpuforge writes kubelet settings and the training Job, and assumes what it does not install: "
       "containerd (or CRI-O) with the NVIDIA Container Toolkit as its runtime, the NVIDIA device plugin "
       "registering nvidia.com/gpu (or the GPU Operator, which brings both), and Volcano when "
       "software.scheduler.volcano is set; install them before applying"});

  // The rest is cluster-wide: the same whichever nodes were selected.
  Training t = TrainingNodes(c);
  std::string name = K8sName(c.name) + "-fsdp";
  if (!t.why_not.empty()) {
    for (std::string_view path : {kQueuePath, kJobPath, kLaunchPath}) {
      plan->skipped.push_back({"", std::string(path), t.why_not});
    }
    return;
  }
  HostNcclFiles files = NcclFilesOnEveryNode(c, t);
  if (s.volcano) {
    plan->jobs.push_back({"", std::string(kQueuePath), "k8s-volcano-queue.yaml.mustache",
                          {{"name", YamlQuote(K8sName(c.name))}, {"gpu_resource", YamlQuote(GpuResource(c, t))}, {"gpus", c.TotalGpus()}},
                          CommentStyle::kHash, "0644"});
    PodSize size = SizePod(c, t);
    std::string rdma_resource = RdmaResource(t);
    if (RdmaCompute(c, t) && rdma_resource.empty()) {
      // Without the device plugin's resource the pod gets no /dev/infiniband and NCCL runs
      // over TCP on whatever interface it finds: refused rather than written to run slow.
      plan->skipped.push_back(
          {"", std::string(kJobPath),
           "the training nodes have InfiniBand/RoCE NICs but defaults.vars.k8s_rdma_resource is unset; name the "
           "resource the RDMA device plugin registers (rdma/ib, rdma/rdma_shared_device_a, nvidia.com/hostdev), or the "
           "pods get no RDMA device and NCCL falls back to TCP sockets"});
    } else if (std::string why = rdma_resource.empty() ? "" : ExtendedResourceWhyNot(rdma_resource); !why.empty()) {
      plan->skipped.push_back({"", std::string(kJobPath),
                               fmt::format("defaults.vars.k8s_rdma_resource '{}' is not a Kubernetes extended resource "
                                           "name: {}; the API server would refuse the Job",
                                           rdma_resource, why)});
    } else if (!size.why_not.empty()) {
      plan->skipped.push_back({"", std::string(kJobPath), size.why_not});
    } else if (std::string why = SingleNumaWhyNot(c, t); !why.empty()) {
      plan->skipped.push_back({"", std::string(kJobPath), why});
    } else {
      plan->jobs.push_back({"", std::string(kJobPath), "k8s-volcano-job.yaml.mustache", JobContext(c, t, files, size, name),
                            CommentStyle::kHash, "0644"});
      if (Var(t, "train_image").empty()) {
        plan->notes.push_back({"", std::string(kJobPath),
                               fmt::format("the Job's image is the placeholder {} (RFC 2606 .invalid: it can never pull); "
                                           "set defaults.vars.train_image to your training image, or the pods stay in "
                                           "ImagePullBackOff",
                                           kPlaceholderImage)});
      }
    }
  } else {
    for (std::string_view path : {kQueuePath, kJobPath}) {
      plan->skipped.push_back({"", std::string(path),
                               "software.scheduler.volcano is false; a Volcano Job and Queue need the Volcano scheduler "
                               "(guide 000: \"Kubernetes (with Volcano or Kueue)\"); set volcano: true once it is installed"});
    }
  }
  plan->jobs.push_back({"", std::string(kLaunchPath), "launch-fsdp.sh.mustache", LaunchContext(c, t, files, name),
                        CommentStyle::kHash, "0755"});
}

}  // namespace gpuforge::render
