// `gpuforge agent sample` as a process, loading the stand-in libnvidia-ml.so.1 (tests/standin)
// through the binary's real dlopen path: its stream parsed and folded as the controller does,
// a GPU lost mid-run, and SIGTERM ending the run with an "ended" line for every GPU. No GPU is
// used; the stand-in answers from the fake NVML.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/probe/gpu_stream.h"

// gpuforge_test_paths.cc: where the stand-in libnvidia-ml.so.1 was built (declared here rather
// than in the force-included header, which every test object depends on).
namespace gpuforge::testing {
const char* StandinNvmlDir();
}  // namespace gpuforge::testing

namespace gpuforge::probe {
namespace {

struct Ran {
  std::string shell_out;  // what the shell around the agent printed (its exit status)
  std::vector<std::string> lines;
  std::vector<GpuSeries> series;
};

// Runs `script` (in which $AGENT is the agent command with the stand-in loaded, writing its
// stdout to $OUT) and folds what the agent printed.
Ran RunAgent(const std::string& env, double seconds, const std::string& script) {
  char dir_template[] = "/tmp/gpuforge-sample-e2e.XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  EXPECT_NE(dir, nullptr);
  const std::string out = std::string(dir) + "/stream";
  const std::string cmd = "export " + env + " LD_LIBRARY_PATH=" + gpuforge::testing::StandinNvmlDir() +
                          "; OUT=" + out + "; AGENT='" + GPUFORGE_BINARY + " agent sample'; { " + script + "; } 2>&1";
  Ran ran;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p) != nullptr) ran.shell_out += buf;
    ::pclose(p);
  }
  std::ifstream in(out);
  StreamFold fold("e2e", seconds);
  for (std::string line; std::getline(in, line);) {
    ran.lines.push_back(line);
    Result<StreamLine> l = ParseStreamLine("agent stdout", line);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
    if (!l.ok()) continue;
    const Status st = fold.Take(std::move(*l));
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  }
  ran.series = fold.Series();
  std::filesystem::remove_all(dir);
  return ran;
}

TEST(GpuSampleE2e, TheAgentStreamsEveryGpuThroughTheLoadedLibraryAndALostGpuEndsWithTheCall) {
  const Ran ran = RunAgent("GPUFORGE_STANDIN_NVML_GPUS=2 GPUFORGE_STANDIN_NVML_LOSE_GPU0_AFTER=4", 12,
                           "$AGENT --seconds 12 > $OUT; echo rc=$?");
  EXPECT_NE(ran.shell_out.find("rc=0"), std::string::npos) << ran.shell_out;
  ASSERT_EQ(ran.series.size(), 2u) << ran.shell_out;
  const GpuSeries& lost = ran.series[0];
  EXPECT_EQ(lost.model, "NVIDIA H200");
  EXPECT_EQ(lost.ended_code, "burnin.nvml_lost");
  EXPECT_EQ(lost.ended_reason, "nvmlDeviceGetPowerUsage failed: GPU is lost (NVML error 15)");
  ASSERT_EQ(lost.windows.size(), 1u);
  // StartSeries read the power once, so the 4th read is the 3rd sample, and the 4th is lost.
  EXPECT_EQ(lost.windows[0].samples, 3);
  const GpuSeries& ok = ran.series[1];
  EXPECT_TRUE(ok.ended_code.empty());
  ASSERT_EQ(ok.windows.size(), 2u);
  EXPECT_EQ(ok.windows[0].samples + ok.windows[1].samples, 12);
  EXPECT_DOUBLE_EQ(ok.windows[0].power_w->median, 690);
  EXPECT_DOUBLE_EQ(ok.windows[0].hbm_temp_c->median, 47);
  ASSERT_EQ(ok.windows[0].reasons.size(), 1u);
  EXPECT_EQ(ok.windows[0].reasons[0].first, kClocksEventSwPowerCap);
  EXPECT_EQ(ok.windows[0].phase, "idle");  // no load runs yet
  // Xids come from /dev/kmsg where it can be read, and the start line says where it cannot.
  EXPECT_TRUE(ok.xid_unread.empty() || ok.xid_unread.starts_with("cannot open /dev/kmsg")) << ok.xid_unread;
}

TEST(GpuSampleE2e, SigtermEndsTheRunWithAnEndedLinePerGpu) {
  const Ran ran = RunAgent("GPUFORGE_STANDIN_NVML_GPUS=3", 600,
                           "$AGENT --seconds 600 > $OUT & pid=$!; "
                           "for i in $(seq 200); do grep -q '\"window\"' $OUT 2>/dev/null && break; sleep 0.1; done; "
                           "kill -TERM $pid; wait $pid; echo rc=$?");
  EXPECT_NE(ran.shell_out.find("rc=0"), std::string::npos) << ran.shell_out;
  ASSERT_EQ(ran.series.size(), 3u) << ran.shell_out;
  for (const GpuSeries& g : ran.series) {
    EXPECT_EQ(g.ended_code, "burnin.stopped") << g.gpu;
    EXPECT_TRUE(g.ended_reason.starts_with("the agent was stopped ")) << g.ended_reason;
    EXPECT_GE(g.windows.size(), 1u);
    EXPECT_LE(g.windows.size(), 3u);
  }
}

TEST(GpuSampleE2e, NoNvmlIsAnErrorOnStderrAndNoLine) {
  const Ran ran = RunAgent("GPUFORGE_STANDIN_NVML_GPUS=0", 5, "$AGENT --seconds 5 > $OUT; echo rc=$?");
  EXPECT_NE(ran.shell_out.find("agent sample: gpu.none: NVML sees no GPU"), std::string::npos) << ran.shell_out;
  EXPECT_NE(ran.shell_out.find("rc=1"), std::string::npos) << ran.shell_out;
  EXPECT_TRUE(ran.lines.empty());
}

}  // namespace
}  // namespace gpuforge::probe
