#include "probe/gpu/health.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "gpuforge/base/text.h"
#include "probe/gpu/bus_id.h"
#include "probe/gpu/failure.h"
#include "probe/gpu/probes.h"
#include "probe/gpu/xid.h"

namespace gpuforge::probe::internal {
namespace {

constexpr char kKey[] = "gpu.health";

struct Reason {
  unsigned long long bit;
  const char* name;
  bool slowdown;  // the GPU protecting itself, as opposed to routine clock management
};
constexpr Reason kReasons[] = {
    {nvml::kReasonGpuIdle, "gpu_idle", false},
    {nvml::kReasonApplicationsClocksSetting, "applications_clocks_setting", false},
    {nvml::kReasonSwPowerCap, "sw_power_cap", false},
    {nvml::kReasonHwSlowdown, "hw_slowdown", true},
    {nvml::kReasonSyncBoost, "sync_boost", false},
    {nvml::kReasonSwThermalSlowdown, "sw_thermal_slowdown", true},
    {nvml::kReasonHwThermalSlowdown, "hw_thermal_slowdown", true},
    {nvml::kReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", true},
    {nvml::kReasonDisplayClockSetting, "display_clock_setting", false},
};

// One GPU as NVML enumerated it.
struct Gpu {
  unsigned index = 0;  // NVML's index
  nvml::Device device = nullptr;
  std::string bus_id;  // canonical
  std::string name;
  std::string uuid;
  std::string entity;  // "gpu0".. after sorting by bus id
  std::vector<std::string> not_supported;
};

// Reads one GPU's metrics, stopping at the first NVML error that is not "not supported".
class GpuReading {
 public:
  GpuReading(const NvmlApi& api, Gpu* gpu, std::vector<Measurement>* out)
      : api_(api), gpu_(*gpu), out_(*out) {}

  const std::optional<Failure>& failure() const { return failure_; }

  // Runs `call`; true when it succeeded. A null function or NVML_ERROR_NOT_SUPPORTED lists
  // `metric` as not supported; any other error is the GPU's failure.
  template <class F>
  bool Query(const char* call, const std::string& metric, F* fn, const auto&... args) {
    if (failure_) return false;
    if (fn == nullptr) {
      gpu_.not_supported.push_back(metric);
      return false;
    }
    const nvml::Return rc = fn(gpu_.device, args...);
    if (rc == nvml::kSuccess) return true;
    if (rc == nvml::kNotSupported) {
      gpu_.not_supported.push_back(metric);
      return false;
    }
    failure_ = Failure{"gpu.nvml_error", fmt::format("{} ({}): {}", gpu_.entity, gpu_.bus_id,
                                                 NvmlCallError(api_, call, rc))};
    return false;
  }

  void Add(std::string metric, double value, std::string unit,
           std::map<std::string, std::string> info = {}) {
    Measurement m;
    m.entity = gpu_.entity;
    m.metric = std::move(metric);
    m.value = value;
    m.unit = std::move(unit);
    m.samples = {value};
    m.info = std::move(info);
    out_.push_back(std::move(m));
  }

  void ReadAll() {
    Ecc("ecc_uncorrected_volatile", nvml::kUncorrected, nvml::kVolatile);
    Ecc("ecc_uncorrected_aggregate", nvml::kUncorrected, nvml::kAggregate);
    Ecc("ecc_corrected_volatile", nvml::kCorrected, nvml::kVolatile);
    EccAt("ecc_corrected_sram_aggregate", nvml::kLocationSram);
    EccAt("ecc_corrected_dram_aggregate", nvml::kLocationDram);
    int pending = 0;
    if (Query("nvmlDeviceGetRetiredPagesPendingStatus", "retired_pages_pending",
              api_.nvmlDeviceGetRetiredPagesPendingStatus, &pending)) {
      Add("retired_pages_pending", pending != 0 ? 1 : 0, "bool");
    }
    unsigned corrected = 0, uncorrected = 0, remap_pending = 0, remap_failure = 0;
    if (Query("nvmlDeviceGetRemappedRows", "remap_pending", api_.nvmlDeviceGetRemappedRows,
              &corrected, &uncorrected, &remap_pending, &remap_failure)) {
      Add("remap_pending", remap_pending != 0 ? 1 : 0, "bool");
      Add("remap_failure", remap_failure != 0 ? 1 : 0, "bool");
      Add("remap_corrected_rows", corrected, "count");
      Add("remap_uncorrected_rows", uncorrected, "count");
    }
    Throttle();
    unsigned mw = 0;
    if (Query("nvmlDeviceGetPowerUsage", "power_draw", api_.nvmlDeviceGetPowerUsage, &mw)) {
      Add("power_draw", mw / 1000.0, "W");
    }
    if (Query("nvmlDeviceGetEnforcedPowerLimit", "power_limit",
              api_.nvmlDeviceGetEnforcedPowerLimit, &mw)) {
      Add("power_limit", mw / 1000.0, "W");
    }
    unsigned v = 0;
    if (Query("nvmlDeviceGetTemperature", "temperature", api_.nvmlDeviceGetTemperature,
              nvml::kTemperatureGpu, &v)) {
      Add("temperature", v, "C");
    }
    // Idle GPUs lower the link generation to save power; the current value means most under
    // load, which is why it is recorded next to the maximum rather than judged here.
    if (Query("nvmlDeviceGetCurrPcieLinkGeneration", "pcie_gen_current",
              api_.nvmlDeviceGetCurrPcieLinkGeneration, &v)) {
      Add("pcie_gen_current", v, "gen", {{"note", "idle GPUs lower the link generation"}});
    }
    if (Query("nvmlDeviceGetMaxPcieLinkGeneration", "pcie_gen_max",
              api_.nvmlDeviceGetMaxPcieLinkGeneration, &v)) {
      Add("pcie_gen_max", v, "gen");
    }
    if (Query("nvmlDeviceGetCurrPcieLinkWidth", "pcie_width_current",
              api_.nvmlDeviceGetCurrPcieLinkWidth, &v)) {
      Add("pcie_width_current", v, "lanes");
    }
    if (Query("nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max", api_.nvmlDeviceGetMaxPcieLinkWidth,
              &v)) {
      Add("pcie_width_max", v, "lanes");
    }
    NvLink();
    int mode = 0;
    if (Query("nvmlDeviceGetPersistenceMode", "persistence", api_.nvmlDeviceGetPersistenceMode,
              &mode)) {
      Add("persistence", mode != 0 ? 1 : 0, "bool");
    }
  }

 private:
  void Ecc(const char* metric, int type, int counter) {
    unsigned long long n = 0;
    if (Query("nvmlDeviceGetTotalEccErrors", metric, api_.nvmlDeviceGetTotalEccErrors, type,
              counter, &n)) {
      Add(metric, static_cast<double>(n), "count");
    }
  }

  void EccAt(const char* metric, int location) {
    unsigned long long n = 0;
    if (Query("nvmlDeviceGetMemoryErrorCounter", metric, api_.nvmlDeviceGetMemoryErrorCounter,
              nvml::kCorrected, nvml::kAggregate, location, &n)) {
      Add(metric, static_cast<double>(n), "count");
    }
  }

  void Throttle() {
    unsigned long long bits = 0;
    if (!Query("nvmlDeviceGetCurrentClocksEventReasons", "throttle_reasons",
               api_.nvmlDeviceGetCurrentClocksEventReasons, &bits)) {
      return;
    }
    std::vector<std::string> active, slowdown;
    unsigned long long known = 0;
    for (const Reason& r : kReasons) {
      known |= r.bit;
      if ((bits & r.bit) == 0) continue;
      active.push_back(r.name);
      if (r.slowdown) slowdown.push_back(r.name);
    }
    if ((bits & ~known) != 0) active.push_back(fmt::format("unknown_{:#x}", bits & ~known));
    Add("throttle_reasons", static_cast<double>(bits), "bitmask",
        {{"active", active.empty() ? "none" : fmt::format("{}", fmt::join(active, ","))}});
    Add("throttle_slowdown", slowdown.empty() ? 0 : 1, "bool",
        {{"reasons", slowdown.empty() ? "none" : fmt::format("{}", fmt::join(slowdown, ","))}});
  }

  void NvLink() {
    if (api_.nvmlDeviceGetNvLinkState == nullptr) {
      gpu_.not_supported.push_back("nvlink_up");
      return;
    }
    // Links a GPU does not have answer "not supported" or "invalid argument"; they are not
    // counted, so a PCIe card reports 0 of 0.
    int up = 0, total = 0;
    for (unsigned link = 0; link < nvml::kNvLinkMaxLinks && !failure_; ++link) {
      int active = 0;
      const nvml::Return rc = api_.nvmlDeviceGetNvLinkState(gpu_.device, link, &active);
      if (rc == nvml::kNotSupported || rc == nvml::kInvalidArgument) continue;
      if (rc != nvml::kSuccess) {
        failure_ = Failure{"gpu.nvml_error",
                           fmt::format("{} ({}): {} for link {}", gpu_.entity, gpu_.bus_id,
                                       NvmlCallError(api_, "nvmlDeviceGetNvLinkState", rc), link)};
        return;
      }
      ++total;
      if (active != 0) ++up;
    }
    Add("nvlink_up", up, "count");
    Add("nvlink_total", total, "count");
  }

  const NvmlApi& api_;
  Gpu& gpu_;
  std::vector<Measurement>& out_;
  std::optional<Failure> failure_;
};

class HealthProbe : public Probe {
 public:
  HealthProbe(NvmlLoader nvml, KernelLogReader kernel_log)
      : nvml_(std::move(nvml)), kernel_log_(std::move(kernel_log)) {}

  std::string key() const override { return kKey; }
  std::string description() const override {
    return "GPU health from NVML (ECC, row remapping, throttling, power, temperature, PCIe, "
           "NVLink, persistence) and Xid errors from the kernel log";
  }
  std::vector<Param> params() const override { return {}; }

  ProbeResult Run(const Context& ctx) override {
    NvmlLoad load = nvml_();
    if (!load.api) return Skip(kKey, load.code, load.reason);
    const NvmlApi& api = *load.api;
    const nvml::Return init = api.nvmlInit_v2();
    if (init == nvml::kDriverNotLoaded) {
      return Skip(kKey, "gpu.none", NvmlCallError(api, "nvmlInit_v2", init));
    }
    if (init != nvml::kSuccess) {
      return Fail(kKey, "gpu.nvml_error", NvmlCallError(api, "nvmlInit_v2", init));
    }
    const NvmlSession session(api);

    unsigned count = 0;
    if (nvml::Return rc = api.nvmlDeviceGetCount_v2(&count); rc != nvml::kSuccess) {
      return Fail(kKey, "gpu.nvml_error", NvmlCallError(api, "nvmlDeviceGetCount_v2", rc));
    }
    if (count == 0) return Skip(kKey, "gpu.none", "NVML sees no GPU");

    std::vector<Failure> failures;
    std::vector<Gpu> gpus = Enumerate(api, count, &failures);
    const XidCounts xid = ReadXid();
    std::vector<Measurement> all(1);  // the node's gpu_count goes first, once GPUs are read
    for (Gpu& gpu : gpus) {
      if (ctx.Cancelled()) return Fail(kKey, "probe.cancelled", "cancelled while reading " + gpu.entity);
      GpuReading reading(api, &gpu, &all);
      reading.ReadAll();
      if (reading.failure()) failures.push_back(*reading.failure());
      if (xid.readable) {
        for (Measurement& m : xid.For(gpu)) all.push_back(std::move(m));
      }
    }
    all[0] = Node(api, gpus, count);
    if (!xid.readable) {
      all[0].info["xid_source"] = "unavailable";
      all[0].info["xid_unavailable_reason"] = xid.unavailable;
    } else {
      all[0].info["xid_source"] = "kernel log (/dev/kmsg, since boot)";
      all.insert(all.begin() + 1, xid.ForNode(gpus));
    }
    return Finish(kKey, std::move(all), failures);
  }

 private:
  // Xid events from the kernel log, counted per PCI address.
  struct XidCounts {
    bool readable = false;
    std::string unavailable;  // why not, when !readable
    XidScan scan;
    std::map<std::string, std::map<int, int>> by_bus;  // bus id -> code -> count

    static std::string Codes(const std::map<int, int>& c) {
      std::vector<std::string> parts;
      for (const auto& [code, n] : c) parts.push_back(fmt::format("{}:{}", code, n));
      return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ","));
    }

    // "xid_count": hardware Xids of this GPU (IsHardwareXid), what fails it; "xid_info_count":
    // informational ones (IsInformationalXid), shown and never judged; "xid_app_count": the
    // others, which an application causes and which only warn.
    std::vector<Measurement> For(const Gpu& g) const {
      std::map<int, int> hardware, info, app;
      if (auto it = by_bus.find(g.bus_id); it != by_bus.end()) {
        for (const auto& [code, n] : it->second) {
          (IsHardwareXid(code) ? hardware : IsInformationalXid(code) ? info : app)[code] = n;
        }
      }
      auto count = [&](const char* metric, const std::map<int, int>& codes, const char* kind) {
        Measurement m;
        m.entity = g.entity;
        m.metric = metric;
        m.unit = "count";
        for (const auto& [code, n] : codes) m.value += n;
        m.samples = {m.value};
        m.info["codes"] = Codes(codes);
        m.info["kind"] = kind;
        return m;
      };
      return {count("xid_count", hardware, "hardware (NVIDIA's Xid catalog: reset, reboot or RMA)"),
              count("xid_info_count", info, "informational (the catalog's IGNORE: a remap recorded, a high SBE rate)"),
              count("xid_app_count", app, "application (the catalog's RESTART_APP), or unlisted")};
    }

    Measurement ForNode(const std::vector<Gpu>& gpus) const {
      Measurement m;
      m.entity = "node";
      m.metric = "xid_count";
      m.value = static_cast<double>(scan.events.size() + scan.dropped);
      m.unit = "count";
      m.samples = {m.value};
      std::map<int, int> all;
      for (const XidEvent& e : scan.events) ++all[e.code];
      m.info["codes"] = Codes(all);
      std::map<int, int> hardware;
      for (const auto& [code, n] : all) {
        if (IsHardwareXid(code)) hardware[code] = n;
      }
      m.info["hardware_codes"] = Codes(hardware);
      if (!scan.events.empty()) {
        const XidEvent& last = scan.events.back();
        m.info["last"] = fmt::format("{} xid {}: {}", last.bus_id, last.code, last.detail);
      }
      if (scan.malformed > 0) m.info["malformed_lines"] = std::to_string(scan.malformed);
      if (scan.dropped > 0) m.info["not_itemised"] = std::to_string(scan.dropped);
      // Events of devices NVML did not list (a GPU that fell off the bus, one hidden from us).
      std::vector<std::string> other;
      for (const auto& [bus, codes] : by_bus) {
        auto is_bus = [&](const Gpu& g) { return g.bus_id == bus; };
        if (std::none_of(gpus.begin(), gpus.end(), is_bus)) other.push_back(bus);
      }
      if (!other.empty()) m.info["other_devices"] = fmt::format("{}", fmt::join(other, ","));
      return m;
    }
  };

  XidCounts ReadXid() const {
    XidCounts x;
    gpuforge::Result<std::string> log = kernel_log_();
    if (!log.ok()) {
      x.unavailable = log.error().message;
      return x;
    }
    x.readable = true;
    x.scan = ParseXid(*log);
    for (const XidEvent& e : x.scan.events) ++x.by_bus[e.bus_id][e.code];
    return x;
  }

  // Handles, PCI addresses and names, in bus order, named gpu0...
  static std::vector<Gpu> Enumerate(const NvmlApi& api, unsigned count,
                                    std::vector<Failure>* failures) {
    std::vector<Gpu> gpus;
    for (unsigned i = 0; i < count; ++i) {
      Gpu g;
      g.index = i;
      if (nvml::Return rc = api.nvmlDeviceGetHandleByIndex_v2(i, &g.device); rc != nvml::kSuccess) {
        failures->push_back(
            {"gpu.nvml_error", fmt::format("NVML device {}: {}", i,
                                       NvmlCallError(api, "nvmlDeviceGetHandleByIndex_v2", rc))});
        continue;
      }
      nvml::PciInfo pci{};
      if (nvml::Return rc = api.nvmlDeviceGetPciInfo_v3(g.device, &pci); rc != nvml::kSuccess) {
        failures->push_back(
            {"gpu.nvml_error", fmt::format("NVML device {}: {}", i,
                                       NvmlCallError(api, "nvmlDeviceGetPciInfo_v3", rc))});
        continue;
      }
      pci.busId[sizeof pci.busId - 1] = '\0';
      const std::string raw = text::Printable(pci.busId, sizeof pci.busId);
      g.bus_id = CanonicalBusId(raw);
      if (g.bus_id.empty()) g.bus_id = raw.empty() ? fmt::format("nvml{}", i) : raw;
      char name[nvml::kNameBuffer] = {};
      if (api.nvmlDeviceGetName(g.device, name, sizeof name) == nvml::kSuccess) {
        name[sizeof name - 1] = '\0';
        g.name = text::Printable(name, sizeof name);
      }
      char uuid[nvml::kUuidBuffer] = {};
      if (api.nvmlDeviceGetUUID(g.device, uuid, sizeof uuid) == nvml::kSuccess) {
        uuid[sizeof uuid - 1] = '\0';
        g.uuid = text::Printable(uuid, sizeof uuid);
      }
      gpus.push_back(std::move(g));
    }
    std::stable_sort(gpus.begin(), gpus.end(),
                     [](const Gpu& a, const Gpu& b) { return a.bus_id < b.bus_id; });
    for (std::size_t i = 0; i < gpus.size(); ++i) gpus[i].entity = fmt::format("gpu{}", i);
    return gpus;
  }

  static Measurement Node(const NvmlApi& api, const std::vector<Gpu>& gpus, unsigned count) {
    Measurement m;
    m.entity = "node";
    m.metric = "gpu_count";
    m.value = count;
    m.unit = "count";
    m.samples = {m.value};
    char driver[nvml::kDriverBuffer] = {};
    if (api.nvmlSystemGetDriverVersion(driver, sizeof driver) == nvml::kSuccess) {
      driver[sizeof driver - 1] = '\0';
      m.info["driver_version"] = text::Printable(driver, sizeof driver);
    }
    std::vector<std::string> models;
    for (const Gpu& g : gpus) {
      if (std::find(models.begin(), models.end(), g.name) == models.end()) models.push_back(g.name);
      m.info[g.entity] = fmt::format("bus_id={} uuid={} model={}", g.bus_id, g.uuid, g.name);
      if (!g.not_supported.empty()) {
        m.info[g.entity + "_not_supported"] = fmt::format("{}", fmt::join(g.not_supported, ","));
      }
    }
    m.info["model"] = fmt::format("{}", fmt::join(models, ","));
    return m;
  }

  NvmlLoader nvml_;
  KernelLogReader kernel_log_;
};

}  // namespace

std::unique_ptr<Probe> MakeGpuHealthProbe(NvmlLoader nvml, KernelLogReader kernel_log) {
  return std::make_unique<HealthProbe>(std::move(nvml), std::move(kernel_log));
}

std::unique_ptr<Probe> MakeGpuHealthProbe() {
  return MakeGpuHealthProbe(LoadNvml, [] { return ReadKernelLog(); });
}

}  // namespace gpuforge::probe::internal
