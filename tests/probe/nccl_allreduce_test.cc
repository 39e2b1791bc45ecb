// nccl.allreduce against the fake CUDA driver API (fake_cuda.h) and the fake NCCL
// (fake_nccl.h): "device memory" is host memory, and the fake NCCL really reduces every rank's
// buffer (across threads, so two agents in two threads form one multi-node communicator
// through a fake controller exchange). The fakes fail, corrupt, hang and report asynchronous errors on request. None of this has run on
// a real GPU; one test opens the real libnccl.so.2 when it is there and asks its version.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/fake_cuda.h"
#include "probe/fake_nccl.h"
#include "probe/gpu/cuda_api.h"
#include "probe/nccl/allreduce.h"
#include "probe/nccl/nccl_api.h"

namespace gpuforge::probe::internal {
namespace {

// Lines of a real NCCL 2.28.9 log on one H200 (fixtures/nvidia-h200-1gpu/nccltests-debug.txt).
const std::vector<std::string> kFixtureLog = {
    "vm:520:520 [0] NCCL INFO ENV/Plugin: Could not find: libnccl-env.so",
    "vm:520:520 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>",
    "vm:520:520 [0] NCCL INFO cudaDriverVersion 13000",
    "vm:520:520 [0] NCCL INFO NCCL version 2.28.9+cuda13.0",
    "vm:520:520 [0] NCCL INFO Comm config nvlinkCentricSched set to 1",
    "vm:520:520 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so",
    "vm:520:520 [0] NCCL INFO NET/IB : No device found.",
    "vm:520:520 [0] NCCL INFO NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>",
    "vm:520:520 [0] NCCL INFO Failed to initialize NET plugin IB",
    "vm:520:520 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0>",
    "vm:520:520 [0] NCCL INFO Initialized NET plugin Socket",
    "vm:520:520 [0] NCCL INFO Assigned NET plugin Socket to comm",
    "vm:520:520 [0] NCCL INFO Using network Socket",
    "vm:520:520 [0] NCCL INFO ncclCommInitRankConfig comm 0x5633d2075690 rank 0 nranks 1 cudaDev 0 "
    "nvmlDev 0 busId 60 commId 0xd095ccf18202f486 - Init START",
    "vm:520:520 [0] NCCL INFO Channel 00/64 : 0",
    "vm:520:520 [0] NCCL INFO Bootstrap timings total 0.000681 (create 0.000036, send 0.000129, "
    "recv 0.000260, ring 0.000001, delay 0.000001)",
    "vm:520:520 [0] NCCL INFO ncclCommInitRankConfig comm 0x5633d2075690 rank 0 nranks 1 cudaDev 0 "
    "nvmlDev 0 busId 60 commId 0xd095ccf18202f486 - Init COMPLETE",
};

TEST(NcclLogTest, ParsesTheFixtureLog) {
  const NcclLogSummary s = ParseNcclLog(kFixtureLog);
  EXPECT_EQ(s.network, "Socket");
  EXPECT_EQ(s.version, "2.28.9+cuda13.0");
  EXPECT_TRUE(s.ib_no_device);
  EXPECT_EQ(s.ib_no_device_line, "vm:520:520 [0] NCCL INFO NET/IB : No device found.");
  const std::vector<std::string> kept = {
      kFixtureLog[1], kFixtureLog[3],  kFixtureLog[5],  kFixtureLog[6],  kFixtureLog[7],
      kFixtureLog[9], kFixtureLog[12], kFixtureLog[15], kFixtureLog[16],
  };
  EXPECT_EQ(s.kept, kept);
}

TEST(NcclLogTest, KeepsAtMostAHundredPrintableBoundedLines) {
  std::vector<std::string> lines(
      150, "host:1:1 [0] NCCL WARN NET/IB : bad \x01 thing " + std::string(400, 'x') + "\r");
  lines.push_back("host:1:1 [0] NCCL INFO Using network IB");
  const NcclLogSummary s = ParseNcclLog(lines);
  ASSERT_EQ(s.kept.size(), 100u);
  EXPECT_EQ(s.kept[0].size(), 300u);
  EXPECT_EQ(s.kept[0].find('\x01'), std::string::npos);
  EXPECT_EQ(s.kept[0].find('\r'), std::string::npos);
  EXPECT_EQ(s.network, "IB");  // found past the cap
  EXPECT_FALSE(s.ib_no_device);
  EXPECT_EQ(s.version, "");
}

TEST(NcclLogTest, NothingToSayIsEmpty) {
  const NcclLogSummary s =
      ParseNcclLog(std::vector<std::string>{"", "# nccl-tests version 2.19.6"});
  EXPECT_EQ(s.network, "");
  EXPECT_EQ(s.version, "");  // nccl-tests' own version is not NCCL's
  EXPECT_EQ(s.kept.size(), 1u);
}

TEST(NcclLoaderTest, LoadNcclGivesALibraryOrACleanCode) {
  const NcclLoad l = LoadNccl();
  if (l.api) {
    EXPECT_EQ(l.code, "");
  } else {
    EXPECT_TRUE(l.code == "nccl.no_library" || l.code == "nccl.no_headers" || l.code == "nccl.too_old")
        << l.code;
    EXPECT_FALSE(l.reason.empty());
  }
}

TEST(NcclLoaderTest, AMissingLibraryQuotesDlerror) {
  const std::array<const char*, 1> names = {"libnccl-gpuforge-missing.so.2"};
  const NcclLoad l = LoadNcclFrom(names);
  EXPECT_EQ(l.api, nullptr);
#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
  EXPECT_EQ(l.code, "nccl.no_library");
  EXPECT_NE(l.reason.find("libnccl-gpuforge-missing.so.2"), std::string::npos) << l.reason;
#else
  EXPECT_EQ(l.code, "nccl.no_headers");
#endif
}

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

TEST(NcclLoaderTest, ALibraryWithoutNcclSymbolsIsTooOld) {
  const std::array<const char*, 1> names = {"libm.so.6"};
  const NcclLoad l = LoadNcclFrom(names);
  EXPECT_EQ(l.api, nullptr);
  EXPECT_EQ(l.code, "nccl.too_old");
  EXPECT_NE(l.reason.find("ncclGetVersion"), std::string::npos) << l.reason;
}

TEST(NcclLoaderTest, TheRealLibraryTellsItsVersion) {
  const std::array<const char*, 3> names = {"/usr/local/cuda-13.0/lib/libnccl.so.2",
                                            "/usr/local/cuda/lib64/libnccl.so.2", "libnccl.so.2"};
  const NcclLoad l = LoadNcclFrom(names);
  if (!l.api) GTEST_SKIP() << "no libnccl here: " << l.reason;
  int version = 0;
  ASSERT_EQ(l.api->ncclGetVersion(&version), ncclSuccess);
  EXPECT_GE(version, 22800);
  EXPECT_STREQ(l.api->ncclGetErrorString(ncclSystemError),
               "unhandled system error (run with NCCL_DEBUG=INFO for details)");
}


// Hands back the fixture's lines, remembering the level it was started with.
struct FakeLog : NcclLogCapture {
  std::string* level;
  explicit FakeLog(std::string* l) : level(l) {}
  void Start(const std::string& l) override { *level = l; }
  std::vector<std::string> Finish() override { return kFixtureLog; }
};


class NcclAllReduceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseFakeNccl(&cuda_, &nccl_);
    // The driver lists the GPUs out of bus order: gpu0 is device 1.
    cuda_.devices = {{"0000:9A:00.0"}, {"0000:1B:00.0"}};
    cuda_.image = kFakeImage;
    cuda_.kernels["gpuforge_nccl_fill"] = [](FakeCuda& c, const FakeKernelLaunch& l) { return CheckKernel(c, l, true); };
    cuda_.kernels["gpuforge_nccl_verify"] = [](FakeCuda& c, const FakeKernelLaunch& l) {
      return CheckKernel(c, l, false);
    };
    // NCCL's streams are polled (cuStreamQuery), never synchronised; a hung one ends when a
    // communicator is aborted.
    cuda_.polled_streams = true;
    cuda_.hang_ends = AnyCommAborted;
  }
  void TearDown() override {
    // Whatever happened, everything the probe took is given back, each thing once.
    EXPECT_TRUE(cuda_.memory.empty());
    EXPECT_EQ(cuda_.retained, 0);
    EXPECT_EQ(cuda_.streams, 0);
    EXPECT_EQ(cuda_.modules, 0);
    EXPECT_EQ(FakeCuda::Current(), -1);
    for (const auto& c : nccl_.comms) EXPECT_TRUE(c->destroyed || c->aborted) << "rank " << c->rank;
    EXPECT_EQ(nccl_.bad_releases, 0);
    EXPECT_EQ(FakeNcclGroupDepth(), 0);
    UseFakeNccl(nullptr, nullptr);
  }

  // With the check kernels by default; an empty span is a build without them.
  std::unique_ptr<Probe> Make(std::span<const unsigned char> kernels = kFakeImage) {
    auto cuda = std::make_shared<CudaApi>(FakeCuda::Api());
    auto nccl = std::make_shared<NcclApi>(FakeNcclApi());
    return MakeNcclAllReduceProbe(
        [cuda] {
          return CudaLoad{cuda, "", ""};
        },
        [nccl] {
          return NcclLoad{nccl, "", ""};
        },
        [this] { return std::make_unique<FakeLog>(&level_); }, kernels);
  }

  static ProbeResult RunIt(Probe& p, std::map<std::string, std::string> given,
                           const std::atomic<bool>* cancel = nullptr, Exchange exchange = {}) {
    gpuforge::Result<std::map<std::string, std::string>> params = ResolveParams(p, given);
    EXPECT_TRUE(params.ok()) << (params.ok() ? "" : params.error().message);
    return RunProbe(p, params.ok() ? *params : given, cancel, std::move(exchange));
  }

  static const Measurement* Find(const ProbeResult& r, const std::string& entity,
                                 const std::string& metric) {
    for (const Measurement& m : r.measurements) {
      if (m.entity == entity && m.metric == metric) return &m;
    }
    return nullptr;
  }

  bool CommsAborted() {
    for (const auto& c : nccl_.comms) {
      if (!c->aborted) return false;
    }
    return !nccl_.comms.empty();
  }

  FakeCuda cuda_;
  FakeNccl nccl_;
  std::string level_;
};

// 8, 32, 128, 512, 2048 bytes.
const std::map<std::string, std::string> kSmall = {{"min_bytes", "8"},
                                                   {"max_bytes", "2KiB"},
                                                   {"step_factor", "4"},
                                                   {"warmup", "1"},
                                                   {"iters", "3"}};

TEST_F(NcclAllReduceTest, SweepsLikeAllReducePerfOnTwoGpus) {
  std::unique_ptr<Probe> p = Make();
  EXPECT_EQ(p->key(), "nccl.allreduce");
  const ProbeResult r = RunIt(*p, kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  // 5 sizes x 2 placements x 4 metrics, then 4 summary figures.
  ASSERT_EQ(r.measurements.size(), 5u * 2 * 4 + 4);
  const std::vector<std::string> entities = {"out-of-place 8", "in-place 8", "out-of-place 32"};
  for (std::size_t i = 0; i < entities.size(); ++i)
    EXPECT_EQ(r.measurements[4 * i].entity, entities[i]);
  for (const char* entity : {"out-of-place 2048", "in-place 2048", "out-of-place 8"}) {
    const Measurement* time = Find(r, entity, "time_us");
    const Measurement* algbw = Find(r, entity, "algbw");
    const Measurement* busbw = Find(r, entity, "busbw");
    const Measurement* wrong = Find(r, entity, "wrong");
    ASSERT_TRUE(time && algbw && busbw && wrong) << entity;
    EXPECT_EQ(time->unit, "us");
    EXPECT_EQ(algbw->unit, "GB/s");
    EXPECT_EQ(busbw->unit, "GB/s");
    EXPECT_EQ(wrong->unit, "count");
    EXPECT_GT(time->value, 0);
    EXPECT_EQ(time->samples, std::vector<double>{time->value});
    const double bytes = std::stod(time->info.at("size"));
    EXPECT_NEAR(algbw->value, bytes / 1e9 / (time->value / 1e6), algbw->value * 1e-9);
    EXPECT_DOUBLE_EQ(busbw->value, algbw->value * 2 * (2 - 1) / 2);  // n = 2 ranks
    EXPECT_EQ(wrong->value, 0);
    EXPECT_EQ(time->info.at("count"), std::to_string(static_cast<int>(bytes) / 4));
    EXPECT_EQ(time->info.at("type"), "float");
    EXPECT_EQ(time->info.at("redop"), "sum");
  }
  const Measurement* busbw = Find(r, "allreduce", "busbw");
  ASSERT_NE(busbw, nullptr);
  EXPECT_EQ(busbw->value, Find(r, "out-of-place 2048", "busbw")->value);
  EXPECT_EQ(busbw->info.at("size"), "2048");
  EXPECT_EQ(busbw->info.at("network"), "Socket");
  EXPECT_EQ(busbw->info.at("nccl_version"), "2.28.9+cuda13.0");
  EXPECT_EQ(busbw->info.at("ib_no_device"), "1");
  EXPECT_EQ(busbw->info.at("ib_no_device_line"),
            "vm:520:520 [0] NCCL INFO NET/IB : No device found.");
  EXPECT_EQ(busbw->info.at("ranks"), "2");
  EXPECT_EQ(busbw->info.at("nodes"), "1");
  double sum = 0;
  for (const Measurement& m : r.measurements) {
    if (m.metric == "busbw" && m.entity != "allreduce") sum += m.value;
  }
  EXPECT_DOUBLE_EQ(Find(r, "allreduce", "avg_busbw")->value, sum / 10);
  EXPECT_EQ(Find(r, "allreduce", "wrong_total")->value, 0);
  EXPECT_EQ(Find(r, "allreduce", "ranks")->value, 2);
  EXPECT_EQ(Find(r, "allreduce", "quick_op_ms"), nullptr);
  EXPECT_EQ(r.log, ParseNcclLog(kFixtureLog).kept);
  EXPECT_EQ(level_, "INFO");
  // Per size and placement, one group per op: 1 warm-up, 3 timed, 1 checked, each with one
  // all-reduce per GPU; plus the init group.
  EXPECT_EQ(nccl_.allreduce_calls, 5 * 2 * (1 + 3 + 1) * 2);
  EXPECT_EQ(nccl_.groups, 5 * 2 * (1 + 3 + 1) + 1);
  // Rank 0 is gpu0, the first in bus order (device 1), initialised with its context current.
  ASSERT_EQ(nccl_.comms.size(), 2u);
  EXPECT_EQ(nccl_.comms[0]->rank, 0);
  EXPECT_EQ(nccl_.comms[0]->device, 1);
  EXPECT_EQ(nccl_.comms[1]->device, 0);
  EXPECT_TRUE(nccl_.comms[0]->destroyed && nccl_.comms[1]->destroyed);
  // Filled and checked on the GPUs: per row and rank one fill and one verify, and only the two
  // counters come back.
  EXPECT_EQ(busbw->info.at("check"), "gpu");
  EXPECT_EQ(cuda_.calls["gpuforge_nccl_fill"], 5 * 2 * 2);
  EXPECT_EQ(cuda_.calls["gpuforge_nccl_verify"], 5 * 2 * 2);
  EXPECT_EQ(cuda_.calls["cuModuleLoadData"], 2);
  EXPECT_EQ(cuda_.calls["cuMemcpyHtoD"], 0);
  EXPECT_EQ(cuda_.dtoh_bytes, 5u * 2 * 2 * 16);
  // The result survives its own wire format.
  gpuforge::Result<ProbeResult> back = ParseJsonLine("test", ToJsonLine(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->measurements.size(), r.measurements.size());
}

TEST_F(NcclAllReduceTest, OneGpuHasNoBusBandwidthButMeasures) {
  cuda_.devices.resize(1);
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  EXPECT_GT(Find(r, "out-of-place 2048", "algbw")->value, 0);
  EXPECT_EQ(Find(r, "out-of-place 2048", "busbw")->value, 0);
  EXPECT_EQ(Find(r, "allreduce", "busbw")->value, 0);
  EXPECT_EQ(Find(r, "allreduce", "ranks")->value, 1);
}

TEST_F(NcclAllReduceTest, EveryReductionIsChecked) {
  for (const char* op : {"prod", "max", "min"}) {
    std::map<std::string, std::string> params = kSmall;
    params["op"] = op;
    std::unique_ptr<Probe> p = Make();
    const ProbeResult r = RunIt(*p, params);
    EXPECT_EQ(r.outcome, Outcome::kOk) << op << ": " << r.code << ": " << r.reason;
    EXPECT_EQ(Find(r, "in-place 512", "time_us")->info.at("redop"), op);
  }
}

TEST_F(NcclAllReduceTest, AWrongElementIsWrongDataWithTheMeasurementsKept) {
  nccl_.corrupt = true;
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "nccl.wrong_data");
  EXPECT_NE(r.reason.find("first here: gpu0 (0000:1b:00.0), rank 0, out-of-place of 8 bytes, "
                          "element 1: 5 where 4 was expected"),
            std::string::npos)
      << r.reason;
  // One element per row from 32 bytes up (8 bytes is 2 elements too: element 1 exists).
  EXPECT_EQ(Find(r, "out-of-place 8", "wrong")->value, 1);
  EXPECT_EQ(Find(r, "in-place 2048", "wrong")->value, 1);
  EXPECT_EQ(Find(r, "allreduce", "wrong_total")->value, 10);
  EXPECT_GT(Find(r, "out-of-place 2048", "algbw")->value, 0);
  // The counters, and the sweep's first wrong element once, for the reason.
  EXPECT_EQ(cuda_.dtoh_bytes, 5u * 2 * 2 * 16 + 4);
}

// Every row's #wrong and the first wrong element, from the kernels and from the host.
std::vector<std::string> WrongRows(const ProbeResult& r) {
  std::vector<std::string> out;
  for (const Measurement& m : r.measurements) {
    if (m.metric == "wrong" || m.metric == "wrong_total")
      out.push_back(m.entity + ": " + std::to_string(m.value));
  }
  out.push_back(r.code + ": " + r.reason);
  return out;
}

TEST_F(NcclAllReduceTest, TheHostCheckCountsWhatTheKernelsCount) {
  nccl_.corrupt = true;
  nccl_.corrupt_every = 3;
  for (const char* op : {"sum", "prod", "max", "min"}) {
    std::map<std::string, std::string> params = kSmall;
    params["op"] = op;
    const ProbeResult on_gpu = RunIt(*Make(), params);
    const ProbeResult on_host = RunIt(*Make({}), params);
    EXPECT_EQ(on_gpu.code, "nccl.wrong_data") << op;
    EXPECT_EQ(WrongRows(on_gpu), WrongRows(on_host)) << op;
    // 2048 bytes: 512 elements, 1, 4, .. 511 wrong.
    EXPECT_EQ(Find(on_gpu, "in-place 2048", "wrong")->value, 171) << op;
    EXPECT_EQ(Find(on_gpu, "allreduce", "busbw")->info.at("check"), "gpu");
    EXPECT_EQ(Find(on_host, "allreduce", "busbw")->info.at("check"), "host");
  }
}

TEST_F(NcclAllReduceTest, TheHostCheckStepsItsPhaseAcrossChunks) {
  // 5242883 elements: more than one 4 Mi-element chunk, and not a multiple of the period.
  cuda_.devices.resize(1);
  nccl_.corrupt = true;
  nccl_.corrupt_every = 1000003;
  const std::map<std::string, std::string> params = {
      {"min_bytes", "20971532"}, {"max_bytes", "20971532"}, {"warmup", "0"}, {"iters", "1"}};
  const ProbeResult on_gpu = RunIt(*Make(), params);
  const ProbeResult on_host = RunIt(*Make({}), params);
  EXPECT_EQ(Find(on_gpu, "out-of-place 20971532", "wrong")->value, 6);
  EXPECT_EQ(WrongRows(on_gpu), WrongRows(on_host));
}

TEST_F(NcclAllReduceTest, WithoutKernelsTheHostChecksEveryElement) {
  std::unique_ptr<Probe> p = Make({});
  const ProbeResult r = RunIt(*p, kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  EXPECT_EQ(Find(r, "allreduce", "busbw")->info.at("check"), "host");
  EXPECT_EQ(cuda_.calls["cuModuleLoadData"], 0);
  EXPECT_EQ(cuda_.calls["cuLaunchKernel"], 0);
  // Every element of both ranks' results, per row: 2 x (2 + 8 + 32 + 128 + 512) elements.
  EXPECT_EQ(cuda_.dtoh_bytes, 2u * 2 * 4 * (2 + 8 + 32 + 128 + 512));
}

TEST_F(NcclAllReduceTest, AModuleThatDoesNotLoadNamesTheGpu) {
  cuda_.fail_call = "cuModuleLoadData";
  const ProbeResult r = RunIt(*Make(), kSmall);
  EXPECT_EQ(r.code, "gpu.cuda_error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:1b:00.0): cuModuleLoadData failed: out of memory "
            "(CUDA_ERROR_OUT_OF_MEMORY)");
}

TEST_F(NcclAllReduceTest, WithoutCheckNothingIsReadBack) {
  nccl_.corrupt = true;
  std::map<std::string, std::string> params = kSmall;
  params["check"] = "0";
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, params);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(cuda_.calls["cuMemcpyDtoH"], 0);
  EXPECT_EQ(cuda_.calls["cuModuleLoadData"], 0);
  EXPECT_EQ(Find(r, "allreduce", "busbw")->info.at("check"), "off");
}

TEST_F(NcclAllReduceTest, AFailedInitNamesTheCallWithNcclsWords) {
  nccl_.fail_call = "ncclCommInitRank";  // called by the fake's ncclCommInitRankConfig
  nccl_.last_error = "socket connect to 198.18.0.3<44321> failed: Connection refused";
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "nccl.error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:1b:00.0): ncclCommInitRankConfig failed: unhandled system error (run with "
            "NCCL_DEBUG=INFO for details) (ncclSystemError); NCCL's last error: socket connect to "
            "198.18.0.3<44321> failed: Connection refused");
  EXPECT_TRUE(r.measurements.empty());
  EXPECT_EQ(r.log, ParseNcclLog(kFixtureLog).kept);  // the log is kept on failure too
}

TEST_F(NcclAllReduceTest, AFailedOperationAbortsTheCommunicators) {
  nccl_.fail_call = "ncclGroupEnd";
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.code, "nccl.error");
  EXPECT_NE(r.reason.find("ncclGroupEnd failed"), std::string::npos) << r.reason;
}

TEST_F(NcclAllReduceTest, AnAsynchronousErrorEndsAHungWait) {
  cuda_.syncs_before_hang = 3;
  cuda_.on_hang = [this] {
    std::lock_guard lock(nccl_.m);
    nccl_.async_error = ncclRemoteError;
  };
  nccl_.last_error = "NET/IB : Got completion from peer 198.18.0.3 with status=12";
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "nccl.error");
  EXPECT_NE(r.reason.find("ncclRemoteError"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("status=12"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("aborted"), std::string::npos) << r.reason;
  EXPECT_TRUE(CommsAborted());
}

TEST_F(NcclAllReduceTest, CancelEndsAHungWait) {
  std::atomic<bool> cancel{false};
  cuda_.syncs_before_hang = 5;
  cuda_.on_hang = [&cancel] { cancel = true; };
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall, &cancel);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "probe.cancelled");
  EXPECT_TRUE(CommsAborted());
}

// With NCCL_RUNTIME_CONNECT=1 ncclGroupEnd connects to the peers; on a non-blocking
// communicator it answers ncclInProgress and the sweep polls, aborting on cancel.
TEST_F(NcclAllReduceTest, CancelEndsAHangInsideGroupEnd) {
  std::atomic<bool> cancel{false};
  nccl_.group_ends_before_hang = 2;  // the init group, one all-reduce, then the hang
  nccl_.on_hang = [&cancel] { cancel = true; };
  const auto start = std::chrono::steady_clock::now();
  const ProbeResult r = RunIt(*Make(), kSmall, &cancel);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "probe.cancelled");
  EXPECT_NE(r.reason.find("aborted"), std::string::npos) << r.reason;
  EXPECT_TRUE(CommsAborted());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));  // not given up
}

TEST_F(NcclAllReduceTest, AnAsynchronousErrorEndsAHangInsideGroupEnd) {
  nccl_.group_ends_before_hang = 4;
  nccl_.on_hang = [this] {
    std::lock_guard lock(nccl_.m);
    nccl_.async_error = ncclRemoteError;
  };
  nccl_.last_error = "NET/IB : Got completion from peer 198.18.0.3 with status=12";
  const ProbeResult r = RunIt(*Make(), kSmall);
  EXPECT_EQ(r.code, "nccl.error");
  EXPECT_NE(r.reason.find("an operation in flight failed"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("ncclRemoteError"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("ncclGroupEnd"), std::string::npos) << r.reason;  // the cause wins
  EXPECT_TRUE(CommsAborted());
}

// The abort comes from the thread that drives NCCL, never from a second one while the first
// is inside ncclGroupEnd (NCCL 2.28 frees what that call still uses).
TEST_F(NcclAllReduceTest, EveryNcclCallAndTheAbortComeFromOneThread) {
  nccl_.group_ends_before_hang = 3;
  nccl_.on_hang = [this] {
    std::lock_guard lock(nccl_.m);
    nccl_.async_error = ncclRemoteError;
  };
  const ProbeResult r = RunIt(*Make(), kSmall);
  EXPECT_EQ(r.code, "nccl.error");
  EXPECT_TRUE(CommsAborted());
  EXPECT_EQ(nccl_.threads.size(), 1u);
}

TEST_F(NcclAllReduceTest, WaitsPollTheStreamsInsteadOfBlocking) {
  const ProbeResult r = RunIt(*Make(), kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(nccl_.threads.size(), 1u);
  // Per row: one wait after warm-up, one after timing, one after the check, each polling both
  // GPUs' streams once (the fake's streams are done at once).
  EXPECT_EQ(cuda_.calls["cuStreamQuery"], 5 * 2 * 3 * 2);
}

// nccl-tests' startColl: operation i of a size starts at size * (i % (max / size)).
TEST_F(NcclAllReduceTest, TimedOperationsRotateThroughTheBuffers) {
  cuda_.devices.resize(1);
  const ProbeResult r = RunIt(*Make(), {{"min_bytes", "512"},
                                        {"max_bytes", "2KiB"},
                                        {"step_factor", "4"},
                                        {"warmup", "1"},
                                        {"iters", "5"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  // 512 bytes, out-of-place: warm-up 0, timed 0 512 1024 1536 0, checked 0 (relative to the
  // first pointer, the buffer's start).
  ASSERT_GE(nccl_.buffers.size(), 7u);
  const std::uintptr_t send0 = nccl_.buffers[0].first, recv0 = nccl_.buffers[0].second;
  std::vector<std::uintptr_t> send, recv;
  for (std::size_t i = 0; i < 7; ++i) {
    send.push_back(nccl_.buffers[i].first - send0);
    recv.push_back(nccl_.buffers[i].second - recv0);
  }
  EXPECT_EQ(send, (std::vector<std::uintptr_t>{0, 0, 512, 1024, 1536, 0, 0}));
  EXPECT_EQ(recv, send);
  // 2048 bytes fills the buffer: always at 0 (the last one is in-place: the receive buffer).
  EXPECT_EQ(nccl_.buffers.back().first, recv0);
  EXPECT_EQ(nccl_.buffers[nccl_.buffers.size() - 8].first, send0);  // out-of-place 2048, timed
}

TEST_F(NcclAllReduceTest, ADriverThatCannotLoadTheKernelsFallsBackToTheHostCheck) {
  cuda_.fail_call = "cuModuleLoadData";
  cuda_.fail_rc = CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  const ProbeResult r = RunIt(*Make(), kSmall);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.code << ": " << r.reason;
  const Measurement* busbw = Find(r, "allreduce", "busbw");
  EXPECT_EQ(busbw->info.at("check"), "host");
  EXPECT_NE(busbw->info.at("check_why").find("the driver cannot load gpuforge's kernels on gpu0"),
            std::string::npos)
      << busbw->info.at("check_why");
  EXPECT_EQ(cuda_.calls["cuLaunchKernel"], 0);
  EXPECT_GT(cuda_.dtoh_bytes, 0u);  // the host compared the results
}

TEST_F(NcclAllReduceTest, ASocketFallbackStopsRightAfterInitWhenIbIsNeeded) {
  std::map<std::string, std::string> params = kSmall;
  params["need_ib"] = "1";
  const ProbeResult r = RunIt(*Make(), params);  // the fixture log says "Using network Socket"
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "nccl.no_ib");
  EXPECT_EQ(r.reason,
            "NCCL chose network Socket during init: \"vm:520:520 [0] NCCL INFO NET/IB : No device "
            "found.\"; stopped before the sweep (need_ib=1)");
  EXPECT_EQ(nccl_.allreduce_calls, 0);
  EXPECT_EQ(r.log, ParseNcclLog(kFixtureLog).kept);
  // Without need_ib the same log only informs.
  EXPECT_EQ(RunIt(*Make(), kSmall).outcome, Outcome::kOk);
}

TEST_F(NcclAllReduceTest, NcclDebugVersionIsRefused) {
  std::map<std::string, std::string> params = kSmall;
  params["nccl_debug"] = "version";
  const ProbeResult r = RunIt(*Make(), params);
  EXPECT_EQ(r.code, "probe.bad_param");
  EXPECT_NE(r.reason.find("stdout, the agent's result channel"), std::string::npos) << r.reason;
  EXPECT_TRUE(nccl_.comms.empty());
}

TEST_F(NcclAllReduceTest, CancelledBeforeStartTouchesNoCommunicator) {
  std::atomic<bool> cancel{true};
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall, &cancel);
  EXPECT_EQ(r.code, "probe.cancelled");
  EXPECT_TRUE(nccl_.comms.empty());
}

TEST_F(NcclAllReduceTest, ACudaFailureNamesTheGpuAndCall) {
  cuda_.fail_call = "cuMemAlloc";
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, kSmall);
  EXPECT_EQ(r.code, "gpu.cuda_error");
  EXPECT_EQ(r.reason,
            "gpu0 (0000:1b:00.0): cuMemAlloc failed: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
}

TEST_F(NcclAllReduceTest, BadParametersAreRefusedBeforeTouchingTheGpu) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"min_bytes", "abc"}, {"min_bytes", "2"},     {"max_bytes", "4"},   {"max_bytes", "65GiB"},
      {"step_factor", "1"}, {"op", "avg"},          {"datatype", "half"}, {"gpus", "0"},
      {"gpus", "some"},     {"preset", "fast"},     {"nodes", "0"},       {"node_index", "1"},
      {"iters", "0"},       {"nccl_debug", "LOUD"}, {"check", "2"},
  };
  for (const auto& [name, value] : bad) {
    std::map<std::string, std::string> params = kSmall;
    params[name] = value;
    std::unique_ptr<Probe> p = Make();
    const ProbeResult r = RunIt(*p, params);
    EXPECT_EQ(r.code, "probe.bad_param") << name << "=" << value;
    EXPECT_NE(r.reason.find(name), std::string::npos) << r.reason;
  }
  EXPECT_TRUE(cuda_.calls.empty());
}

TEST_F(NcclAllReduceTest, SizesAreByteCountsRoundedDownToElements) {
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, {{"min_bytes", "6"},
                                   {"max_bytes", "1KiB"},
                                   {"step_factor", "3"},
                                   {"warmup", "0"},
                                   {"iters", "1"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  // 6, 18, 54, 162, 486 -> 4, 16, 52, 160, 484.
  std::vector<std::string> sizes;
  for (const Measurement& m : r.measurements) {
    if (m.metric == "time_us" && m.entity.starts_with("out-of-place"))
      sizes.push_back(m.info.at("size"));
  }
  EXPECT_EQ(sizes, (std::vector<std::string>{"4", "16", "52", "160", "484"}));
}

TEST_F(NcclAllReduceTest, GpusTakesTheFirstInBusOrder) {
  std::map<std::string, std::string> params = kSmall;
  params["gpus"] = "1";
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, params);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  ASSERT_EQ(nccl_.comms.size(), 1u);
  EXPECT_EQ(nccl_.comms[0]->device, 1);
  params["gpus"] = "3";
  const ProbeResult too_many = RunIt(*p, params);
  EXPECT_EQ(too_many.code, "probe.bad_param");
  EXPECT_NE(too_many.reason.find("sees 2 GPU"), std::string::npos) << too_many.reason;
}

TEST_F(NcclAllReduceTest, TheQuickPresetIsOneSizeOfAHundredOps) {
  cuda_.devices.resize(1);
  std::unique_ptr<Probe> p = Make();
  const ProbeResult r = RunIt(*p, {{"preset", "quick"}, {"iters", "7"}, {"nccl_debug", "warn"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  ASSERT_EQ(r.measurements.size(), 2u * 4 + 5);
  EXPECT_EQ(r.measurements[0].entity, "out-of-place 4194304");
  EXPECT_EQ(r.measurements[4].entity, "in-place 4194304");
  EXPECT_EQ(r.measurements[0].info.at("count"), "1048576");
  const Measurement* quick = Find(r, "allreduce", "quick_op_ms");
  ASSERT_NE(quick, nullptr);
  EXPECT_EQ(quick->unit, "ms");
  EXPECT_DOUBLE_EQ(quick->value, std::max(r.measurements[0].value, r.measurements[4].value) / 1e3);
  EXPECT_EQ(nccl_.groups, 2 * (5 + 100 + 1) + 1);  // the preset's iterations win
  EXPECT_EQ(level_, "WARN");
}

TEST_F(NcclAllReduceTest, LoadersDecideSkip) {
  auto nccl = std::make_shared<NcclApi>(FakeNcclApi());
  auto cuda = std::make_shared<CudaApi>(FakeCuda::Api());
  auto log = [this] { return std::make_unique<FakeLog>(&level_); };
  std::unique_ptr<Probe> no_cuda = MakeNcclAllReduceProbe(
      [] {
        return CudaLoad{nullptr, "gpu.no_cuda_driver", "libcuda.so.1: cannot open"};
      },
      [nccl] {
        return NcclLoad{nccl, "", ""};
      },
      log, kFakeImage);
  EXPECT_EQ(RunIt(*no_cuda, kSmall).code, "gpu.no_cuda_driver");
  std::unique_ptr<Probe> no_nccl = MakeNcclAllReduceProbe(
      [cuda] {
        return CudaLoad{cuda, "", ""};
      },
      [] {
        return NcclLoad{nullptr, "nccl.no_library", "libnccl.so.2: cannot open shared object file"};
      },
      log, kFakeImage);
  const ProbeResult r = RunIt(*no_nccl, kSmall);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "nccl.no_library");
  cuda_.init_rc = CUDA_ERROR_NO_DEVICE;
  const ProbeResult no_gpu = RunIt(*Make(), kSmall);
  EXPECT_EQ(no_gpu.outcome, Outcome::kSkip);
  EXPECT_EQ(no_gpu.code, "gpu.none");
}

TEST_F(NcclAllReduceTest, SeveralNodesNeedTheExchange) {
  std::map<std::string, std::string> params = kSmall;
  params["nodes"] = "2";
  const ProbeResult r = RunIt(*Make(), params);
  EXPECT_EQ(r.code, "exchange.missing");
  // Across nodes the warm-up op is what lines the nodes up before timing.
  params["warmup"] = "0";
  const ProbeResult cold = RunIt(*Make(), params);
  EXPECT_EQ(cold.code, "probe.bad_param");
  EXPECT_EQ(cold.reason,
            "parameter warmup must be at least 1 when nodes > 1: the warm-up operation lines the nodes up before "
            "timing starts");
}

TEST_F(NcclAllReduceTest, TwoAgentsFormOneCommunicatorAndAverageTheirTimes) {
  ThreadExchange exchange(2);
  std::unique_ptr<Probe> p0 = Make(), p1 = Make();
  std::map<std::string, std::string> params0 = kSmall, params1 = kSmall;
  params0["nodes"] = params1["nodes"] = "2";
  params1["node_index"] = "1";
  params1["gpus"] = "1";
  ProbeResult r1;
  std::thread agent1([&] {
    r1 = RunIt(*p1, params1, nullptr, exchange.For(1));
    EXPECT_EQ(FakeCuda::Current(), -1);
  });
  const ProbeResult r0 = RunIt(*p0, params0, nullptr, exchange.For(0));
  agent1.join();
  for (const ProbeResult* r : std::array<const ProbeResult*, 2>{&r0, &r1}) {
    ASSERT_EQ(r->outcome, Outcome::kOk) << r->code << ": " << r->reason;
    EXPECT_EQ(Find(*r, "allreduce", "ranks")->value, 3);
    EXPECT_EQ(Find(*r, "allreduce", "busbw")->info.at("nodes"), "2");
    const Measurement* time = Find(*r, "out-of-place 2048", "time_us");
    ASSERT_EQ(time->samples.size(), 2u);
    EXPECT_DOUBLE_EQ(time->value, (time->samples[0] + time->samples[1]) / 2);
    EXPECT_NEAR(Find(*r, "out-of-place 2048", "busbw")->value,
                Find(*r, "out-of-place 2048", "algbw")->value * 4 / 3, 1e-9);
    EXPECT_EQ(Find(*r, "allreduce", "wrong_total")->value, 0);
  }
  // Both report the same figures.
  EXPECT_EQ(Find(r0, "in-place 512", "time_us")->value, Find(r1, "in-place 512", "time_us")->value);
  // Ranks 0 and 1 on node 0, rank 2 on node 1, all in one communicator of 3.
  ASSERT_EQ(nccl_.comms.size(), 3u);
  std::set<int> ranks;
  for (const auto& c : nccl_.comms) {
    EXPECT_EQ(c->nranks, 3);
    EXPECT_EQ(c->clique, nccl_.comms[0]->clique);
    ranks.insert(c->rank);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  const std::vector<std::string> offered = exchange.offered();
  ASSERT_EQ(offered.size(), 4u);
  for (const std::string& o : offered) {
    EXPECT_TRUE(o.starts_with("gpus=") || o.starts_with("t=")) << o;
    if (o.starts_with("gpus=2,id=")) {
      EXPECT_EQ(o.size(), std::string("gpus=2,id=").size() + 256);
    }
  }
}

TEST_F(NcclAllReduceTest, ExchangePartsAreCheckedStrictly) {
  const std::string id(256, 'a');
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"gpus=2"}, "1 parts for 2 nodes"},
      {{"gpus=2", "gpus=1"}, "node 0's part has no NCCL id"},
      {{"gpus=2,id=" + id.substr(2), "gpus=1"}, "256 lower-case hex digits"},
      {{"gpus=2,id=" + std::string(256, 'G'), "gpus=1"}, "256 lower-case hex digits"},
      {{"gpus=x,id=" + id, "gpus=1"}, "gpus must be a count"},
      {{"gpus=2,id=" + id, "gpus=1,id=" + id}, "exchange part 1"},
      {{"gpus=2,id=" + id, "gpus=1,extra=1"}, "unexpected field 'extra'"},
      {{"gpus=2,id=" + id, "gpus=2"}, "part 1 is not what this node offered"},
  };
  for (const auto& [parts, why] : cases) {
    std::map<std::string, std::string> params = kSmall;
    params["nodes"] = "2";
    params["node_index"] = "1";
    params["gpus"] = "1";
    Exchange fake = [&parts](const std::string&) -> gpuforge::Result<std::vector<std::string>> {
      return parts;
    };
    const ProbeResult r = RunIt(*Make(), params, nullptr, fake);
    EXPECT_EQ(r.code, "exchange.failed") << why;
    EXPECT_NE(r.reason.find(why), std::string::npos) << r.reason;
  }
  Exchange down = [](const std::string&) -> gpuforge::Result<std::vector<std::string>> {
    return Error{"the controller went away"};
  };
  std::map<std::string, std::string> params = kSmall;
  params["nodes"] = "2";
  const ProbeResult r = RunIt(*Make(), params, nullptr, down);
  EXPECT_EQ(r.code, "exchange.failed");
  EXPECT_NE(r.reason.find("the controller went away"), std::string::npos) << r.reason;
}

TEST(NcclLogFileTest, WithoutAFileNcclIsNotAskedToLog) {
  // mkstemp failed and the user chose no file: NCCL_DEBUG would send NCCL's log to stdout.
  EXPECT_TRUE(NcclLogSettings("INFO", {}, "").empty());
  using Settings = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(NcclLogSettings("INFO", {}, "/tmp/gpuforge-nccl-log-abc123"),
            (Settings{{"NCCL_DEBUG_FILE", "/tmp/gpuforge-nccl-log-abc123"},
                      {"NCCL_DEBUG", "INFO"},
                      {"NCCL_DEBUG_SUBSYS", "INIT,NET,ENV"}}));
  // The user's file and level win; what the user left unset is still set.
  const NcclLogEnv user{"WARN", nullptr, "/var/log/nccl.%h.%p"};
  EXPECT_EQ(NcclLogSettings("INFO", user, "/tmp/gpuforge-nccl-log-abc123"),
            (Settings{{"NCCL_DEBUG_SUBSYS", "INIT,NET,ENV"}}));
  const NcclLogEnv level_only{"TRACE", nullptr, nullptr};
  EXPECT_TRUE(NcclLogSettings("INFO", level_only, "").empty());
}

TEST(NcclLogFileTest, CapturesWhatIsAppendedDuringARun) {
  const char* preset = std::getenv("NCCL_DEBUG_FILE");
  std::unique_ptr<NcclLogCapture> log = MakeNcclLogFile();
  log->Start("WARN");
  const char* path = std::getenv("NCCL_DEBUG_FILE");
  ASSERT_NE(path, nullptr);
  if (preset != nullptr) GTEST_SKIP() << "NCCL_DEBUG_FILE is set in this environment";
  EXPECT_EQ(std::string(path).find('%'), std::string::npos);
  EXPECT_NE(std::getenv("NCCL_DEBUG"), nullptr);
  {
    std::ofstream out(path, std::ios::app);
    out << "host:1:1 [0] NCCL INFO Using network IB\nsecond line\n";
  }
  EXPECT_EQ(log->Finish(),
            (std::vector<std::string>{"host:1:1 [0] NCCL INFO Using network IB", "second line"}));
  // NCCL holds the file open: the name is gone now, and the next run reads only its own lines.
  std::ifstream gone(path);
  EXPECT_FALSE(gone.good());
  std::unique_ptr<NcclLogCapture> again = MakeNcclLogFile();
  again->Start("WARN");
  EXPECT_TRUE(again->Finish().empty());
}

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

}  // namespace
}  // namespace gpuforge::probe::internal
