#pragma once

// The keys each object of an inventory file accepts, in one table: the loader checks maps
// against it (unknown keys, "did you mean"), and a test holds docs/inventory.md to it, so a
// key cannot be added to one without the other.

#include <span>
#include <string_view>

namespace gpuforge::inventory::schema {

inline constexpr std::string_view kInventory[] = {
    "version",  "cluster",  "racks",   "defaults", "profiles", "groups",   "nodes",     "networks",
    "switches", "links",    "storage", "software", "workload", "lint",     "validation"};
inline constexpr std::string_view kCluster[] = {"name", "site", "economics"};
inline constexpr std::string_view kSite[] = {"rack_power_limit", "cooling", "power_price_per_kwh", "pue"};
inline constexpr std::string_view kEconomics[] = {"capex", "gpu_unit_price", "rent_per_gpu_hour",
                                                  "opex_per_year"};
inline constexpr std::string_view kRack[] = {"power_limit", "cooling"};
inline constexpr std::string_view kDefaults[] = {"ssh", "vars"};
inline constexpr std::string_view kSsh[] = {"user", "port", "identity_file", "jump", "sudo"};
inline constexpr std::string_view kProfile[] = {"gpus", "cpu",   "memory", "nvme",
                                                "nics", "power", "ssh",    "vars", "virtual"};
inline constexpr std::string_view kGpu[] = {"model", "count",           "memory", "tdp", "form_factor",
                                            "nvswitch", "nvlink_bandwidth", "pci", "numa"};
inline constexpr std::string_view kCpu[] = {"model", "sockets", "cores_per_socket", "threads_per_core"};
inline constexpr std::string_view kNvme[] = {"count", "size", "read_bandwidth", "write_bandwidth"};
inline constexpr std::string_view kPower[] = {"max", "other"};
inline constexpr std::string_view kNic[] = {"name", "kind", "rate",    "port",  "numa",
                                            "pci",  "rail", "network", "netdev"};
inline constexpr std::string_view kGroup[] = {"ssh", "vars"};
inline constexpr std::string_view kNode[] = {"name",   "address", "rack", "profile",  "role",
                                             "groups", "ssh",     "vars", "overrides",
                                             "port_addresses"};
inline constexpr std::string_view kNetwork[] = {"role", "kind", "rate", "topology", "roce"};
inline constexpr std::string_view kRoce[] = {"mtu", "dscp", "pfc_priority", "ecn", "gid_index"};
inline constexpr std::string_view kSwitch[] = {"name",      "tier",    "network",     "model",
                                               "ports",     "port_rate", "aliases", "port_pattern"};
inline constexpr std::string_view kLink[] = {"from", "to", "rate"};
inline constexpr std::string_view kStorage[] = {"dataset", "tiers"};
inline constexpr std::string_view kTier[] = {"name",     "kind",    "role",    "scope",
                                             "read_bandwidth", "write_bandwidth", "latency",
                                             "capacity", "network", "mount",   "checkpoints"};
inline constexpr std::string_view kSoftware[] = {"os",        "driver",       "cuda",     "nccl",      "rdma",
                                                 "scheduler", "repositories", "packages", "monitoring"};
inline constexpr std::string_view kMonitoring[] = {"dcgm_exporter"};
inline constexpr std::string_view kExtraPackage[] = {"name", "version", "service"};
inline constexpr std::string_view kRepository[] = {"name", "url", "suite", "components", "signed_by", "trusted"};
inline constexpr std::string_view kOs[] = {"distro", "version", "kernel", "memlock_group"};
inline constexpr std::string_view kDriver[] = {"branch", "version", "kernel_modules"};
inline constexpr std::string_view kNccl[] = {"version", "env", "topo_file"};
inline constexpr std::string_view kRdma[] = {"kind", "version", "gpudirect"};
inline constexpr std::string_view kScheduler[] = {"kind",
                                                  "controller",
                                                  "partitions",
                                                  "gres_autodetect",
                                                  "configless",
                                                  "volcano",
                                                  "topology_manager_policy",
                                                  "cpu_manager_policy",
                                                  "reserved",
                                                  "munge_key",
                                                  "health_check",
                                                  "accounting"};
inline constexpr std::string_view kReserved[] = {"cpus", "memory"};
inline constexpr std::string_view kHealthCheck[] = {"interval", "node_state"};
inline constexpr std::string_view kAccounting[] = {"host",         "storage_host", "storage_port",
                                                   "storage_user", "database",     "storage_pass_file"};
inline constexpr std::string_view kPartition[] = {"name", "nodes", "default", "max_time"};
inline constexpr std::string_view kWorkload[] = {"params",      "precision",           "optimizer",
                                                 "parallelism", "checkpoint_interval", "read_bandwidth_per_gpu"};
inline constexpr std::string_view kParallelism[] = {"data", "tensor", "pipeline"};
inline constexpr std::string_view kLint[] = {"thresholds", "disable"};
inline constexpr std::string_view kValidation[] = {"profile", "thresholds"};

// One object of the file: where it sits (as docs/inventory.md titles its section) and its keys.
struct Object {
  std::string_view path;
  std::span<const std::string_view> keys;
};

inline constexpr Object kObjects[] = {
    {"inventory", kInventory},
    {"cluster", kCluster},
    {"cluster.site", kSite},
    {"cluster.economics", kEconomics},
    {"racks.NAME", kRack},
    {"defaults", kDefaults},
    {"ssh", kSsh},
    {"profiles.NAME", kProfile},
    {"profiles.NAME.gpus", kGpu},
    {"profiles.NAME.cpu", kCpu},
    {"profiles.NAME.nvme", kNvme},
    {"profiles.NAME.power", kPower},
    {"profiles.NAME.nics[]", kNic},
    {"groups.NAME", kGroup},
    {"nodes[]", kNode},
    {"networks.NAME", kNetwork},
    {"networks.NAME.roce", kRoce},
    {"switches[]", kSwitch},
    {"links[]", kLink},
    {"storage", kStorage},
    {"storage.tiers[]", kTier},
    {"software", kSoftware},
    {"software.os", kOs},
    {"software.driver", kDriver},
    {"software.nccl", kNccl},
    {"software.rdma", kRdma},
    {"software.repositories[]", kRepository},
    {"software.packages[]", kExtraPackage},
    {"software.monitoring", kMonitoring},
    {"software.scheduler", kScheduler},
    {"software.scheduler.reserved", kReserved},
    {"software.scheduler.health_check", kHealthCheck},
    {"software.scheduler.accounting", kAccounting},
    {"software.scheduler.partitions[]", kPartition},
    {"workload", kWorkload},
    {"workload.parallelism", kParallelism},
    {"lint", kLint},
    {"validation", kValidation},
};

}  // namespace gpuforge::inventory::schema
