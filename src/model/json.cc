#include "gpuforge/model/json.h"

#include "gpuforge/base/schemas.h"

namespace gpuforge::model {

namespace {

using J = nlohmann::ordered_json;

template <class T>
J Opt(const std::optional<T>& v) {
  return v ? J(*v) : J(nullptr);
}

J Where(const SourcePos& p) {
  if (p.line <= 0) return nullptr;
  return J{{"file", p.file}, {"line", p.line}, {"col", p.col}};
}

J SshJson(const SshSettings& s) {
  J j = {{"user", s.user}, {"port", s.port}};
  if (!s.identity_file.empty()) j["identity_file"] = s.identity_file;
  if (!s.jump.empty()) j["jump"] = s.jump;
  if (s.sudo) j["sudo"] = true;
  return j;
}

J ProfileJson(const Profile& p) {
  J gpus = J::array();
  for (const GpuSpec& g : p.gpus) {
    J gj = {{"model", g.model},
            {"generation", g.generation},
            {"count", g.count},
            {"memory_bytes", g.memory_bytes},
            {"tdp_w", g.tdp_w},
            {"form_factor", ToString(g.form_factor)},
            {"nvswitch", g.nvswitch},
            {"nvlink_bytes_per_s", g.nvlink_bytes_per_s}};
    if (!g.pci_bus_ids.empty()) gj["pci"] = g.pci_bus_ids;
    if (!g.numa_nodes.empty()) gj["numa"] = g.numa_nodes;
    gpus.push_back(std::move(gj));
  }
  J nics = J::array();
  for (const NicSpec& n : p.nics) {
    J nj = {{"name", n.name}, {"kind", ToString(n.kind)}, {"rate_bytes_per_s", n.rate_bytes_per_s}, {"port", n.port}};
    if (n.numa_node) nj["numa"] = *n.numa_node;
    if (!n.pci_bus_id.empty()) nj["pci"] = n.pci_bus_id;
    if (n.rail) nj["rail"] = *n.rail;
    if (!n.network.empty()) nj["network"] = n.network;
    if (!n.netdev.empty()) nj["netdev"] = n.netdev;
    nics.push_back(std::move(nj));
  }
  return J{{"name", p.name},
           {"gpus", gpus},
           {"cpu", {{"model", p.cpu.model}, {"sockets", p.cpu.sockets}, {"cores_per_socket", p.cpu.cores_per_socket},
                    {"threads_per_core", p.cpu.threads_per_core}}},
           {"memory_bytes", p.memory_bytes},
           {"nvme", {{"count", p.nvme.count}, {"size_bytes", p.nvme.size_bytes},
                     {"read_bytes_per_s", p.nvme.read_bytes_per_s}, {"write_bytes_per_s", p.nvme.write_bytes_per_s}}},
           {"nics", nics},
           {"node_power_w", p.node_power_w()},
           {"where", Where(p.where)}};
}

}  // namespace

nlohmann::ordered_json ToJson(const Cluster& c) {
  J j;
  j["schema"] = schemas::kInventory;
  j["name"] = c.name;
  j["source_file"] = c.source_file;
  j["site"] = {{"rack_power_limit_w", Opt(c.site.rack_power_limit_w)},
               {"cooling", ToString(c.site.cooling)},
               {"power_price_per_kwh", Opt(c.site.power_price_per_kwh)},
               {"pue", c.site.pue}};
  j["economics"] = {{"capex", Opt(c.economics.capex)},
                    {"gpu_unit_price", Opt(c.economics.gpu_unit_price)},
                    {"rent_per_gpu_hour", Opt(c.economics.rent_per_gpu_hour)},
                    {"opex_per_year", Opt(c.economics.opex_per_year)}};
  j["racks"] = J::array();
  for (const Rack& r : c.racks) {
    j["racks"].push_back({{"name", r.name},
                          {"power_limit_w", Opt(c.RackPowerLimitW(r))},
                          {"cooling", ToString(c.RackCooling(r))}});
  }
  j["profiles"] = J::array();
  for (const Profile& p : c.profiles) j["profiles"].push_back(ProfileJson(p));
  j["groups"] = J::array();
  for (const Group& g : c.groups) j["groups"].push_back({{"name", g.name}, {"vars", g.vars}});
  j["nodes"] = J::array();
  for (const Node& n : c.nodes) {
    j["nodes"].push_back({{"name", n.name},
                          {"address", n.address},
                          {"rack", n.rack},
                          {"profile", n.profile},
                          {"role", ToString(n.role)},
                          {"groups", n.groups},
                          {"ssh", SshJson(n.ssh)},
                          {"vars", n.vars}});
  }
  j["networks"] = J::array();
  for (const Network& n : c.networks) {
    j["networks"].push_back({{"name", n.name},
                             {"role", ToString(n.role)},
                             {"kind", ToString(n.kind)},
                             {"rate_bytes_per_s", n.rate_bytes_per_s},
                             {"topology", ToString(n.topology)}});
  }
  j["switches"] = J::array();
  for (const Switch& s : c.switches) {
    j["switches"].push_back({{"name", s.name},
                             {"tier", ToString(s.tier)},
                             {"network", s.network},
                             {"model", s.model},
                             {"ports", s.ports},
                             {"port_rate_bytes_per_s", s.port_rate_bytes_per_s}});
  }
  j["links"] = J::array();
  for (const Link& l : c.links) {
    j["links"].push_back({{"from", l.a.ToString()}, {"to", l.b.ToString()}, {"rate_bytes_per_s", l.rate_bytes_per_s}});
  }
  J tiers = J::array();
  for (const StorageTier& t : c.storage.tiers) {
    tiers.push_back({{"name", t.name},
                     {"kind", ToString(t.kind)},
                     {"role", ToString(t.role)},
                     {"scope", ToString(t.scope)},
                     {"read_bytes_per_s", t.read_bytes_per_s},
                     {"write_bytes_per_s", t.write_bytes_per_s},
                     {"latency_s", Opt(t.latency_s)},
                     {"capacity_bytes", t.capacity_bytes},
                     {"network", t.network},
                     {"mount", t.mount},
                     {"checkpoints", t.checkpoints}});
  }
  j["storage"] = {{"dataset_bytes", Opt(c.storage.dataset_bytes)}, {"tiers", tiers}};
  const Software& s = c.software;
  J env = J::object();
  for (const auto& [k, v] : s.nccl_env) env[k] = v;
  J parts = J::array();
  for (const Partition& p : s.scheduler.partitions) {
    parts.push_back({{"name", p.name}, {"nodes", p.nodes}, {"default", p.is_default}, {"max_time_s", Opt(p.max_time_s)}});
  }
  j["software"] = {
      {"os", {{"distro", s.os_distro}, {"version", s.os_version}}},
      {"driver", {{"branch", s.driver_branch}, {"version", s.driver_version}}},
      {"cuda", s.cuda_version},
      {"nccl", {{"version", s.nccl_version}, {"env", env}, {"topo_file", s.nccl_topo_file}}},
      {"rdma", {{"kind", s.ofed_kind}, {"version", s.rdma_core_version}}},
      {"scheduler",
       {{"kind", ToString(s.scheduler.kind)},
        {"controller", s.scheduler.controller},
        {"partitions", parts},
        {"gres_autodetect", s.scheduler.gres_autodetect_nvml ? "nvml" : "off"},
        {"volcano", s.scheduler.volcano},
        {"topology_manager_policy", s.scheduler.topology_manager_policy},
        {"cpu_manager_policy", s.scheduler.cpu_manager_policy},
        {"reserved_cpus", Opt(s.scheduler.reserved_cpus)},
        {"reserved_memory_bytes", Opt(s.scheduler.reserved_memory_bytes)}}}};
  if (c.workload.present) {
    const Workload& w = c.workload;
    j["workload"] = {{"params", w.params},
                     {"precision", w.precision},
                     {"optimizer", w.optimizer},
                     {"parallelism", {{"data", w.parallelism.data}, {"tensor", w.parallelism.tensor}, {"pipeline", w.parallelism.pipeline}}},
                     {"checkpoint_interval_s", Opt(w.checkpoint_interval_s)},
                     {"read_bytes_per_s_per_gpu", w.read_bytes_per_s_per_gpu}};
  } else {
    j["workload"] = nullptr;
  }
  j["lint"] = {{"thresholds", c.lint.thresholds.values}, {"disable", c.lint.disabled}};
  j["validation"] = {{"profile", c.validation.profile}, {"thresholds", c.validation.thresholds.values}};
  j["totals"] = {{"nodes", c.nodes.size()}, {"gpus", c.TotalGpus()}};
  return j;
}

}  // namespace gpuforge::model
