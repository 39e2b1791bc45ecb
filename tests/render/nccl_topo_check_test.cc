// bench/gpu/nccl_topo_check.sh without a GPU: its comparison on recorded NCCL runs
// (tests/data/nccl-topo-check: the same tree fed back, and a flat file that erases the PCIe
// switches) must pass the first and fail the second on every count, and the real run must
// SKIP (77) on a machine without a GPU, never pass.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpuforge {
namespace {

const std::string kScript = std::string(GPUFORGE_SOURCE_DIR) + "/bench/gpu/nccl_topo_check.sh";
const std::string kRuns = std::string(GPUFORGE_TEST_DATA_DIR) + "/nccl-topo-check";

struct ScriptRun {
  int rc = -1;
  std::string output;
};

// `env` goes before the script ("NCCL_CHECK_BW_TOLERANCE=0.001").
ScriptRun RunCheck(const std::string& args, const std::string& env = "") {
  std::string cmd = fmt::format("{} bash '{}' {} 2>&1", env, kScript, args);
  ScriptRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(NcclTopoCheck, DryRunPassesTheSameTree) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  ScriptRun r = RunCheck("--dry-run");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("GPU Direct RDMA Enabled lines: without 2, with 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("channels: without 24, with 24"), std::string::npos);
  EXPECT_NE(r.output.find("without 362.118, with 360.501"), std::string::npos) << "within the 5% tolerance";
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    EXPECT_NE(r.output.find("topology dumps: 4 GPUs/NICs compared"), std::string::npos) << r.output;
  }
  EXPECT_NE(r.output.find("PASS"), std::string::npos);
}

TEST(NcclTopoCheck, FlatFileFailsOnEveryCount) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  ScriptRun r = RunCheck(fmt::format("--compare '{0}/without' '{0}/with-flat'", kRuns));
  EXPECT_EQ(r.rc, 1) << r.output;
  for (const char* want :
       {"worse: GPUDirect RDMA enabled for fewer GPU/NIC pairs with the file (0 < 2)",
        "worse: GPUDirect RDMA disabled for more GPU/NIC pairs with the file (2 > 0)",
        "worse: fewer channels with the file (16 < 24)",
        "worse: all-reduce bus bandwidth fell from 362.118 to 41.27 GB/s with the file",
        "FAIL: the topology file makes NCCL worse on this machine"}) {
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;
  }
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    EXPECT_NE(r.output.find("worse: 0000:18:00.0 moved in NCCL's topology: without the file "
                            "'cpu=0 0000:16:00.0', with it 'cpu=0'"),
              std::string::npos)
        << r.output;
  }
}

TEST(NcclTopoCheck, BandwidthAloneCanFail) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  ScriptRun r = RunCheck(fmt::format("--compare '{0}/without' '{0}/with-same'", kRuns));
  EXPECT_EQ(r.rc, 0) << r.output;
  r = RunCheck(fmt::format("--compare '{0}/with-same' '{0}/without'", kRuns));
  EXPECT_EQ(r.rc, 0) << "362 is above 360: no worse";
  r = RunCheck(fmt::format("--compare '{0}/without' '{0}/with-same'", kRuns), "NCCL_CHECK_BW_TOLERANCE=0.001");
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("all-reduce bus bandwidth fell from 362.118 to 360.501"), std::string::npos) << r.output;
}

// The first real run (#36, one H200): with one GPU busbw is 0 on both sides, so the check also
// holds the largest size's out-of-place algbw; gpuforge's rendered file kept NCCL as it was.
TEST(NcclTopoCheck, OneGpuIsJudgedOnAlgbwAndTheH200RunPasses) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  ScriptRun r = RunCheck(fmt::format("--compare '{0}/h200-1gpu-without' '{0}/h200-1gpu-with'", kRuns));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("all-reduce bus bandwidth (GB/s): without 0, with 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("out-of-place algbw at 268435456 bytes (GB/s): without 2087.4, with 2087.3"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("channels: without 64, with 64"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("topology dumps: 1 GPUs/NICs compared"), std::string::npos) << r.output;
  // A tolerance below the 0.005% between the runs: the algbw alone fails it (busbw cannot).
  r = RunCheck(fmt::format("--compare '{0}/h200-1gpu-without' '{0}/h200-1gpu-with'", kRuns),
               "NCCL_CHECK_BW_TOLERANCE=0.00001");
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("out-of-place algbw at 268435456 bytes fell from 2087.4 to 2087.3 GB/s with the file"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("bus bandwidth fell"), std::string::npos) << r.output;
}

TEST(NcclTopoCheck, WithoutAGpuTheRealRunSkips) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  if (std::system("command -v nvidia-smi >/dev/null 2>&1") == 0) GTEST_SKIP() << "this machine has nvidia-smi";
  ScriptRun r = RunCheck("");
  EXPECT_EQ(r.rc, 77) << r.output;
  EXPECT_NE(r.output.find("SKIP: no nvidia-smi on this machine"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpuforge
