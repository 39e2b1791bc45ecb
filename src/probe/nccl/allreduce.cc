#include "probe/nccl/allreduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "probe/gpu/failure.h"
#include "probe/gpu/kernels.h"
#include "probe/nccl/allreduce_internal.h"

namespace gpuforge::probe::internal {

namespace allreduce {

namespace {

constexpr const char* kKey = "nccl.allreduce";
constexpr std::uint64_t kMaxBytes = std::uint64_t{64} << 30;
constexpr std::uint64_t kQuickBytes = std::uint64_t{4} << 20;  // 1024 x 1024 floats
constexpr int kQuickIters = 100;
constexpr int kQuickWarmup = 5;
constexpr std::size_t kLogBudget = 12 * 1024;  // characters of NCCL's log in one result

// Sizes as nccl-tests takes them: any byte count, plain ("8") or with a unit ("64MiB").
const ParamSpec kMinBytes{"min_bytes", ParamKind::kByteCount, "8", kElementBytes, kMaxBytes,
                          "smallest size, in bytes or with a unit (8, 1MiB)"};
const ParamSpec kMaxBytesParam{"max_bytes", ParamKind::kByteCount, "8GiB", kElementBytes, kMaxBytes,
                               "largest size; send and receive buffers of this size per GPU"};
const ParamSpec kStepFactor{"step_factor", ParamKind::kWhole, "2", 2, 1024, "each size is the previous times this"};
const ParamSpec kWarmup{"warmup", ParamKind::kWhole, "5", 0, 1000,
                        "untimed operations before timing, per size and placement"};
const ParamSpec kIters{"iters", ParamKind::kWhole, "20", 1, 100000, "timed operations per size and placement"};
const ParamSpec kCheck{"check", ParamKind::kWhole, "1", 0, 1,
                       "1: after timing, one more operation on fresh data, every element checked"};
const ParamSpec kOp{"op", ParamKind::kText, "sum", 0, 0, "reduction: sum, prod, max or min"};
const ParamSpec kDatatype{"datatype", ParamKind::kText, "float", 0, 0, "element type: float"};
// 'all' or a whole number, read as kWhole when it is not 'all'.
const ParamSpec kGpus{"gpus", ParamKind::kWhole, "all", 1, 1024, "'all' or N: the first N GPUs in PCI bus order"};
const ParamSpec kNodes{"nodes", ParamKind::kWhole, "1", 1, 1024,
                       "agents taking part; more than 1 meets the others through the controller"};
// Its upper bound is nodes - 1.
const ParamSpec kNodeIndex{"node_index", ParamKind::kWhole, "0", 0, 0,
                           "this agent's place among the nodes (0 makes the NCCL id)"};
const ParamSpec kPreset{"preset", ParamKind::kText, "", 0, 0,
                        "'quick': one size of 4 MiB, 100 operations (overrides the sweep)"};
const ParamSpec kNcclDebug{"nccl_debug", ParamKind::kText, "INFO", 0, 0,
                           "NCCL_DEBUG unless the environment sets it: WARN, INFO, TRACE"};
const ParamSpec kNeedIb{"need_ib", ParamKind::kWhole, "0", 0, 1,
                        "1: stop with nccl.no_ib right after NCCL's init when it chose sockets"};

gpuforge::Result<Settings> ParseSettings(const Context& ctx) {
  Settings s;
  auto text = [&](const char* name) -> gpuforge::Result<std::string> { return ctx.Text(name); };
  gpuforge::Result<std::string> preset = text("preset");
  if (!preset.ok()) return preset.error();
  if (*preset != "" && *preset != "quick") {
    return Error{fmt::format("parameter preset must be empty or 'quick', not '{}'", *preset)};
  }
  s.quick = *preset == "quick";
  gpuforge::Result<std::uint64_t> lo = Bytes(ctx, kMinBytes);
  if (!lo.ok()) return lo.error();
  gpuforge::Result<std::uint64_t> hi = Bytes(ctx, kMaxBytesParam);
  if (!hi.ok()) return hi.error();
  if (*hi < *lo) {
    return Error{fmt::format("parameter max_bytes ({}) is smaller than min_bytes ({})", *hi, *lo)};
  }
  s.min_bytes = *lo;
  s.max_bytes = *hi;
  gpuforge::Result<std::int64_t> step = Whole(ctx, kStepFactor);
  if (!step.ok()) return step.error();
  s.step_factor = static_cast<std::uint64_t>(*step);
  gpuforge::Result<std::int64_t> warmup = Whole(ctx, kWarmup);
  if (!warmup.ok()) return warmup.error();
  s.warmup = static_cast<int>(*warmup);
  gpuforge::Result<std::int64_t> iters = Whole(ctx, kIters);
  if (!iters.ok()) return iters.error();
  s.iters = static_cast<int>(*iters);
  gpuforge::Result<std::int64_t> check = Whole(ctx, kCheck);
  if (!check.ok()) return check.error();
  s.check = *check == 1;
  gpuforge::Result<std::string> op = text("op");
  if (!op.ok()) return op.error();
  if (*op != "sum" && *op != "prod" && *op != "max" && *op != "min") {
    return Error{fmt::format("parameter op must be sum, prod, max or min, not '{}'", *op)};
  }
  s.op = *op;
  gpuforge::Result<std::string> type = text("datatype");
  if (!type.ok()) return type.error();
  if (*type != "float") {
    return Error{
        fmt::format("parameter datatype must be float (the one type supported), not '{}'", *type)};
  }
  gpuforge::Result<std::string> gpus = text("gpus");
  if (!gpus.ok()) return gpus.error();
  if (*gpus != "all") {
    gpuforge::Result<std::int64_t> n = Whole(ctx, kGpus);
    if (!n.ok())
      return Error{
          fmt::format("parameter gpus must be 'all' or a count from 1 to 1024, not '{}'", *gpus)};
    s.gpus = static_cast<int>(*n);
  }
  gpuforge::Result<std::int64_t> nodes = Whole(ctx, kNodes);
  if (!nodes.ok()) return nodes.error();
  s.nodes = static_cast<int>(*nodes);
  gpuforge::Result<std::int64_t> index = Whole(ctx, kNodeIndex.Within(0, s.nodes - 1));
  if (!index.ok()) return index.error();
  s.node_index = static_cast<int>(*index);
  if (s.nodes > 1 && s.warmup < 1) {
    // Without a barrier of its own, the warm-up op is what lines the nodes up before the timer.
    return Error{"parameter warmup must be at least 1 when nodes > 1: the warm-up operation lines the nodes up "
                 "before timing starts"};
  }
  gpuforge::Result<std::string> debug = text("nccl_debug");
  if (!debug.ok()) return debug.error();
  std::string level = *debug;
  std::transform(level.begin(), level.end(), level.begin(),
                 [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; });
  if (level == "VERSION") {
    // NCCL's showVersion() prints the version line through its VERSION level, which is what
    // the agent's stdout (its result channel) would carry; WARN keeps the line, in the log file.
    return Error{"parameter nccl_debug=VERSION is refused: at that level NCCL prints its version on "
                 "stdout, the agent's result channel; use WARN (which logs the version too), INFO or "
                 "TRACE"};
  }
  if (level != "WARN" && level != "INFO" && level != "TRACE") {
    return Error{fmt::format("parameter nccl_debug must be WARN, INFO or TRACE, not '{}'", *debug)};
  }
  s.nccl_debug = level;
  gpuforge::Result<std::int64_t> need_ib = Whole(ctx, kNeedIb);
  if (!need_ib.ok()) return need_ib.error();
  s.need_ib = *need_ib == 1;
  if (s.quick) {
    // The guides' quick check: one size, 100 operations; it overrides the sweep parameters.
    s.min_bytes = s.max_bytes = kQuickBytes;
    s.iters = kQuickIters;
    s.warmup = kQuickWarmup;
  }
  return s;
}

}  // namespace

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

namespace {

std::string Entity(const Row& r) {
  return fmt::format("{} {}", r.in_place ? "in-place" : "out-of-place", r.bytes);
}

std::string VersionText(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::vector<Measurement> Measurements(const Settings& s, const Sweep& sweep,
                                      const NcclLogSummary& log) {
  std::vector<Measurement> out;
  if (sweep.rows.empty()) return out;
  const int n = sweep.nranks;
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  double busbw_sum = 0, last_out_busbw = 0, quick_ms = 0;
  std::uint64_t wrong_total = 0, last_out_bytes = 0;
  for (const Row& r : sweep.rows) {
    const std::map<std::string, std::string> info = {{"size", std::to_string(r.bytes)},
                                                     {"count", std::to_string(r.count)},
                                                     {"type", s.type},
                                                     {"redop", s.op}};
    const double algbw = static_cast<double>(r.bytes) / 1e9 / r.seconds;
    const double busbw = algbw * bus_factor;
    const double us = r.seconds * 1e6;
    out.push_back({Entity(r), "time_us", us, "us",
                   r.samples.empty() ? std::vector<double>{us} : r.samples, info});
    out.push_back({Entity(r), "algbw", algbw, "GB/s", {}, info});
    out.push_back({Entity(r), "busbw", busbw, "GB/s", {}, info});
    out.push_back({Entity(r), "wrong", static_cast<double>(r.wrong), "count", {}, info});
    busbw_sum += busbw;
    wrong_total += r.wrong;
    quick_ms = std::max(quick_ms, r.seconds * 1e3);
    if (!r.in_place) {
      last_out_busbw = busbw;
      last_out_bytes = r.bytes;
    }
  }
  std::map<std::string, std::string> info = {
      {"network", log.network.empty() ? "unknown" : log.network},
      {"nccl_version", log.version.empty() ? VersionText(sweep.version) : log.version},
      {"ib_no_device", log.ib_no_device ? "1" : "0"},
      {"ranks", std::to_string(n)},
      {"nodes", std::to_string(s.nodes)},
      {"check", sweep.check},
  };
  if (!sweep.check_why.empty()) info["check_why"] = sweep.check_why;
  if (log.ib_no_device) info["ib_no_device_line"] = log.ib_no_device_line;
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(info.begin(), info.end());
    return more;
  };
  out.push_back({"allreduce",
                 "busbw",
                 last_out_busbw,
                 "GB/s",
                 {},
                 with({{"size", std::to_string(last_out_bytes)}, {"placement", "out-of-place"}})});
  out.push_back({"allreduce",
                 "avg_busbw",
                 busbw_sum / static_cast<double>(sweep.rows.size()),
                 "GB/s",
                 {},
                 info});
  out.push_back({"allreduce", "wrong_total", static_cast<double>(wrong_total), "count", {}, info});
  out.push_back({"allreduce", "ranks", static_cast<double>(n), "count", {}, info});
  if (s.quick) {
    out.push_back(
        {"allreduce",
         "quick_op_ms",
         quick_ms,
         "ms",
         {},
         with({{"size", std::to_string(kQuickBytes)}, {"iters", std::to_string(s.iters)}})});
  }
  return out;
}

}  // namespace

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

namespace {

class AllReduceProbe : public Probe {
 public:
  AllReduceProbe(CudaLoader cuda, NcclLoader nccl, NcclLogFactory log,
                 std::span<const unsigned char> kernels, std::function<double()> clock)
      : cuda_(std::move(cuda)), nccl_(std::move(nccl)), log_(std::move(log)), kernels_(kernels),
        clock_(std::move(clock)) {}

  std::string key() const override { return kKey; }
  std::string description() const override {
    return "NCCL all-reduce bus bandwidth and correctness over this node's GPUs (or several "
           "nodes'), as nccl-tests' all_reduce_perf";
  }
  std::vector<Param> params() const override {
    return {kMinBytes, kMaxBytesParam, kStepFactor, kWarmup, kIters, kCheck, kOp,
            kDatatype, kGpus, kNodes, kNodeIndex, kPreset, kNcclDebug, kNeedIb};
  }

  ProbeResult Run(const Context& ctx) override {
    gpuforge::Result<Settings> s = ParseSettings(ctx);
    if (!s.ok()) return Fail(kKey, "probe.bad_param", s.error().message);
    s->clock = clock_;
    if (s->nodes > 1 && !ctx.exchange) {
      return Fail(
          kKey, "exchange.missing",
          fmt::format("nodes={} needs the controller's exchange; this agent runs alone", s->nodes));
    }
    CudaLoad cuda = cuda_();
    if (!cuda.api) return Skip(kKey, cuda.code, cuda.reason);
    NcclLoad nccl = nccl_();
    if (!nccl.api) return Skip(kKey, nccl.code, nccl.reason);
#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
    return Measure(*cuda.api, *nccl.api, *s, ctx);
#else
    return Skip(kKey, "nccl.no_headers", "this build has no NCCL support");
#endif
  }

 private:
#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
  ProbeResult Measure(const CudaApi& cu, const NcclApi& nc, const Settings& s,
                      const Context& ctx) const {
    std::vector<CudaGpu> gpus;
    if (auto stop = OpenCuda(cu, kKey, &gpus)) return *stop;
    if (s.gpus > static_cast<int>(gpus.size())) {
      return Fail(kKey, "probe.bad_param",
                  fmt::format("gpus={} but the CUDA driver sees {} GPU(s)", s.gpus, gpus.size()));
    }
    if (s.gpus > 0) gpus.resize(static_cast<std::size_t>(s.gpus));
    std::unique_ptr<NcclLogCapture> log = log_();
    log->Start(s.nccl_debug);
    Sweep sweep;
    std::vector<Failure> failures;
    // NCCL picks its network during init and says so ("Using network Socket"): over sockets the
    // default 8 GiB sweep runs for minutes to measure what is already known to be wrong.
    auto network_check = [&]() -> std::optional<Failure> {
      if (!s.need_ib) return std::nullopt;
      const NcclLogSummary early = ParseNcclLog(log->Finish());
      if (early.network != "Socket") return std::nullopt;
      return Failure{"nccl.no_ib",
                     fmt::format("NCCL chose network Socket during init{}; stopped before the sweep "
                                 "(need_ib=1)",
                                 early.ib_no_device ? ": \"" + early.ib_no_device_line + "\"" : "")};
    };
    if (auto f = RunSweep(cu, nc, s, ctx, gpus, kernels_, &sweep, network_check)) {
      failures.push_back(*f);
    }
    const NcclLogSummary summary = ParseNcclLog(log->Finish());
    // Only a node whose own sweep succeeded trades times; the others are stuck in NCCL or
    // gone, and the controller's timeout ends their round.
    if (failures.empty() && s.nodes > 1) {
      if (auto f = ShareTimes(ctx, s, &sweep)) failures.push_back(*f);
    }
    std::uint64_t wrong = 0, elements = 0;
    for (const Row& r : sweep.rows) {
      wrong += r.wrong;
      elements += r.count * static_cast<std::uint64_t>(sweep.nranks);
    }
    if (wrong > 0) {
      failures.push_back(
          {"nccl.wrong_data",
           fmt::format("{} of {} checked elements were wrong over all "
                       "ranks; first here: {}",
                       wrong, elements,
                       sweep.first_wrong.empty() ? "on another node" : sweep.first_wrong)});
    }
    ProbeResult r = Finish(kKey, Measurements(s, sweep, summary), failures);
    // A whole sweep's measurements already take most of the 64 KiB a result line may have.
    std::size_t chars = 0;
    for (const std::string& line : summary.kept) {
      if ((chars += line.size() + 4) > kLogBudget) break;
      r.log.push_back(line);
    }
    return r;
  }
#endif

  CudaLoader cuda_;
  NcclLoader nccl_;
  NcclLogFactory log_;
  std::span<const unsigned char> kernels_;
  std::function<double()> clock_;
};

}  // namespace

}  // namespace allreduce

std::unique_ptr<Probe> MakeNcclAllReduceProbe(CudaLoader cuda, NcclLoader nccl, NcclLogFactory log,
                                              std::span<const unsigned char> kernels,
                                              std::function<double()> clock) {
  return std::make_unique<allreduce::AllReduceProbe>(std::move(cuda), std::move(nccl), std::move(log),
                                                     kernels, std::move(clock));
}

std::unique_ptr<Probe> MakeNcclAllReduceProbe() {
  return MakeNcclAllReduceProbe(LoadCudaDriver, LoadNccl, MakeNcclLogFile, EmbeddedKernels());
}

}  // namespace gpuforge::probe::internal
