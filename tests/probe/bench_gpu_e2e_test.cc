// bench/gpu/, the harness that runs the GPU probes on a lent GPU machine, on this machine
// without a GPU: compare.py's arithmetic (compare_test.py), and run.sh --dry-run end to end
// with this build's gpuforge, so the plumbing is proven before device time is spent on it.
// The first device run (#36) found run.sh calling nccl_topo_check.sh with an argument it
// refuses, so the topology check and validate never ran: a dry run would have shown it.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

struct ShellResult {
  int rc = -1;
  std::string output;
};

ShellResult Shell(const std::string& cmd) {
  ShellResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HavePython() { return std::system("command -v python3 >/dev/null 2>&1") == 0; }

TEST(BenchGpuE2e, CompareArithmeticAndTargets) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  ShellResult r = Shell(fmt::format("python3 '{}/bench/gpu/compare_test.py'", GPUFORGE_SOURCE_DIR));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("all compare.py checks passed"), std::string::npos) << r.output;
}

TEST(BenchGpuE2e, DryRunRunsEveryStepAndMeasuresNothing) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  if (std::system("command -v nvidia-smi >/dev/null 2>&1") == 0) GTEST_SKIP() << "this machine has nvidia-smi";
  char tmpl[] = "/tmp/gpuforge-bench-gpu-test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path out = tmpl;
  ShellResult r = Shell(fmt::format("bash '{}/bench/gpu/run.sh' --dry-run --gpuforge '{}' --out '{}' --runs 1",
                            GPUFORGE_SOURCE_DIR, GPUFORGE_BINARY, out.string()));
  // 77: nothing could be compared. Never 0: a dry run measures nothing.
  EXPECT_EQ(r.rc, 77) << r.output;
  const std::string table = Slurp(out / "table.md");
  ASSERT_FALSE(table.empty()) << r.output;
  // Every targeted quantity is there, unjudged: SKIP with the probe's code, never a number.
  for (const char* row : {"| HBM copy 1 GiB, read+write (gpu.copy) [GB/s] | SKIP gpu.no_cuda_driver |",
                          "| bf16 GEMM 8192^3 (gpu.gemm) [TFLOP/s] | SKIP gpu.no_cuda_driver |",
                          "| bf16 GEMM 16384^3 (gpu.gemm) [TFLOP/s] | SKIP gpu.no_cuda_driver |",
                          "| fp32 FMA (gpu.compute) against its ceiling",
                          "| NCCL all-reduce 2 GiB out-of-place algbw, 1 rank [GB/s] | SKIP gpu.no_cuda_driver |"}) {
    EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
  }
  EXPECT_EQ(table.find("| yes |"), std::string::npos) << "a dry run met a target:\n" << table;
  // node_checks.sh ran to its end: the steps a machine without a GPU can do passed, the rest
  // say SKIP with the reason, none failed.
  for (const char* row : {"| node check inventory | PASS |", "| node check facts.gather | PASS |",
                          "| node check render.topo | SKIP |", "| node check topo.rendered | SKIP |",
                          "| node check validate | SKIP |", "| node check sanitizer.memcheck | SKIP |",
                          "| node check fault.gemm_dim | PASS |", "| node check fault.no_gpu.validate | SKIP |"}) {
    EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
  }
  EXPECT_EQ(table.find("| FAIL |"), std::string::npos) << table;
  EXPECT_EQ(table.find("| ERROR |"), std::string::npos) << table;
  // What comes back from the device: at most 8 files, node_checks.sh's in one archive.
  int files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(out)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_LE(files, 8);
  EXPECT_TRUE(fs::exists(out / "node.tar.gz")) << r.output;
  ShellResult tar = Shell(fmt::format("tar -tzf '{}'", (out / "node.tar.gz").string()));
  EXPECT_NE(tar.output.find("node/checks.jsonl"), std::string::npos) << tar.output;
  EXPECT_NE(tar.output.find("node/inventory.yaml"), std::string::npos) << tar.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace gpuforge
