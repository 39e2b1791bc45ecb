#pragma once

// Burn-in's sampling, as probe data (#30): what the agent keeps of its 1 Hz NVML samples of one
// GPU over hours of load. Kept compactly: one window per 10 s with the min / median / max of
// each gauge, the clock-event reason bits as streaks (so that "set for 3 consecutive samples"
// can still be told across windows), the error counters as they stood at the window's end, and
// the discrete events (Xids) with their time. A GPU's series ends where its samples end: a node
// that died mid-run leaves its data up to that minute, and says why it ended where it knows.
//
// Judging these series is validate's job (validate/burnin.h); this header holds only the shape.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuforge::probe {

// The span of one window: 10 samples at 1 Hz.
inline constexpr double kGpuWindowSeconds = 10;

// NVML's clock-event reason bits (nvml.h, nvmlClocksEventReason*; the older name is
// nvmlClocksThrottleReason*), the ones burn-in keeps. 0x1 GPU idle and 0x2 application clocks
// setting say nothing about the hardware and are not kept.
inline constexpr std::uint64_t kClocksEventSwPowerCap = 0x4;     // normal under GEMM; never judged
inline constexpr std::uint64_t kClocksEventHwSlowdown = 0x8;     // HW slowdown (thermal or power brake input)
inline constexpr std::uint64_t kClocksEventSwThermal = 0x20;     // the driver's own thermal slowdown
inline constexpr std::uint64_t kClocksEventHwThermal = 0x40;     // HW thermal slowdown
inline constexpr std::uint64_t kClocksEventHwPowerBrake = 0x80;  // HW power brake (the board's power supply asked)
inline constexpr std::uint64_t kClocksEventKept[] = {kClocksEventSwPowerCap, kClocksEventHwSlowdown,
                                                     kClocksEventSwThermal, kClocksEventHwThermal,
                                                     kClocksEventHwPowerBrake};

// One gauge over a window: min, median and max of its samples.
struct Spread {
  double min = 0;
  double median = 0;
  double max = 0;
  bool operator==(const Spread&) const = default;
};

// One reason bit over a window of `samples` samples: how many had it set, the longest run of
// consecutive samples with it set, and the runs touching the window's start and end (equal to
// the window's samples when every sample had it).
struct BitStreaks {
  int set = 0;
  int longest = 0;
  int head = 0;
  int tail = 0;
  bool operator==(const BitStreaks&) const = default;
};

// Counters as NVML gave them at the window's end (since the driver loaded); absent where NVML
// does not give one on this GPU (NOT_SUPPORTED), which the judge says rather than passing.
struct GpuCounters {
  std::optional<double> ecc_uncorrectable;  // volatile, DRAM + SRAM
  std::optional<double> ecc_correctable;    // volatile
  std::optional<double> remap_failed;       // rows that failed to remap
  std::optional<double> remap_pending;      // rows waiting for the next reset
  std::optional<double> pcie_replay;        // PCIe replay counter
  std::optional<double> nvlink_errors;      // CRC + replay + recovery, all links
  bool operator==(const GpuCounters&) const = default;
};

struct GpuWindow {
  double start_s = 0;  // seconds since the burn-in started
  int samples = 0;     // samples taken in the window (10 at 1 Hz; fewer where some failed)
  std::string phase;   // the load phase running: "gemm", "hbm", "pulse", "nccl", "idle"
  std::optional<Spread> power_w;
  std::optional<Spread> power_limit_w;  // the enforced limit
  std::optional<Spread> sm_clock_mhz;
  std::optional<Spread> mem_clock_mhz;
  std::optional<Spread> gpu_temp_c;
  std::optional<Spread> hbm_temp_c;
  std::optional<double> tflops;         // achieved by the GEMM phase over the window
  std::optional<double> wrong_elements; // GEMM results differing from the first (gpu-burn's check)
  std::optional<int> pcie_gen;          // the lowest current link generation seen in the window
  std::optional<int> pcie_width;        // the lowest current link width seen in the window
  // kClocksEventKept bit -> its streaks; a bit absent was never set in the window.
  std::vector<std::pair<std::uint64_t, BitStreaks>> reasons;
  GpuCounters counters;
  bool operator==(const GpuWindow&) const = default;
};

struct GpuEvent {
  double at_s = 0;
  int xid = 0;          // the driver's Xid code
  std::string detail;   // the kernel's or NVML's words, for people
  bool operator==(const GpuEvent&) const = default;
};

struct GpuSeries {
  std::string node;
  std::string gpu;    // "gpu0": the entity every burn-in verdict names
  std::string model;  // as NVML names it; peers are GPUs of the same model
  std::optional<int> pcie_gen_max;    // what the link can train to (GPU and slot)
  std::optional<int> pcie_width_max;
  double planned_s = 0;               // the burn-in's planned duration
  GpuCounters start_counters;         // read before the load started: what "new" is counted from
  std::vector<GpuWindow> windows;     // in time order
  std::vector<GpuEvent> events;       // in time order
  // Why the kernel log's Xids were not watched (kernel.dmesg_restrict without CAP_SYSLOG, no
  // /dev/kmsg); empty when they were. The Xid check SKIPs on it rather than passing.
  std::string xid_unread;
  // Where the samples stopped before planned_s: why, when the agent could say (NVML vanished,
  // the agent was stopped); empty for a node that just went silent.
  std::string ended_code;
  std::string ended_reason;
  bool operator==(const GpuSeries&) const = default;
};

// One 1 Hz sample of a GPU as the sampler read it; a field NVML did not give is absent.
struct GpuSample {
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> gpu_temp_c;
  std::optional<double> hbm_temp_c;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_width;
  std::optional<std::uint64_t> reasons;  // the clock-event reason bits
  GpuCounters counters;
};

// The samples of one window folded as GpuWindow keeps them: each gauge's min / median / max over
// the samples that have it, the lowest PCIe generation and width, each kept reason bit's streaks
// (a sample without reasons counts as none set), and the counters of the last sample that has
// each. The load's own figures (tflops, wrong_elements) are the caller's to add.
GpuWindow FoldWindow(double start_s, std::string phase, const std::vector<GpuSample>& samples);

}  // namespace gpuforge::probe
