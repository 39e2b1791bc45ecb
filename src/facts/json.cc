#include "gpuforge/facts/json.h"

#include <fmt/format.h>

#include <map>

#include "facts/pci_tree.h"

namespace gpuforge::facts {
namespace {

using J = nlohmann::ordered_json;

template <class T>
J Opt(const std::optional<T>& v) {
  return v ? J(*v) : J(nullptr);
}

std::string Bytes(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

J ToJson(const NodeFacts& f) {
  J j;
  j["node"] = f.node;
  J sections = J::array();
  for (const Section& s : f.sections) {
    J e = {{"name", s.name}, {"command", s.command}, {"outcome", ToString(s.outcome)}};
    if (s.outcome != Outcome::kAbsent) e["exit_code"] = s.exit_code;
    if (!s.first_line.empty()) e["first_line"] = s.first_line;
    sections.push_back(std::move(e));
  }
  j["sections"] = std::move(sections);
  j["notes"] = f.notes;
  j["os"] = f.os ? J{{"id", f.os->id}, {"version_id", f.os->version_id}, {"pretty_name", f.os->pretty_name}}
                 : J(nullptr);
  j["kernel"] = Opt(f.kernel);
  if (f.cpu) {
    j["cpu"] = {{"model", f.cpu->model},
                {"cpus", Opt(f.cpu->cpus)},
                {"online", f.cpu->online_cpus},
                {"sockets", Opt(f.cpu->sockets)},
                {"cores_per_socket", Opt(f.cpu->cores_per_socket)},
                {"threads_per_core", Opt(f.cpu->threads_per_core)},
                {"numa_nodes", Opt(f.cpu->numa_nodes)}};
  } else {
    j["cpu"] = nullptr;
  }
  j["memory_bytes"] = Opt(f.memory_bytes);
  J numa = J::array();
  for (const NumaNode& n : f.numa) {
    numa.push_back({{"id", n.id}, {"cpus", n.cpulist}, {"memory_bytes", Opt(n.memory_bytes)}});
  }
  j["numa"] = std::move(numa);
  J pci = J::array();
  for (const PciDevice& d : f.pci) {
    pci.push_back({{"bdf", d.bdf},
                   {"kind", d.kind == PciKind::kGpu ? "gpu" : "nic"},
                   {"vendor", fmt::format("0x{:04x}", d.vendor)},
                   {"device", fmt::format("0x{:04x}", d.device)},
                   {"class", fmt::format("0x{:06x}", d.class_code)},
                   {"numa_node", Opt(d.numa_node)},
                   {"link_speed_gts", Opt(d.link_speed_gts)},
                   {"max_link_speed_gts", Opt(d.max_link_speed_gts)},
                   {"link_width", Opt(d.link_width)},
                   {"max_link_width", Opt(d.max_link_width)},
                   {"netdevs", d.netdevs},
                   {"rdma_devices", d.rdma_devices}});
  }
  j["pci"] = std::move(pci);
  j["driver"] = f.driver ? J{{"version", f.driver->version}, {"open_kernel_module", f.driver->open_kernel_module}}
                         : J(nullptr);
  J gpus = J::array();
  for (const Gpu& g : f.gpus) {
    J e = {{"index", g.index},
           {"name", g.name},
           {"uuid", g.uuid},
           {"pci_bus_id", g.pci_bus_id},
           {"pci_device_id", g.pci_device_id ? J(fmt::format("0x{:04x}", *g.pci_device_id)) : J(nullptr)},
           {"driver_version", g.driver_version},
           {"vbios_version", g.vbios_version},
           {"memory_total_bytes", Opt(g.memory_total_bytes)},
           {"power_limit_w", Opt(g.power_limit_w)},
           {"power_draw_w", Opt(g.power_draw_w)},
           {"temperature_c", Opt(g.temperature_c)},
           {"ecc_enabled", Opt(g.ecc_enabled)},
           {"ecc_uncorrected_volatile", Opt(g.ecc_uncorrected_volatile)},
           {"pcie_gen", Opt(g.pcie_gen)},
           {"pcie_gen_max", Opt(g.pcie_gen_max)},
           {"pcie_width", Opt(g.pcie_width)},
           {"pcie_width_max", Opt(g.pcie_width_max)},
           {"max_sm_clock_mhz", Opt(g.max_sm_clock_mhz)},
           {"persistence_mode", Opt(g.persistence_mode)}};
    J errors = J::array();
    for (const GpuFieldError& x : g.errors) errors.push_back({{"field", x.field}, {"cell", x.cell}});
    e["errors"] = std::move(errors);
    if (g.detail) {
      const GpuDetail& d = *g.detail;
      e["detail"] = {{"product_name", d.product_name},
                     {"architecture", d.architecture},
                     {"performance_state", d.performance_state},
                     {"mig_enabled", Opt(d.mig_enabled)},
                     {"module_id", Opt(d.module_id)},
                     {"minor_number", Opt(d.minor_number)},
                     {"inforom_image", d.inforom_image},
                     {"gsp_firmware", d.gsp_firmware},
                     {"remapped_rows_pending", Opt(d.remapped_rows_pending)},
                     {"remapped_rows_failure", Opt(d.remapped_rows_failure)},
                     {"active_clock_event_reasons", d.active_clock_event_reasons},
                     {"fabric_state", d.fabric_state},
                     {"max_power_limit_w", Opt(d.max_power_limit_w)}};
    }
    gpus.push_back(std::move(e));
  }
  j["gpus"] = std::move(gpus);
  j["driver_cuda_version"] = Opt(f.driver_cuda_version);
  if (f.topology) {
    J rows = J::array();
    for (const TopoRow& r : f.topology->rows) {
      rows.push_back({{"device", r.device},
                      {"links", r.links},
                      {"cpu_affinity", r.cpu_affinity},
                      {"numa_affinity", r.numa_affinity},
                      {"gpu_numa_id", r.gpu_numa_id}});
    }
    J legend = J::array();
    for (const auto& [key, name] : f.topology->nic_legend) legend.push_back({{"nic", key}, {"device", name}});
    j["topology"] = {{"devices", f.topology->devices}, {"rows", std::move(rows)}, {"nic_legend", std::move(legend)}};
  } else {
    j["topology"] = nullptr;
  }
  j["pci_tree"] = f.pci_tree ? PciTreeToJson(*f.pci_tree) : J(nullptr);
  if (!f.pci_tree_refused.empty()) j["pci_tree_refused"] = f.pci_tree_refused;
  J ib = J::array();
  for (const IbDevice& d : f.ib) {
    J ports = J::array();
    for (const IbPort& p : d.ports) {
      ports.push_back({{"port", p.port},
                       {"state", p.state},
                       {"phys_state", p.phys_state},
                       {"rate", p.rate},
                       {"rate_gbps", Opt(p.rate_gbps)},
                       {"width", Opt(p.width)},
                       {"link_layer", p.link_layer},
                       {"lid", Opt(p.lid)},
                       {"port_guid", p.port_guid.empty() ? J(nullptr) : J(p.port_guid)}});
    }
    ib.push_back({{"name", d.name},
                  {"fw_version", d.fw_version},
                  {"board_id", d.board_id},
                  {"node_guid", d.node_guid.empty() ? J(nullptr) : J(d.node_guid)},
                  {"netdevs", d.netdevs},
                  {"ports", std::move(ports)}});
  }
  j["infiniband"] = std::move(ib);
  if (f.lldp) {
    J nb = J::array();
    for (const LldpNeighbor& n : f.lldp->neighbors) {
      nb.push_back({{"interface", n.local_if},
                    {"chassis_name", n.chassis_name},
                    {"chassis_id", n.chassis_id},
                    {"chassis_id_type", n.chassis_id_type},
                    {"port_id", n.port_id},
                    {"port_id_type", n.port_id_type},
                    {"port_descr", n.port_descr}});
    }
    j["lldp"] = std::move(nb);
  } else {
    j["lldp"] = nullptr;
  }
  J speeds = J::object();
  for (const auto& [n, v] : f.net_speed_mbps) speeds[n] = v;
  j["net_speed_mbps"] = std::move(speeds);
  J nvme = J::array();
  for (const NvmeDrive& d : f.nvme) nvme.push_back({{"name", d.name}, {"bytes", d.bytes}, {"model", d.model}});
  j["nvme"] = std::move(nvme);
  j["versions"] = {{"cuda", Opt(f.versions.cuda)},
                   {"nccl", Opt(f.versions.nccl)},
                   {"rdma_core", Opt(f.versions.rdma_core)},
                   {"ofed", Opt(f.versions.ofed)},
                   {"slurm", Opt(f.versions.slurm)}};
  j["modules"] = f.modules ? J(*f.modules) : J(nullptr);
  J services = J::object();
  for (const Service& s : f.services) services[s.name] = ToString(s.state);
  j["services"] = std::move(services);
  j["memlock"] = f.memlock ? (f.memlock->unlimited ? J("unlimited") : J(f.memlock->bytes)) : J(nullptr);
  return j;
}

J ToJson(const Drift& d) {
  return {{"code", d.code},         {"node", d.node},     {"subject", d.subject},
          {"expected", d.expected}, {"actual", d.actual}, {"message", d.message}};
}

std::string Summary(const NodeFacts& f) {
  std::vector<std::string> parts;
  if (f.os) parts.push_back(f.os->pretty_name.empty() ? f.os->id + " " + f.os->version_id : f.os->pretty_name);
  if (f.kernel) parts.push_back("kernel " + *f.kernel);
  if (f.cpu && f.cpu->sockets && f.cpu->cores_per_socket && f.cpu->threads_per_core) {
    parts.push_back(fmt::format("{}x{}x{} CPUs", *f.cpu->sockets, *f.cpu->cores_per_socket, *f.cpu->threads_per_core));
  }
  if (f.memory_bytes) parts.push_back(Bytes(*f.memory_bytes));
  if (f.HasNvidiaDriver()) {
    std::map<std::string, int> models;
    for (const Gpu& g : f.gpus) ++models[g.name.empty() ? std::string("unnamed GPU") : g.name];
    for (const auto& [name, n] : models) parts.push_back(fmt::format("{}x {}", n, name));
    if (auto v = f.DriverVersion()) parts.push_back("driver " + *v);
  } else if (f.PciGpuCount() > 0) {
    parts.push_back(fmt::format("{} NVIDIA GPUs on PCI but no driver answers", f.PciGpuCount()));
  } else {
    parts.push_back("no NVIDIA GPU");
  }
  if (f.versions.cuda) parts.push_back("CUDA " + *f.versions.cuda);
  if (f.versions.nccl) parts.push_back("NCCL " + *f.versions.nccl);
  int active = 0, ports = 0;
  for (const IbDevice& d : f.ib) {
    for (const IbPort& p : d.ports) {
      ++ports;
      active += p.state == "ACTIVE";
    }
  }
  if (ports > 0) parts.push_back(fmt::format("{}/{} RDMA ports active", active, ports));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace gpuforge::facts
