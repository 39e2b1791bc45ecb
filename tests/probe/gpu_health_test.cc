// gpu.health against a fake NVML (function pointers to the fakes below, with recorded
// answers) and a fake kernel log. No GPU or NVML is needed; none was used to write this.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/health.h"
#include "probe/gpu/nvml_api.h"
#include "probe/fake_nvml.h"

namespace gpuforge::probe::internal {
namespace {

const char* kLog =
    "[  5.100000] nvidia 0000:1b:00.0: enabling device\n"
    "[ 812.000001] NVRM: Xid (PCI:0000:1b:00): 79, pid=4242, name=python3, GPU has fallen off "
    "the bus.\n"
    "[ 813.000001] NVRM: Xid (PCI:0000:1b:00): 79, pid=4242, name=python3, GPU has fallen off "
    "the bus.\n"
    "[ 900.000000] NVRM: Xid (PCI:0000:c3:00): 13, Graphics SM Warp Exception\n"
    "[ 901.000000] NVRM: Xid (PCI:0000:1b:00): 99999999999, hostile\n";

// An application's Xids (13 graphics exception, 31 page fault, 43 channel stopped, 45 cleanup)
// warn; the GPU's own (48 double-bit ECC) fail: they are counted apart.
const char* kMixedXidLog =
    "[ 10.0] NVRM: Xid (PCI:0000:1b:00): 31, pid=77, name=python3, Ch 00000010, intr 00000000. "
    "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000\n"
    "[ 11.0] NVRM: Xid (PCI:0000:1b:00): 43, pid=77, name=python3, Ch 00000010\n"
    "[ 12.0] NVRM: Xid (PCI:0000:1b:00): 45, pid=77, name=python3, Ch 00000010\n"
    "[ 13.0] NVRM: Xid (PCI:0000:1b:00): 13, pid=78, name=a.out, Graphics Exception\n"
    "[ 14.0] NVRM: Xid (PCI:0000:9a:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
    "double bit error (DBE) has been detected on GPU in the framebuffer\n";

class GpuHealthTest : public ::testing::Test {
 protected:
  void SetUp() override { g_nvml = &nvml_; }
  void TearDown() override { g_nvml = nullptr; }

  // Runs gpu.health on the fake; `log` nullptr: the kernel log cannot be read.
  ProbeResult Run(const char* log = kLog, NvmlApi api = FakeApi()) {
    auto shared = std::make_shared<NvmlApi>(api);
    std::unique_ptr<Probe> p = MakeGpuHealthProbe(
        [shared] {
          return NvmlLoad{shared, "", ""};
        },
        [log]() -> gpuforge::Result<std::string> {
          if (log == nullptr) return Error{"cannot open /dev/kmsg: Operation not permitted"};
          return std::string(log);
        });
    return RunProbe(*p, {}, nullptr);
  }

  // The one measurement of `entity` and `metric`; fails the test when there is not exactly one.
  static const Measurement& Get(const ProbeResult& r, const std::string& entity,
                                const std::string& metric) {
    const Measurement* found = nullptr;
    int n = 0;
    for (const Measurement& m : r.measurements) {
      if (m.entity == entity && m.metric == metric) {
        found = &m;
        ++n;
      }
    }
    EXPECT_EQ(n, 1) << entity << " " << metric;
    static const Measurement kNone;
    return found != nullptr ? *found : kNone;
  }
  static bool Has(const ProbeResult& r, const std::string& entity, const std::string& metric) {
    for (const Measurement& m : r.measurements) {
      if (m.entity == entity && m.metric == metric) return true;
    }
    return false;
  }

  FakeNvml nvml_;
};

// Two GPUs, NVML listing them out of bus order; the one at 1b has a row remap pending and HW
// slowdown among its throttle reasons.
void TwoGpus(FakeNvml* f) {
  FakeNvmlGpu a;
  a.bus_id = "00000000:9A:00.0";
  a.uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
  a.clock_reasons = nvml::kReasonGpuIdle | nvml::kReasonSwPowerCap;
  a.nvlinks[3] = 0;
  FakeNvmlGpu b;
  b.bus_id = "00000000:1B:00.0";
  b.uuid = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
  b.remap_pending = 1;
  b.clock_reasons = nvml::kReasonGpuIdle | nvml::kReasonHwSlowdown;
  f->gpus = {a, b};
}

TEST_F(GpuHealthTest, ReportsEachGpuInBusOrderWithRemapAndThrottle) {
  TwoGpus(&nvml_);
  const ProbeResult r = Run();
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  EXPECT_EQ(r.probe, "gpu.health");
  EXPECT_EQ(nvml_.inits, 1);
  EXPECT_EQ(nvml_.shutdowns, 1);

  const Measurement& node = Get(r, "node", "gpu_count");
  EXPECT_EQ(node.value, 2);
  EXPECT_EQ(node.unit, "count");
  EXPECT_EQ(node.info.at("driver_version"), "570.86.15");
  EXPECT_EQ(node.info.at("model"), "NVIDIA H200");
  // gpu0 is the lower bus address, whatever NVML's index.
  EXPECT_EQ(node.info.at("gpu0"),
            "bus_id=0000:1b:00.0 uuid=GPU-bbbbbbbb-0000-0000-0000-000000000000 model=NVIDIA H200");
  EXPECT_EQ(node.info.at("gpu1").substr(0, 20), "bus_id=0000:9a:00.0 ");
  EXPECT_EQ(node.info.at("gpu0_not_supported"), "retired_pages_pending");
  EXPECT_FALSE(Has(r, "gpu0", "retired_pages_pending"));

  EXPECT_EQ(Get(r, "gpu0", "remap_pending").value, 1);
  EXPECT_EQ(Get(r, "gpu0", "remap_pending").unit, "bool");
  EXPECT_EQ(Get(r, "gpu1", "remap_pending").value, 0);
  EXPECT_EQ(Get(r, "gpu0", "remap_failure").value, 0);
  EXPECT_EQ(Get(r, "gpu0", "remap_corrected_rows").value, 1);

  const Measurement& t0 = Get(r, "gpu0", "throttle_reasons");
  EXPECT_EQ(t0.value, 9);
  EXPECT_EQ(t0.unit, "bitmask");
  EXPECT_EQ(t0.info.at("active"), "gpu_idle,hw_slowdown");
  EXPECT_EQ(Get(r, "gpu0", "throttle_slowdown").value, 1);
  EXPECT_EQ(Get(r, "gpu0", "throttle_slowdown").info.at("reasons"), "hw_slowdown");
  // Idle and SW power cap are routine, not slowdowns.
  EXPECT_EQ(Get(r, "gpu1", "throttle_reasons").info.at("active"), "gpu_idle,sw_power_cap");
  EXPECT_EQ(Get(r, "gpu1", "throttle_slowdown").value, 0);
  EXPECT_EQ(Get(r, "gpu1", "throttle_slowdown").info.at("reasons"), "none");

  EXPECT_EQ(Get(r, "gpu0", "ecc_uncorrected_volatile").value, 0);
  EXPECT_EQ(Get(r, "gpu0", "ecc_corrected_volatile").value, 3);
  EXPECT_EQ(Get(r, "gpu0", "ecc_corrected_sram_aggregate").value, 12);
  EXPECT_EQ(Get(r, "gpu0", "ecc_corrected_dram_aggregate").value, 40);
  EXPECT_DOUBLE_EQ(Get(r, "gpu0", "power_draw").value, 87.123);
  EXPECT_EQ(Get(r, "gpu0", "power_draw").unit, "W");
  EXPECT_EQ(Get(r, "gpu0", "power_limit").value, 700);
  EXPECT_EQ(Get(r, "gpu0", "temperature").value, 34);
  EXPECT_EQ(Get(r, "gpu0", "temperature").unit, "C");
  EXPECT_EQ(Get(r, "gpu0", "pcie_gen_current").value, 5);
  EXPECT_EQ(Get(r, "gpu0", "pcie_width_max").unit, "lanes");
  EXPECT_EQ(Get(r, "gpu0", "nvlink_up").value, 18);
  EXPECT_EQ(Get(r, "gpu1", "nvlink_up").value, 17);
  EXPECT_EQ(Get(r, "gpu1", "nvlink_total").value, 18);
  EXPECT_EQ(Get(r, "gpu0", "persistence").value, 1);

  // Xid: two 79s on gpu0, a 13 on a device NVML does not list, one hostile line.
  EXPECT_EQ(node.info.at("xid_source"), "kernel log (/dev/kmsg, since boot)");
  const Measurement& xid = Get(r, "node", "xid_count");
  EXPECT_EQ(xid.value, 3);
  EXPECT_EQ(xid.info.at("codes"), "13:1,79:2");
  EXPECT_EQ(xid.info.at("other_devices"), "0000:c3:00.0");
  EXPECT_EQ(xid.info.at("malformed_lines"), "1");
  EXPECT_EQ(xid.info.at("last"), "0000:c3:00.0 xid 13: Graphics SM Warp Exception");
  EXPECT_EQ(Get(r, "gpu0", "xid_count").value, 2);
  EXPECT_EQ(Get(r, "gpu0", "xid_count").info.at("codes"), "79:2");
  EXPECT_EQ(Get(r, "gpu0", "xid_app_count").value, 0);
  EXPECT_EQ(Get(r, "gpu0", "xid_info_count").value, 0);
  EXPECT_EQ(Get(r, "gpu1", "xid_count").value, 0);
  EXPECT_EQ(xid.info.at("hardware_codes"), "79:2");

  // Measurements come node first, then each GPU's together.
  EXPECT_EQ(r.measurements[0].metric, "gpu_count");
  EXPECT_EQ(r.measurements[1].metric, "xid_count");
  std::vector<std::string> order;
  for (const Measurement& m : r.measurements) {
    if (order.empty() || order.back() != m.entity) order.push_back(m.entity);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"node", "gpu0", "gpu1"}));
}

TEST_F(GpuHealthTest, ApplicationXidsAreCountedApartFromHardwareXids) {
  TwoGpus(&nvml_);
  const ProbeResult r = Run(kMixedXidLog);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(Get(r, "gpu0", "xid_count").value, 0);  // 1b: only what python3 and a.out did
  EXPECT_EQ(Get(r, "gpu0", "xid_app_count").value, 4);
  EXPECT_EQ(Get(r, "gpu0", "xid_app_count").info.at("codes"), "13:1,31:1,43:1,45:1");
  EXPECT_EQ(Get(r, "gpu1", "xid_count").value, 1);  // 9a: a double-bit ECC error
  EXPECT_EQ(Get(r, "gpu1", "xid_count").info.at("codes"), "48:1");
  EXPECT_EQ(Get(r, "gpu1", "xid_app_count").value, 0);
  EXPECT_EQ(Get(r, "node", "xid_count").value, 5);
  EXPECT_EQ(Get(r, "node", "xid_count").info.at("hardware_codes"), "48:1");
}

TEST_F(GpuHealthTest, AnErrorMidwayNamesTheCallAndTheGpuAndKeepsTheRest) {
  TwoGpus(&nvml_);
  nvml_.gpus[0].fail_call = "nvmlDeviceGetPowerUsage";  // bus 9a: gpu1
  const ProbeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "gpu.nvml_error");
  EXPECT_EQ(r.reason,
            "gpu1 (0000:9a:00.0): nvmlDeviceGetPowerUsage failed: GPU is lost (NVML error 15)");
  EXPECT_EQ(nvml_.shutdowns, 1);
  // gpu0 read in full; gpu1 up to the failed call, nothing after it; Xid still counted.
  EXPECT_TRUE(Has(r, "gpu0", "persistence"));
  EXPECT_TRUE(Has(r, "gpu1", "throttle_reasons"));
  EXPECT_FALSE(Has(r, "gpu1", "power_draw"));
  EXPECT_FALSE(Has(r, "gpu1", "temperature"));
  EXPECT_FALSE(Has(r, "gpu1", "persistence"));
  EXPECT_TRUE(Has(r, "gpu1", "xid_count"));
}

TEST_F(GpuHealthTest, AnNvLinkErrorNamesTheLink) {
  TwoGpus(&nvml_);
  nvml_.gpus[1].fail_call = "nvmlDeviceGetNvLinkState";
  nvml_.gpus[1].fail_rc = 999;
  const ProbeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.reason,
            "gpu0 (0000:1b:00.0): nvmlDeviceGetNvLinkState failed: Unknown Error (NVML error 999) "
            "for link 0");
}

TEST_F(GpuHealthTest, NotSupportedAndMissingCallsAreListedNotZero) {
  FakeNvmlGpu pcie;
  pcie.name = "NVIDIA L40S";
  pcie.nvlinks.clear();
  pcie.not_supported = {"nvmlDeviceGetRemappedRows", "nvmlDeviceGetMemoryErrorCounter"};
  nvml_.gpus = {pcie};
  NvmlApi api = FakeApi();
  api.nvmlDeviceGetPersistenceMode = nullptr;  // as from a driver without the symbol
  const ProbeResult r = Run(kLog, api);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(Get(r, "node", "gpu_count").info.at("gpu0_not_supported"),
            "ecc_corrected_sram_aggregate,ecc_corrected_dram_aggregate,remap_pending,persistence");
  EXPECT_TRUE(Has(r, "gpu0", "retired_pages_pending"));
  EXPECT_FALSE(Has(r, "gpu0", "remap_pending"));
  EXPECT_FALSE(Has(r, "gpu0", "persistence"));
  EXPECT_EQ(Get(r, "gpu0", "nvlink_up").value, 0);
  EXPECT_EQ(Get(r, "gpu0", "nvlink_total").value, 0);
}

TEST_F(GpuHealthTest, AnUnreadableKernelLogIsSaidNotCountedAsZero) {
  TwoGpus(&nvml_);
  const ProbeResult r = Run(nullptr);
  ASSERT_EQ(r.outcome, Outcome::kOk);
  const Measurement& node = Get(r, "node", "gpu_count");
  EXPECT_EQ(node.info.at("xid_source"), "unavailable");
  EXPECT_EQ(node.info.at("xid_unavailable_reason"),
            "cannot open /dev/kmsg: Operation not permitted");
  EXPECT_FALSE(Has(r, "node", "xid_count"));
  EXPECT_FALSE(Has(r, "gpu0", "xid_count"));
}

TEST_F(GpuHealthTest, InitAndCountDecideSkipOrError) {
  nvml_.init_rc = nvml::kDriverNotLoaded;
  ProbeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.none");
  EXPECT_EQ(r.reason, "nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
  EXPECT_EQ(nvml_.shutdowns, 0);

  nvml_.init_rc = 18;
  r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "gpu.nvml_error");
  EXPECT_EQ(r.reason,
            "nvmlInit_v2 failed: RM has detected an NVML/RM version mismatch. (NVML error 18)");

  nvml_.init_rc = nvml::kSuccess;
  r = Run();  // no GPUs
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.none");
  EXPECT_EQ(nvml_.shutdowns, 1);
}

TEST_F(GpuHealthTest, AMissingLibrarySkipsWithTheLoadersReason) {
  std::unique_ptr<Probe> p = MakeGpuHealthProbe(
      [] {
        return NvmlLoad{nullptr, "gpu.no_nvml", "NVML does not load: libnvidia-ml.so.1: nope"};
      },
      [] { return gpuforge::Result<std::string>(std::string()); });
  const ProbeResult r = RunProbe(*p, {}, nullptr);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "gpu.no_nvml");
  EXPECT_EQ(r.reason, "NVML does not load: libnvidia-ml.so.1: nope");
}

TEST_F(GpuHealthTest, EightGpusFitOneStrictJsonLine) {
  for (int i = 0; i < 8; ++i) {
    FakeNvmlGpu g;
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + 0x20 * i);
    g.bus_id = bus;
    g.name = "NVIDIA H200 \x01\xff";  // a hostile name is made printable
    nvml_.gpus.push_back(g);
  }
  const ProbeResult r = Run();
  ASSERT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(Get(r, "node", "gpu_count").info.at("model"), "NVIDIA H200 ??");
  const std::string line = ToJsonLine(r);
  EXPECT_LT(line.size(), 64u * 1024);
  gpuforge::Result<ProbeResult> back = ParseJsonLine("test", line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->measurements.size(), r.measurements.size());
}

}  // namespace
}  // namespace gpuforge::probe::internal
