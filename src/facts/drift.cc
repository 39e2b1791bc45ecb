#include "gpuforge/facts/drift.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "facts/drift_topology.h"
#include "facts/text.h"
#include "gpuforge/facts/ib_link.h"
#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::facts {

namespace {

constexpr std::array kCodes = {
    DriftCode{"facts.unavailable", "the node's facts could not be gathered or parsed",
              "fix what the message names (SSH, shell, garbage output), then gather again",
              "style.md: an error is never a pass"},
    DriftCode{"facts.section_unparsed",
              "one optional section of the node's output could not be read; its facts are "
              "missing, every other section still counts",
              "run the command the finding names on the node and compare its output with "
              "docs/facts.md; report the output if the node is healthy",
              "issue #15 item 3: one broken section must not cost the node"},
    DriftCode{"facts.section_too_large",
              "one section's output was over its cap (docs/facts.md lists each) and was not read",
              "run the command on the node: output that large is garbage or a runaway tool",
              "issue #12 item 9: bounded memory per node"},
    DriftCode{"facts.unknown_node", "facts were gathered for a node the inventory does not have",
              "add the node to the inventory or drop it from the run", "inventory"},
    DriftCode{"gpu.no_driver", "the profile has GPUs but nvidia-smi is absent or fails",
              "install or load the NVIDIA driver (nvidia-smi must list the GPUs)",
              "guide 000, Software Stack: GPU drivers"},
    DriftCode{"gpu.count", "nvidia-smi lists a different number of GPUs than the profile",
              "compare with the PCI bus count in the message: fewer on the bus means a GPU fell "
              "off (reseat, check dmesg for Xid 79)",
              "inventory profile gpus[].count"},
    DriftCode{"gpu.model",
              "a GPU is not the model the profile names: its PCI device id is not one of the "
              "model's, or its memory size is not the model's (names are display only)",
              "fix the inventory or the hardware; mixed SKUs create topology problems",
              "guide 000, GPU Selection: one SKU per cluster; PCI ids from pci.ids"},
    DriftCode{"gpu.field_error",
              "nvidia-smi answered a GPU's field with an error ([GPU requires reset], "
              "[Unknown Error], [GPU is lost]) instead of a value",
              "drain the node; nvidia-smi -q -i <index> and dmesg (Xid) for that GPU; a GPU that "
              "requires reset needs nvidia-smi -r or a reboot, one that is lost a reseat or RMA",
              "nvidia-smi prints NVML errors in brackets (github.com/Quake4/MindMiner/issues/627)"},
    DriftCode{"gpu.persistence", "persistence mode is off",
              "enable nvidia-persistenced (or nvidia-smi -pm 1)",
              "anchors.md, Provisioning conventions: nvidia-persistenced enabled"},
    DriftCode{"gpu.ecc_uncorrected", "a GPU has uncorrected volatile ECC errors",
              "drain the node; reset the GPU or RMA it",
              "anchors.md, Acceptance thresholds: any uncorrectable ECC error fails"},
    DriftCode{"gpu.row_remap", "a GPU has a row remap pending or failed",
              "pending: reset the GPU; failed: RMA",
              "anchors.md, Acceptance thresholds: row remap pending/failed fails"},
    DriftCode{"cpu.low",
              "the node has fewer CPUs (sockets x cores x threads) than the inventory's profile",
              "fix the inventory (slurm.conf CPUs come from it) or the BIOS (SMT, cores "
              "disabled); slurmd would drain the node",
              "Slurm src/slurmctld/node_mgr.c validate_node_specs(): reported cpus < configured "
              "cpus sets the node DOWN/DRAIN, reason \"Low CPUs\""},
    DriftCode{"cpu.differs",
              "the node's sockets, cores per socket or threads per core differ from the "
              "profile's, without being fewer in total",
              "fix the inventory: slurm.conf Sockets/CoresPerSocket/ThreadsPerCore and task "
              "binding come from it",
              "slurm.conf(5) NodeName: Sockets, CoresPerSocket, ThreadsPerCore", true},
    DriftCode{"memory.low",
              "MemTotal is below the RealMemory gpuforge renders (95% of the profile's memory)",
              "check for failed DIMMs (dmidecode -t memory, edac) or fix the inventory; slurmd "
              "would drain the node",
              "Slurm src/slurmctld/node_mgr.c validate_node_specs(): reported real_memory < "
              "configured RealMemory sets the node DOWN/DRAIN, reason \"Low RealMemory\""},
    DriftCode{"memory.differs",
              "MemTotal is above the profile's memory: the inventory understates the node",
              "fix the inventory's memory; jobs are scheduled on what it says",
              "slurm.conf(5) NodeName: RealMemory (slurmd drains only on less)", true},
    DriftCode{"nic.missing", "a NIC the profile names is not on the node",
              "check the card is seated, its driver is loaded (lspci -k names it) and the inventory name",
              "inventory profile nics[]"},
    DriftCode{"ib.port_down", "an inventory NIC's port is not ACTIVE",
              "check the cable and the switch port; run ibstatus",
              "guide 000, Common Failure Modes 1 (check ibstatus)"},
    DriftCode{"ib.port_polling", "an inventory NIC's port is polling: no link partner",
              "check the cable and that the switch port is enabled",
              "guide 000, Common Failure Modes 1 (check ibstatus)"},
    DriftCode{"ib.link_width", "an active port trained at fewer than 4 lanes (2X instead of 4X)",
              "reseat or replace the cable or transceiver; bandwidth is cut accordingly",
              "guide 000, Common Failure Modes 1: up at 2x instead of 4x"},
    DriftCode{"ib.link_rate", "an active port runs below the rate the inventory gives the NIC",
              "check cable and transceiver type and the switch port speed",
              "inventory profile nics[].rate; guide 000, Networking"},
    DriftCode{"pcie.link_gen",
              "a GPU or RDMA NIC links at a lower PCIe generation than it supports",
              "reseat the card, check riser and BIOS slot settings",
              "anchors.md, Acceptance thresholds: PCIe current gen and width == max (DCGM)"},
    DriftCode{"pcie.link_width", "a GPU or RDMA NIC links with fewer lanes than it supports",
              "reseat the card, check riser and BIOS bifurcation settings",
              "anchors.md, Acceptance thresholds: PCIe current gen and width == max (DCGM)"},
    // Topology and NUMA (drift_topology.cc).
    DriftCode{"topology.gpu_numa", "a GPU sits on another NUMA node than the inventory's gpus.numa",
              "fix gpus.numa from `nvidia-smi topo -m` (or the facts), or check the riser/slot",
              "sysfs numa_node of the GPU; inventory profile gpus[].numa"},
    DriftCode{"topology.nic_numa",
              "a GPU's closest RDMA NIC (by PCI path) is on another NUMA node, or a NIC is not "
              "on the NUMA node the inventory gives it",
              "move the NIC to the GPU's socket, or fix nics[].numa; cross-socket rails cost "
              "bandwidth", "NCCL ncclTopoGetLocalNet: a GPU uses the NICs of its best PCI path"},
    DriftCode{"topology.gdr_distance",
              "a GPU reaches its closest RDMA NIC only through the host bridge or across "
              "sockets (PHB/SYS), on a profile with RDMA NICs",
              "put GPU and NIC under one PCIe switch; NCCL turns GPUDirect RDMA off beyond PXB",
              "NCCL src/graph/paths.cc ncclTopoCheckGdr: netGdrLevel = PATH_PXB by default"},
    DriftCode{"topology.mismatch",
              "an inventory bus id names no GPU/NIC on the node's measured PCI tree",
              "fix the bus ids in the inventory from the facts; no NCCL topology file is "
              "rendered for the node until they agree", "issue #13: measured tree vs inventory"},
    DriftCode{"topology.unreadable", "the node's pci-tree section was refused (hostile or garbled)",
              "look at the message; the node's other facts are kept",
              "style.md: every input is hostile"},
    DriftCode{"pcie.hop_degraded",
              "a PCIe bridge above a GPU or NIC trained below its maximum speed or width",
              "reseat the switch board or riser; check BIOS bifurcation",
              "anchors.md, Acceptance thresholds: PCIe current gen and width == max"},
    DriftCode{"version.driver", "the NVIDIA driver differs from software.driver_version/branch",
              "install the inventory's driver, or update the inventory",
              "guide 000, Software Stack; anchors.md, drift against a golden config"},
    DriftCode{"gpu.driver_too_old",
              "the node's NVIDIA driver is older than the first release that lists the profile's GPU model",
              "install a driver of the branch the GPU needs or newer (gpuforge plans 580 by default)",
              "GPU catalogue min_driver (include/gpuforge/model/gpu_catalog.h): NVIDIA open-gpu-kernel-modules "
              "README, Compatible GPUs; #28 item 3"},
    DriftCode{"version.cuda", "the CUDA toolkit differs from software.cuda_version",
              "install the inventory's CUDA toolkit, or update the inventory",
              "anchors.md, What users ask for: drift against a golden config"},
    DriftCode{"version.nccl", "NCCL differs from software.nccl_version",
              "install the inventory's NCCL, or update the inventory",
              "guide 000, Software Stack: NCCL"},
    DriftCode{"version.firmware",
              "GPU VBIOS or HCA firmware differs from the node's vars "
              "gpu_vbios_version / hca_fw_version",
              "flash the expected firmware, or update the inventory vars",
              "anchors.md, What users ask for: VBIOS, HCA firmware identical across nodes"},
    DriftCode{"version.skew", "a version differs between nodes of one profile",
              "bring the odd node in line with the others",
              "anchors.md, What users ask for: driver, VBIOS, HCA firmware, OFED identical"},
    DriftCode{"module.peermem", "nvidia_peermem is not loaded on a GPU node with RDMA NICs",
              "modprobe nvidia-peermem and load it at boot (gpuforge render writes the file)",
              "anchors.md, Provisioning conventions: nvidia-peermem loaded"},
    DriftCode{"service.fabricmanager", "nvidia-fabricmanager is not active on an NVSwitch node",
              "enable nvidia-fabricmanager (its version must match the driver)",
              "anchors.md, Provisioning conventions: fabricmanager on NVSwitch systems"},
    DriftCode{"service.slurmd", "slurmd is not active on a compute node of a Slurm cluster",
              "systemctl enable --now slurmd; check slurmd.log", "guide 000, Orchestration"},
    DriftCode{"limits.memlock",
              "the locked-memory limit of a GPU node's login shell is not "
              "unlimited",
              "set memlock unlimited in /etc/security/limits.d (and LimitMEMLOCK for slurmd)",
              "anchors.md, Provisioning conventions: memlock unlimited"},
};

struct Ctx {
  std::string node;
  std::vector<Drift> out;
  void Add(std::string_view code, std::string subject, std::string expected, std::string actual,
           std::string message) {
    out.push_back(Drift{std::string(code), node, std::move(subject), std::move(expected),
                        std::move(actual), std::move(message)});
  }
};

// Version components split at '.', '-', '+', '~', '_': "2.21.5-1+cuda12.4" -> 2 21 5 1 cuda12 4.
std::vector<std::string_view> Components(std::string_view v) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= v.size(); ++i) {
    if (i == v.size() || std::string_view(".-+~_").find(v[i]) != std::string_view::npos) {
      if (i > start) out.push_back(v.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// "12.4" matches "12.4.131"; "2.21.5-1+cuda12.4" matches "2.21.5": the shorter (at least two
// components) is a prefix of the longer, component by component.
bool VersionMatches(std::string_view expected, std::string_view actual) {
  std::vector<std::string_view> e = Components(expected), a = Components(actual);
  std::size_t n = std::min(e.size(), a.size());
  if (n == 0 || (n < 2 && e.size() != a.size())) return false;
  return std::equal(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(n), a.begin());
}

std::string Upper(std::string_view s) {
  std::string out;
  for (char c : s) out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

// The old rule, for models the catalogue does not have: the inventory's name is one of the
// words of the reported name ("H100" in "NVIDIA H100 80GB HBM3") or the same key
// ("RTX-A6000" and "NVIDIA RTX A6000").
bool NameMatches(std::string_view expected, std::string_view actual) {
  if (actual.empty()) return false;
  if (model::GpuNameKey(expected) == model::GpuNameKey(actual)) return true;
  std::string want = Upper(expected);
  std::string have = Upper(actual);
  for (char& c : have) {
    if (c == '-' || c == '_') c = ' ';
  }
  std::vector<std::string_view> words = text::Split(have, ' ');
  return std::find(words.begin(), words.end(), want) != words.end();
}

// Whether a GPU is the model the inventory names. The catalogue identifies it by PCI device id
// and memory size; the name is display only and decides only when the node gave no device id
// or the model is not in the catalogue.
bool ModelMatches(std::string_view expected, const Gpu& g) {
  const model::GpuModelInfo* e = model::FindGpuModel(expected);
  if (!e) return NameMatches(expected, g.name);
  const bool memory_fits = !g.memory_total_bytes || model::MemoryFits(*e, *g.memory_total_bytes);
  if (g.pci_device_id && !e->pci_device_ids.empty()) {
    const auto& ids = e->pci_device_ids;
    return std::find(ids.begin(), ids.end(), *g.pci_device_id) != ids.end() && memory_fits;
  }
  if (const model::GpuModelInfo* a = g.name.empty() ? nullptr : model::FindGpuModel(g.name)) {
    return a == e && memory_fits;
  }
  return NameMatches(e->name, g.name) && memory_fits;
}

// What a GPU is, for messages: its name, device id and memory as the node reported them.
std::string GpuIdentity(const Gpu& g) {
  std::string out = g.name.empty() ? std::string("a GPU without a name") : g.name;
  std::vector<std::string> parts;
  if (g.pci_device_id) parts.push_back(fmt::format("PCI 10de:{:04x}", *g.pci_device_id));
  if (g.memory_total_bytes) parts.push_back(fmt::format("{} MiB", *g.memory_total_bytes >> 20));
  if (!parts.empty()) out += fmt::format(" ({})", fmt::join(parts, ", "));
  return out;
}

// A section that ran but could not be used: what a check must not read as "nothing there".
bool Unreadable(const NodeFacts& f, std::string_view name) {
  const Section* s = f.FindSection(name);
  return s && (s->outcome == Outcome::kFailed || s->outcome == Outcome::kUnparsed ||
               s->outcome == Outcome::kTooLarge);
}

bool Unparsed(const NodeFacts& f, std::string_view name) {
  const Section* s = f.FindSection(name);
  return s && (s->outcome == Outcome::kUnparsed || s->outcome == Outcome::kTooLarge);
}

std::string Gts(double gts) {
  std::optional<int> gen = PcieGeneration(gts);
  return gen ? fmt::format("{:g} GT/s (Gen{})", gts, *gen) : fmt::format("{:g} GT/s", gts);
}

std::string SectionText(const NodeFacts& f, std::string_view name) {
  const Section* s = f.FindSection(name);
  if (!s || s->outcome == Outcome::kAbsent) return "absent";
  if (s->outcome == Outcome::kUnparsed || s->outcome == Outcome::kTooLarge) {
    return fmt::format("{} ({})", ToString(s->outcome), s->first_line);
  }
  if (s->outcome == Outcome::kFailed) {
    return s->first_line.empty() ? fmt::format("failed (exit {})", s->exit_code)
                                 : fmt::format("failed (exit {}: {})", s->exit_code, s->first_line);
  }
  return "ok";
}

void CheckGpus(const model::Profile& p, const NodeFacts& f, Ctx& ctx) {
  const int expected = p.gpu_count();
  if (expected == 0) return;
  // An unreadable CSV says nothing about the driver: facts.section_unparsed reports it.
  if (Unparsed(f, "nvidia-smi-query")) return;
  if (!f.HasNvidiaDriver()) {
    ctx.Add("gpu.no_driver", "nvidia-smi", fmt::format("{} GPUs listed", expected),
            fmt::format("nvidia-smi {}; {} NVIDIA GPUs on the PCI bus",
                        SectionText(f, "nvidia-smi-query"), f.PciGpuCount()),
            fmt::format("profile {} has {} GPUs but nvidia-smi is {}; {} NVIDIA GPUs are on the "
                        "PCI bus",
                        p.name, expected, SectionText(f, "nvidia-smi-query"), f.PciGpuCount()));
    return;
  }
  const int have = static_cast<int>(f.gpus.size());
  if (have != expected) {
    std::string bus = f.PciGpuCount() != have
                          ? fmt::format("; {} are on the PCI bus", f.PciGpuCount())
                          : std::string();
    ctx.Add(
        "gpu.count", "gpus", std::to_string(expected), std::to_string(have),
        fmt::format("nvidia-smi lists {} GPUs, profile {} has {}{}", have, p.name, expected, bus));
  }
  for (const Gpu& g : f.gpus) {
    std::string subject = fmt::format("gpu{}", g.index);
    if (!g.errors.empty()) {
      std::vector<std::string> cells;
      for (const GpuFieldError& e : g.errors) cells.push_back(fmt::format("{} {}", e.field, e.cell));
      std::string actual = fmt::format("{}", fmt::join(cells, ", "));
      ctx.Add("gpu.field_error", subject, "values", actual,
              fmt::format("{} ({}) answers with errors: {}", subject, g.pci_bus_id, actual));
    }
    // Without a name and a device id there is nothing to identify; gpu.field_error says why.
    const bool identifiable = !g.name.empty() || g.pci_device_id;
    bool known = std::any_of(p.gpus.begin(), p.gpus.end(),
                             [&](const model::GpuSpec& s) { return ModelMatches(s.model, g); });
    if (!known && identifiable && !p.gpus.empty()) {
      ctx.Add("gpu.model", subject, p.gpus[0].model, GpuIdentity(g),
              fmt::format("{} is {}, profile {} has {}", subject, GpuIdentity(g), p.name, p.gpus[0].model));
    }
    if (g.persistence_mode == false) {
      ctx.Add("gpu.persistence", subject, "Enabled", "Disabled",
              fmt::format("{} has persistence mode off", subject));
    }
    if (g.ecc_uncorrected_volatile.value_or(0) > 0) {
      ctx.Add("gpu.ecc_uncorrected", subject, "0", std::to_string(*g.ecc_uncorrected_volatile),
              fmt::format("{} has {} uncorrected volatile ECC errors", subject,
                          *g.ecc_uncorrected_volatile));
    }
    if (g.detail &&
        (g.detail->remapped_rows_pending == true || g.detail->remapped_rows_failure == true)) {
      std::string what = g.detail->remapped_rows_failure == true ? "failed" : "pending";
      ctx.Add("gpu.row_remap", subject, "none", what,
              fmt::format("{} has a row remap {}", subject, what));
    }
  }
}

// The inventory NIC's RDMA device or netdev on the node.
bool NicPresent(const model::NicSpec& n, const NodeFacts& f) {
  if (f.FindIbDevice(n.name)) return true;
  if (n.kind == model::NetKind::kInfiniband) return false;
  auto named = [&](const std::string& dev) {
    return dev == n.name || (!n.netdev.empty() && dev == n.netdev);
  };
  for (const PciDevice& d : f.pci) {
    if (std::any_of(d.netdevs.begin(), d.netdevs.end(), named)) return true;
  }
  for (const IbDevice& d : f.ib) {
    if (std::any_of(d.netdevs.begin(), d.netdevs.end(), named)) return true;
  }
  return false;
}

void CheckNics(const model::Cluster& c, const model::Profile& p, const NodeFacts& f, Ctx& ctx) {
  // Without the sysfs sections nothing can be said; absence of /sys/class/infiniband itself
  // means there are no RDMA devices, which is a finding.
  if (!f.FindSection("pci") || Unreadable(f, "pci") || Unreadable(f, "infiniband")) return;
  std::vector<std::string> rdma;
  for (const IbDevice& d : f.ib) rdma.push_back(d.name);
  for (const model::NicSpec& n : p.nics) {
    if (!NicPresent(n, f)) {
      ctx.Add(
          "nic.missing", n.name, "present",
          rdma.empty() ? "no RDMA devices" : fmt::format("RDMA devices: {}", fmt::join(rdma, ", ")),
          fmt::format("profile {} has NIC {}, the node does not", p.name, n.name));
      continue;
    }
    const IbDevice* dev = f.FindIbDevice(n.name);
    if (!dev) continue;  // a plain Ethernet interface: no port state in sysfs/infiniband
    std::string subject = fmt::format("{} port {}", n.name, n.port);
    const IbPort* port = dev->FindPort(n.port);
    if (!port) {
      ctx.Add("ib.port_down", subject, "ACTIVE", "no such port",
              fmt::format("{} has no port {}", n.name, n.port));
      continue;
    }
    if (port->phys_state == "Polling") {
      ctx.Add("ib.port_polling", subject, "LinkUp", "Polling",
              fmt::format("{} is polling: no link partner (cable or switch port)", subject));
      continue;
    }
    if (port->state != "ACTIVE") {
      ctx.Add("ib.port_down", subject, "ACTIVE",
              fmt::format("{} ({})", port->state.empty() ? "?" : port->state,
                          port->phys_state.empty() ? "?" : port->phys_state),
              fmt::format("{} is {}, not ACTIVE", subject,
                          port->state.empty() ? "unknown" : port->state));
      continue;
    }
    const double want_gbps = InventoryLineGbits(c, n);
    // The rule validate's ib.counters applies too: 2X by design (HDR100, NDR200) meets the
    // inventory's rate; a degraded 2X does not.
    const IbLinkVerdict link = JudgeIbLink(port->width, port->rate_gbps, want_gbps);
    if (link == IbLinkVerdict::kWidth) {
      ctx.Add("ib.link_width", subject, want_gbps > 0 ? fmt::format("4X or {:g} Gb/s", want_gbps) : "4X",
              fmt::format("{}X", *port->width),
              fmt::format("{} is up at {}X instead of 4X ({})", subject, *port->width, port->rate));
    } else if (link == IbLinkVerdict::kRate) {
      ctx.Add("ib.link_rate", subject, fmt::format("{:g} Gb/s", want_gbps),
              fmt::format("{:g} Gb/s", *port->rate_gbps),
              fmt::format("{} runs at {}, the inventory says {:g} Gb/s", subject, port->rate,
                          want_gbps));
    }
  }
}

void CheckPcie(const model::Profile& p, const NodeFacts& f, Ctx& ctx) {
  for (const PciDevice& d : f.pci) {
    const Gpu* gpu = nullptr;
    for (const Gpu& g : f.gpus) {
      if (g.pci_bus_id == d.bdf) gpu = &g;
    }
    bool judged = d.kind == PciKind::kGpu ? p.gpu_count() > 0 : !d.rdma_devices.empty();
    for (const model::NicSpec& n : p.nics) judged = judged || n.pci_bus_id == d.bdf;
    if (!judged) continue;
    std::string what = d.kind == PciKind::kGpu
                           ? (gpu ? fmt::format("gpu{}", gpu->index) : std::string("GPU"))
                           : (d.rdma_devices.empty() ? std::string("NIC") : d.rdma_devices[0]);
    // GPUs lower their link speed in idle performance states; judge the generation only in P0
    // or when the state is unknown.
    bool idle = gpu && gpu->detail && !gpu->detail->performance_state.empty() &&
                gpu->detail->performance_state != "P0";
    if (d.link_speed_gts && d.max_link_speed_gts &&
        *d.link_speed_gts < *d.max_link_speed_gts - 0.01 && !idle) {
      ctx.Add("pcie.link_gen", d.bdf, Gts(*d.max_link_speed_gts), Gts(*d.link_speed_gts),
              fmt::format("{} ({}) links at {}, it supports {}", d.bdf, what,
                          Gts(*d.link_speed_gts), Gts(*d.max_link_speed_gts)));
    }
    if (d.link_width && d.max_link_width && *d.link_width < *d.max_link_width) {
      ctx.Add("pcie.link_width", d.bdf, fmt::format("x{}", *d.max_link_width),
              fmt::format("x{}", *d.link_width),
              fmt::format("{} ({}) links at x{}, it supports x{}", d.bdf, what, *d.link_width,
                          *d.max_link_width));
    }
  }
}

void CheckVersions(const model::Cluster& c, const model::Node& node, const model::Profile& p,
                   const NodeFacts& f, Ctx& ctx) {
  if (p.gpu_count() == 0) return;
  const model::Software& s = c.software;
  std::optional<std::string> driver = f.DriverVersion();
  if (driver) {
    // The driver the node runs against what its GPU model needs, whatever the inventory says.
    std::set<std::string> judged;
    for (const model::GpuSpec& g : p.gpus) {
      const model::GpuModelInfo* m = model::FindGpuModel(g.model);
      if (m == nullptr || m->min_driver.empty() || !judged.insert(std::string(m->name)).second) continue;
      if (std::optional<int> v = model::CompareVersions(*driver, m->min_driver); v && *v < 0) {
        ctx.Add("gpu.driver_too_old", "driver", fmt::format(">= {} ({})", m->min_driver, m->name), *driver,
                fmt::format("NVIDIA driver {} is older than {}, the first release that lists the {}", *driver,
                            m->min_driver, m->name));
      }
    }
    if (!s.driver_version.empty() && *driver != s.driver_version) {
      ctx.Add("version.driver", "driver", s.driver_version, *driver,
              fmt::format("NVIDIA driver {} is installed, the inventory says {}", *driver,
                          s.driver_version));
    } else if (s.driver_version.empty() && !s.driver_branch.empty() &&
               driver->substr(0, driver->find('.')) != s.driver_branch) {
      ctx.Add("version.driver", "driver", fmt::format("branch {}", s.driver_branch), *driver,
              fmt::format("NVIDIA driver {} is not on branch {}", *driver, s.driver_branch));
    }
  }
  auto software = [&](std::string_view code, std::string_view subject, const std::string& want,
                      const std::optional<std::string>& have, std::string_view where) {
    if (want.empty() || Unparsed(f, "versions")) return;
    if (!have) {
      ctx.Add(code, std::string(subject), want, "not found",
              fmt::format("{} {} is in the inventory; none was found on the node ({})", subject,
                          want, where));
    } else if (!VersionMatches(want, *have)) {
      ctx.Add(code, std::string(subject), want, *have,
              fmt::format("{} {} is installed, the inventory says {}", subject, *have, want));
    }
  };
  software("version.cuda", "cuda", s.cuda_version, f.versions.cuda,
           "nvcc, /usr/local/cuda/version.json");
  software("version.nccl", "nccl", s.nccl_version, f.versions.nccl, "dpkg, rpm, libnccl.so.2.*");

  auto var = [&](const char* key) -> std::string {
    auto it = node.vars.find(key);
    return it == node.vars.end() ? std::string() : it->second;
  };
  if (std::string vbios = var("gpu_vbios_version"); !vbios.empty()) {
    for (const Gpu& g : f.gpus) {
      if (!g.vbios_version.empty() && Upper(g.vbios_version) != Upper(vbios)) {
        ctx.Add("version.firmware", fmt::format("gpu{}", g.index), vbios, g.vbios_version,
                fmt::format("gpu{} has VBIOS {}, vars.gpu_vbios_version is {}", g.index,
                            g.vbios_version, vbios));
      }
    }
  }
  if (std::string fw = var("hca_fw_version"); !fw.empty()) {
    for (const model::NicSpec& n : p.nics) {
      const IbDevice* d = f.FindIbDevice(n.name);
      if (d && !d->fw_version.empty() && d->fw_version != fw) {
        ctx.Add("version.firmware", n.name, fw, d->fw_version,
                fmt::format("{} has firmware {}, vars.hca_fw_version is {}", n.name, d->fw_version,
                            fw));
      }
    }
  }
}

void CheckSystem(const model::Cluster& c, const model::Node& node, const model::Profile& p,
                 const NodeFacts& f, Ctx& ctx) {
  const bool gpus = p.gpu_count() > 0;
  const bool rdma = std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& n) {
    return n.kind == model::NetKind::kInfiniband || n.kind == model::NetKind::kRoce;
  });
  // Only where GPUDirect goes through nvidia-peermem: a DMA-BUF node loads no such module (#14).
  const bool peermem = model::ChooseGpuDirect(c.software).mode == model::GpuDirect::kPeermem;
  if (gpus && rdma && peermem && f.modules && !f.HasModule("nvidia_peermem") && !f.HasModule("nv_peer_mem")) {
    std::string why = f.driver && f.driver->open_kernel_module
                          ? " (the open kernel module also allows DMA-BUF, if NCCL uses it)"
                          : "";
    ctx.Add(
        "module.peermem", "nvidia_peermem", "loaded", "not loaded",
        fmt::format("nvidia_peermem is not loaded; GPUDirect RDMA over the NICs needs it{}", why));
  }
  if (gpus && f.memlock && !f.memlock->unlimited) {
    ctx.Add("limits.memlock", "memlock", "unlimited",
            fmt::format("{} KiB", f.memlock->bytes / 1024),
            fmt::format("the login shell's locked-memory limit is {} KiB, not unlimited",
                        f.memlock->bytes / 1024));
  }
  auto service = [&](std::string_view code, std::string_view unit, std::string_view why) {
    const Service* s = f.FindService(unit);
    if (!s || s->state == ServiceState::kActive || s->state == ServiceState::kUnknown) return;
    ctx.Add(code, std::string(unit), "active", ToString(s->state),
            fmt::format("{} is {}; {}", unit, ToString(s->state), why));
  };
  bool nvswitch = std::any_of(p.gpus.begin(), p.gpus.end(), [](const model::GpuSpec& g) {
    return g.nvswitch && g.form_factor == model::FormFactor::kSxm;
  });
  if (nvswitch)
    service("service.fabricmanager", "nvidia-fabricmanager", "NVSwitch systems need it");
  if (c.software.scheduler.kind == model::SchedulerKind::kSlurm &&
      node.role == model::NodeRole::kCompute) {
    service("service.slurmd", "slurmd", "the node cannot run Slurm jobs");
  }
}

// Why 0.95: render/slurm.cc writes RealMemory as 95% of the profile's memory (its
// kRealMemoryShare); slurmctld drains a node reporting less than RealMemory.
constexpr double kRealMemoryShare = 0.95;

std::string CpuShape(int sockets, int cores, int threads) {
  return fmt::format("{}x{}x{} ({} CPUs)", sockets, cores, threads, sockets * cores * threads);
}

void CheckCpuMemory(const model::Cluster& c, const model::Node& node, const model::Profile& p,
                    const NodeFacts& f, Ctx& ctx) {
  const bool slurmd = c.software.scheduler.kind == model::SchedulerKind::kSlurm &&
                      node.role == model::NodeRole::kCompute;
  if (f.cpu && f.cpu->sockets && f.cpu->cores_per_socket && f.cpu->threads_per_core &&
      p.cpu.sockets > 0 && p.cpu.cores_per_socket > 0) {
    const int ws = p.cpu.sockets, wc = p.cpu.cores_per_socket, wt = std::max(1, p.cpu.threads_per_core);
    const int hs = *f.cpu->sockets, hc = *f.cpu->cores_per_socket, ht = *f.cpu->threads_per_core;
    if (hs != ws || hc != wc || ht != wt) {
      const bool low = hs * hc * ht < ws * wc * wt;
      std::string want = CpuShape(ws, wc, wt), have = CpuShape(hs, hc, ht);
      ctx.Add(low ? "cpu.low" : "cpu.differs", "cpu", want, have,
              fmt::format("lscpu reports sockets x cores x threads {}, profile {} has {}{}", have, p.name, want,
                          low && slurmd ? "; slurmd would drain the node (\"Low CPUs\")" : ""));
    }
  }
  if (f.memory_bytes && p.memory_bytes > 0) {
    constexpr double kMiB = 1024.0 * 1024.0;
    const double have_mib = static_cast<double>(*f.memory_bytes) / kMiB;
    const double real_memory = std::floor(p.memory_bytes * kRealMemoryShare / kMiB);
    if (have_mib < real_memory) {
      ctx.Add("memory.low", "memory", fmt::format(">= {:.0f} MiB", real_memory), fmt::format("{:.0f} MiB", have_mib),
              fmt::format("MemTotal is {:.0f} MiB, below the {:.0f} MiB RealMemory rendered from profile {}'s "
                          "{:.0f} MiB{}",
                          have_mib, real_memory, p.name, p.memory_bytes / kMiB,
                          slurmd ? "; slurmd would drain the node (\"Low RealMemory\")" : ""));
    } else if (std::floor(have_mib) > std::floor(p.memory_bytes / kMiB)) {
      // Whole MiB on both sides, as printed: on the H200 (#36) an inventory written from this
      // very MemTotal in MiB drifted by the KiB under one MiB, "128869 MiB, more than 128869 MiB".
      ctx.Add("memory.differs", "memory", fmt::format("{:.0f} MiB", p.memory_bytes / kMiB),
              fmt::format("{:.0f} MiB", have_mib),
              fmt::format("MemTotal is {:.0f} MiB, more than profile {}'s {:.0f} MiB", have_mib, p.name,
                          p.memory_bytes / kMiB));
    }
  }
}

void CheckSections(const NodeFacts& f, Ctx& ctx) {
  for (const Section& s : f.sections) {
    if (s.outcome == Outcome::kUnparsed) {
      ctx.Add("facts.section_unparsed", s.name, "output gpuforge reads", s.first_line,
              fmt::format("the output of {} could not be read: {}; the node's other sections still count",
                          s.command, s.first_line));
    } else if (s.outcome == Outcome::kTooLarge) {
      ctx.Add("facts.section_too_large", s.name, "within its cap", s.first_line,
              fmt::format("the output of {} was not read: {}", s.command, s.first_line));
    }
  }
}

// The distinct values, sorted and comma-joined; nullopt when there are none.
std::optional<std::string> JoinDistinct(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.empty()) return std::nullopt;
  return fmt::format("{}", fmt::join(v, ","));
}

std::optional<std::string> VbiosVersions(const NodeFacts& f) {
  std::vector<std::string> v;
  for (const Gpu& g : f.gpus) {
    if (!g.vbios_version.empty()) v.push_back(g.vbios_version);
  }
  return JoinDistinct(std::move(v));
}

std::optional<std::string> HcaFirmware(const NodeFacts& f) {
  std::vector<std::string> v;
  for (const IbDevice& d : f.ib) {
    if (!d.fw_version.empty()) v.push_back(d.fw_version);
  }
  return JoinDistinct(std::move(v));
}

// version.skew: values that differ between nodes of one profile, judged against the value most
// nodes have (ties: the smallest). Pinned versions are left to version.* instead.
void CheckSkew(const model::Cluster& c, std::span<const Gathered> gathered,
               std::map<std::string, Ctx>& by_node) {
  using Getter = std::optional<std::string> (*)(const NodeFacts&);
  struct Key {
    std::string_view name;
    Getter get;
    bool pinned;
  };
  const model::Software& s = c.software;
  const Key keys[] = {
      {"driver", +[](const NodeFacts& f) { return f.DriverVersion(); }, !s.driver_version.empty()},
      {"cuda", +[](const NodeFacts& f) { return f.versions.cuda; }, !s.cuda_version.empty()},
      {"nccl", +[](const NodeFacts& f) { return f.versions.nccl; }, !s.nccl_version.empty()},
      {"vbios", &VbiosVersions, false},
      {"hca_fw", &HcaFirmware, false},
      {"ofed", +[](const NodeFacts& f) { return f.versions.ofed; }, false},
      {"rdma_core", +[](const NodeFacts& f) { return f.versions.rdma_core; }, false},
      {"kernel", +[](const NodeFacts& f) { return f.kernel; }, false},
  };
  std::map<std::string, std::vector<const NodeFacts*>> profiles;  // profile -> nodes, in order
  for (const Gathered& g : gathered) {
    const model::Node* n = c.FindNode(g.node);
    if (n && g.facts.ok()) profiles[n->profile].push_back(&g.facts.value());
  }
  for (const auto& [profile, nodes] : profiles) {
    for (const Key& k : keys) {
      if (k.pinned) continue;
      std::map<std::string, int> counts;
      for (const NodeFacts* f : nodes) {
        if (std::optional<std::string> v = k.get(*f)) ++counts[*v];
      }
      if (counts.size() < 2) continue;
      auto most = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      });
      int total = 0;
      for (const auto& [v, n] : counts) total += n;
      for (const NodeFacts* f : nodes) {
        std::optional<std::string> v = k.get(*f);
        if (!v || *v == most->first) continue;
        by_node[f->node].Add("version.skew", std::string(k.name), most->first, *v,
                             fmt::format("{} {} differs from {} on {} of {} {} nodes", k.name, *v,
                                         most->first, most->second, total, profile));
      }
    }
  }
}

}  // namespace

std::span<const DriftCode> DriftCodes() { return kCodes; }

std::vector<Drift> FindDrift(const model::Cluster& cluster, std::span<const Gathered> gathered) {
  std::map<std::string, Ctx> by_node;
  for (const Gathered& g : gathered) {
    Ctx& ctx = by_node[g.node];
    ctx.node = g.node;
    const model::Node* node = cluster.FindNode(g.node);
    if (!node) {
      ctx.Add("facts.unknown_node", "node", "a node of the inventory", g.node,
              fmt::format("{} is not in the inventory", g.node));
      continue;
    }
    if (!g.facts.ok()) {
      ctx.Add("facts.unavailable", "node", "facts", "none", g.facts.error().message);
      continue;
    }
    const NodeFacts& f = g.facts.value();
    const model::Profile& p = cluster.ProfileOf(*node);
    CheckSections(f, ctx);
    CheckGpus(p, f, ctx);
    CheckNics(cluster, p, f, ctx);
    CheckCpuMemory(cluster, *node, p, f, ctx);
    CheckPcie(p, f, ctx);
    for (Drift& d : TopologyDrift(p, f)) ctx.out.push_back(std::move(d));
    CheckVersions(cluster, *node, p, f, ctx);
    CheckSystem(cluster, *node, p, f, ctx);
  }
  CheckSkew(cluster, gathered, by_node);
  std::vector<Drift> out;
  for (const Gathered& g : gathered) {
    auto it = by_node.find(g.node);
    if (it == by_node.end()) continue;
    std::vector<Drift>& d = it->second.out;
    std::stable_sort(d.begin(), d.end(),
                     [](const Drift& a, const Drift& b) { return a.code < b.code; });
    for (Drift& x : d) out.push_back(std::move(x));
    by_node.erase(it);  // a node listed twice reports once
  }
  return out;
}

}  // namespace gpuforge::facts
