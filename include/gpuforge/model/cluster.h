#pragma once

// The typed cluster model: what the inventory says, resolved (hostlists expanded, profiles
// and variables merged, references checked). Every stage after inventory/ reads this and
// nothing else. Quantities are in base units: bytes, bytes/s, watts, seconds.

#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuforge/base/diag.h"

namespace gpuforge::model {

enum class Cooling { kAir, kLiquid };
enum class NetKind { kInfiniband, kRoce, kEthernet };
enum class NetRole { kCompute, kStorage, kControl };
enum class Topology { kUnspecified, kFatTree, kSpineLeaf, kRailOptimized, kSingleSwitch, kL2, kTorus };
enum class FormFactor { kSxm, kPcie };
enum class NodeRole { kCompute, kLogin, kController, kStorage };
enum class SwitchTier { kLeaf, kSpine, kCore };
enum class StorageKind { kLocalNvme, kLustre, kBeegfs, kNfs, kNas, kObject };
enum class StorageRole { kHot, kWarm, kCold };
enum class StorageScope { kNode, kCluster };  // per-node figures (local NVMe) or aggregate
enum class SchedulerKind { kNone, kSlurm, kKubernetes };

// Text forms, as written in the inventory ("infiniband", "spine", ...).
const char* ToString(Cooling v);
const char* ToString(NetKind v);
const char* ToString(NetRole v);
const char* ToString(Topology v);
const char* ToString(FormFactor v);
const char* ToString(NodeRole v);
const char* ToString(SwitchTier v);
const char* ToString(StorageKind v);
const char* ToString(StorageRole v);
const char* ToString(StorageScope v);
const char* ToString(SchedulerKind v);

struct Site {
  std::optional<double> rack_power_limit_w;  // default for racks that do not say
  Cooling cooling = Cooling::kAir;
  std::optional<double> power_price_per_kwh;  // currency per kWh
  double pue = 1.0;
  SourcePos where;
};

// Inputs of the build-vs-rent estimate; all in one currency, whichever the user uses.
struct Economics {
  std::optional<double> capex;               // whole cluster, bought outright
  std::optional<double> gpu_unit_price;      // used for capex when capex is absent
  std::optional<double> rent_per_gpu_hour;   // cloud price to compare with
  std::optional<double> opex_per_year;       // staff, support, space; power is computed
  SourcePos where;
};

struct Rack {
  std::string name;
  std::optional<double> power_limit_w;  // falls back to Site
  std::optional<Cooling> cooling;       // falls back to Site
  SourcePos where;
};

// One kind of GPU in a node; a profile normally has exactly one.
struct GpuSpec {
  std::string model;       // as written: "H200", "A100-80GB"
  std::string generation;  // from the catalogue: "hopper", "ampere", "blackwell"; "" unknown
  int count = 0;
  double memory_bytes = 0;
  double tdp_w = 0;
  FormFactor form_factor = FormFactor::kSxm;
  bool nvswitch = false;
  double nvlink_bytes_per_s = 0;  // per GPU, all links, one direction; 0 = no NVLink
  std::vector<std::string> pci_bus_ids;  // empty or one per GPU
  std::vector<int> numa_nodes;           // empty or one per GPU
  SourcePos where;
};

struct CpuSpec {
  std::string model;
  int sockets = 0;
  int cores_per_socket = 0;
  int threads_per_core = 1;
  SourcePos where;
};

struct NicSpec {
  std::string name;  // RDMA device or interface: mlx5_0, eth0
  NetKind kind = NetKind::kEthernet;
  double rate_bytes_per_s = 0;
  int port = 1;
  std::optional<int> numa_node;
  std::string pci_bus_id;  // "" when unknown
  std::optional<int> rail;
  std::string network;     // name of a Network; "" when not attached to one
  std::string netdev;      // kernel interface for sockets (ib0, ens1f0); "" when unknown
  SourcePos where;
};

struct NvmeSpec {
  int count = 0;
  double size_bytes = 0;  // per drive
  double read_bytes_per_s = 0;  // per drive
  double write_bytes_per_s = 0;  // per drive
};

// A node SKU. Nodes refer to one; node-level `overrides` produce a derived profile named
// "<profile>@<node>".
struct Profile {
  std::string name;
  std::vector<GpuSpec> gpus;
  CpuSpec cpu;
  double memory_bytes = 0;
  NvmeSpec nvme;
  std::vector<NicSpec> nics;
  std::optional<double> max_power_w;  // whole node at full load, when the vendor states it
  double other_power_w = 0;           // non-GPU draw used when max_power_w is absent
  bool virtual_machine = false;       // profiles.NAME.virtual: a VM (NCCL_IB_PCI_RELAXED_ORDERING)
  SourcePos where;

  int gpu_count() const;
  double gpu_power_w() const;
  double node_power_w() const;  // max_power_w, else GPUs' TDP + other_power_w
};

struct SshSettings {
  std::string user;
  int port = 22;
  std::string identity_file;
  std::string jump;  // [user@]host[:port], or another node's name
  bool sudo = false;  // a non-root user reaches root through `sudo -n` (no password, ever)
  // Whether some inventory level stated user / port; unstated ones may come from ~/.ssh/config.
  bool user_set = false;
  bool port_set = false;
};

// What the hosts and switches of a RoCE network must agree on (networks.NAME.roce). Defaults
// are the lossless RoCE profile NVIDIA's switches ship (RoCE traffic DSCP 26 on switch
// priority 3, PFC on that priority, ECN marking) and a 9000-byte MTU.
struct RoceSettings {
  int mtu = 9000;
  int dscp = 26;
  int pfc_priority = 3;
  bool ecn = true;
  std::optional<int> gid_index;  // NCCL_IB_GID_INDEX pin; unset = NCCL picks the RoCE v2 IPv4 GID
  SourcePos where;
};

struct Node {
  std::string name;
  std::string address;
  std::string rack;  // "" when not racked
  std::string profile;  // name in Cluster::profiles (a derived one when overridden)
  NodeRole role = NodeRole::kCompute;
  std::vector<std::string> groups;
  SshSettings ssh;                           // resolved: defaults < profile < group < node
  std::map<std::string, std::string> vars;   // resolved likewise
  SourcePos where;                           // the entry (hostlist) that declared it
  // RoCE port addresses (nodes[].port_addresses): NIC name -> IPv4 "198.18.8.1/24".
  std::map<std::string, std::string> port_addresses;
};

struct Group {
  std::string name;
  SshSettings ssh;  // only the fields the group sets are meaningful
  std::map<std::string, std::string> vars;
  SourcePos where;
};

struct Network {
  std::string name;
  NetRole role = NetRole::kCompute;
  NetKind kind = NetKind::kEthernet;
  double rate_bytes_per_s = 0;  // per port / per NIC
  Topology topology = Topology::kUnspecified;
  SourcePos where;
  std::optional<RoceSettings> roce;  // networks.NAME.roce; kind roce without it: the defaults
};

struct Switch {
  std::string name;
  SwitchTier tier = SwitchTier::kLeaf;
  std::string network;  // the fabric it belongs to
  std::string model;
  int ports = 0;
  double port_rate_bytes_per_s = 0;
  // How the measured fabric names this switch and its ports (#31, docs/cabling.md): other
  // names it answers to (its IB node GUID "0x...", its LLDP system name), and the name its OS
  // gives port N ("swp{port}", "Ethernet{port0*4}"); "" reads the last number of the name.
  std::vector<std::string> aliases;
  std::string port_pattern;
  SourcePos where;
};

// One end of a cable: a node's NIC, or a switch port.
struct Endpoint {
  enum class Kind { kNic, kSwitchPort };
  Kind kind = Kind::kNic;
  std::string device;  // node or switch name
  std::string nic;     // for kNic
  int port = 0;        // for kSwitchPort (1-based)
  std::string ToString() const;  // "gpu001:mlx5_0" or "leaf1:12"
};

struct Link {
  Endpoint a;
  Endpoint b;
  double rate_bytes_per_s = 0;  // the slower end's rate, or as written
  SourcePos where;
};

struct StorageTier {
  std::string name;
  StorageKind kind = StorageKind::kLocalNvme;
  StorageRole role = StorageRole::kHot;
  StorageScope scope = StorageScope::kCluster;
  double read_bytes_per_s = 0;   // aggregate (kCluster) or per node (kNode)
  double write_bytes_per_s = 0;  // likewise; 0 = unknown
  std::optional<double> latency_s;
  double capacity_bytes = 0;     // aggregate or per node, likewise
  std::string network;
  std::string mount;
  bool checkpoints = false;  // checkpoints are written here
  SourcePos where;
};

struct Storage {
  std::optional<double> dataset_bytes;
  std::vector<StorageTier> tiers;
  SourcePos where;
};

struct Partition {
  std::string name;
  std::vector<std::string> nodes;  // expanded
  bool is_default = false;
  std::optional<double> max_time_s;
};

struct Scheduler {
  SchedulerKind kind = SchedulerKind::kNone;
  std::string controller;  // node name (Slurm controller / Kubernetes control plane)
  std::vector<Partition> partitions;
  bool gres_autodetect_nvml = false;  // slurmd built with NVML
  // Slurm's configless mode (software.scheduler.configless): nullopt = auto, on above
  // render/slurm.cc's kConfiglessAboveNodes Slurm nodes; true / false as the inventory says.
  std::optional<bool> configless;
  bool volcano = false;
  std::string topology_manager_policy;  // kubelet: none|best-effort|restricted|single-numa-node
  std::string cpu_manager_policy;       // kubelet: none|static
  std::optional<int> reserved_cpus;
  std::optional<double> reserved_memory_bytes;
  SourcePos where;
  // Slurm's munge key (#14): the operator's key file, resolved against the inventory's
  // directory; "" = none named. Only the path: plan and apply read the bytes, nothing else does.
  std::string munge_key;
  SourcePos munge_key_where;
  // slurm.conf's HealthCheck* lines and the program they run (#16 part 5); unset = none.
  struct HealthCheck {
    int interval_s = 0;                   // HealthCheckInterval, 1..65535
    std::vector<std::string> node_state;  // HealthCheckNodeState words (ALLOC, ...); empty = Slurm's ANY
    SourcePos where;
  };
  std::optional<HealthCheck> health_check;
  // Slurm accounting through slurmdbd (software.scheduler.accounting, #14); unset = none.
  struct Accounting {
    std::string host;                        // node slurmdbd runs on (default: the controller)
    std::string storage_host = "localhost";  // the MariaDB/MySQL server slurmdbd stores into
    int storage_port = 3306;
    std::string storage_user = "slurm";
    std::string database = "slurm_acct_db";  // slurmdbd.conf StorageLoc
    // The database password's file on this machine, resolved against the inventory's
    // directory. Only the path: plan and apply read the bytes (a secret, never printed).
    std::string storage_pass_file;
    SourcePos storage_pass_where;
    SourcePos where;
    // The database runs on the slurmdbd node: gpuforge plans its server and settings there.
    bool LocalDatabase() const { return storage_host == "localhost" || storage_host == "127.0.0.1"; }
  };
  std::optional<Accounting> accounting;
};

// A package repository gpuforge writes onto nodes (apt sources.list.d or yum.repos.d), so the
// pinned packages come from where the inventory says.
struct Repository {
  std::string name;        // [A-Za-z0-9_.-]; the file is gpuforge-NAME.list / .repo
  std::string url;         // http(s):// or file:/ URL of the repository root
  std::string suite = "./";  // apt: "./" for a flat repository, else a suite (bookworm)
  std::vector<std::string> components;  // apt: main, contrib; empty for a flat repository
  std::string signed_by;   // path of the key on the node (apt signed-by, dnf gpgkey)
  bool trusted = false;    // no signature check (local test repositories only)
  SourcePos where;
};

// A package the inventory asks for beyond the ones gpuforge derives (the DCGM exporter, a
// site agent), optionally with a service it must keep enabled and running.
struct ExtraPackage {
  std::string name;     // as the node's package manager names it
  std::string version;  // pin, "" = any
  std::string service;  // systemd unit to enable and start, "" = none
  SourcePos where;
};

struct Software {
  std::string os_distro;
  std::string os_version;
  std::string driver_branch;   // "560"
  std::string driver_version;  // "560.35.03"
  std::string cuda_version;
  std::string nccl_version;
  std::string rdma_core_version;  // rdma-core or MLNX_OFED / DOCA OFED version
  std::string ofed_kind;          // "rdma-core" | "mlnx-ofed" | "doca-ofed" | ""
  std::vector<std::pair<std::string, std::string>> nccl_env;  // in written order
  std::string nccl_topo_file;  // NCCL_TOPO_FILE path, "" when unset
  Scheduler scheduler;
  std::vector<Repository> repositories;
  std::vector<ExtraPackage> packages;
  SourcePos where;
  SourcePos nccl_where;
  // The driver stack (#14 OS; model/driver_stack.h decides from these):
  std::string os_kernel;              // software.os.kernel "6.8", "" = the release's own
  std::string driver_kernel_modules;  // software.driver.kernel_modules "open" | "proprietary" | ""
  std::string gpudirect;              // software.rdma.gpudirect "dma-buf" | "peermem" | ""
  std::string memlock_group;          // software.os.memlock_group: memlock unlimited for @group only
  std::string dcgm_exporter;          // software.monitoring.dcgm_exporter "host" | "external" | "" (model/driver_stack.h)
  SourcePos rdma_where;               // software.rdma, for lint
};

struct Parallelism {
  int data = 1;
  int tensor = 1;
  int pipeline = 1;
};

struct Workload {
  bool present = false;
  double params = 0;                // model parameters
  std::string precision = "bf16";   // gradient precision: fp32|bf16|fp16|fp8
  std::string optimizer = "adam";   // adam|adamw|sgd
  Parallelism parallelism;
  std::optional<double> checkpoint_interval_s;
  double read_bytes_per_s_per_gpu = 0;  // data loading need; 0 = use the guide's 1 GB/s
  SourcePos where;

  double gradient_bytes_per_param() const;    // 4, 2, 2, 1
  double checkpoint_bytes_per_param() const;  // weights + optimizer state (mixed precision)
};

// Threshold overrides keyed by "<rule or check id>.<parameter>", e.g.
// "fabric.ethernet_scale.max_gpus": 32.
struct Overrides {
  // What the loader read the text as (a plain number, or the first dimension that parsed it).
  // Only the stage that knows the threshold's unit can tell a bandwidth from a size: lint and
  // validate read `text` again with quantity::ParseInUnit (issue #28 item 1).
  std::map<std::string, double> values;
  std::map<std::string, std::string> text;  // the scalar as written
  std::map<std::string, SourcePos> where;
};

struct LintSettings {
  Overrides thresholds;
  std::vector<std::string> disabled;  // rule ids
};

struct ValidationSettings {
  std::string profile = "default";
  Overrides thresholds;
  SourcePos where;
};

struct Cluster {
  std::string name;
  std::string source_file;  // the inventory it was loaded from
  Site site;
  Economics economics;
  std::vector<Rack> racks;
  std::vector<Profile> profiles;
  std::vector<Group> groups;
  std::vector<Node> nodes;
  std::vector<Network> networks;
  std::vector<Switch> switches;
  std::vector<Link> links;
  Storage storage;
  Software software;
  Workload workload;
  LintSettings lint;
  ValidationSettings validation;

  // Lookups by name; nullptr when absent.
  const Profile* FindProfile(std::string_view name) const;
  const Node* FindNode(std::string_view name) const;
  const Rack* FindRack(std::string_view name) const;
  const Network* FindNetwork(std::string_view name) const;
  const Switch* FindSwitch(std::string_view name) const;
  const Profile& ProfileOf(const Node& n) const;  // the loader guarantees it exists

  // Name lookups above are linear scans until BuildIndex() is called (the loader calls it);
  // a stale index (vectors changed since) is detected per lookup and falls back to the scan.
  void BuildIndex();

  int TotalGpus() const;  // over all nodes
  std::vector<const Node*> ComputeNodes() const;
  std::optional<double> RackPowerLimitW(const Rack& r) const;
  Cooling RackCooling(const Rack& r) const;
  const Network* ComputeNetwork() const;  // the first network with role compute

 private:
  std::unordered_map<std::string, std::size_t> node_index_, profile_index_, switch_index_, rack_index_;
};

}  // namespace gpuforge::model
