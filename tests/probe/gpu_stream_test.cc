// Burn-in's stream (probe/gpu_stream.h): the lines an agent sends while the load runs, parsed
// as hostile input and folded per GPU in order.

#include "gpuforge/probe/gpu_stream.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace gpuforge::probe {
namespace {

GpuWindow FullWindow(double start) {
  GpuWindow w;
  w.start_s = start;
  w.samples = 10;
  w.phase = "gemm";
  w.power_w = Spread{640.5, 690.25, 701};
  w.power_limit_w = Spread{700, 700, 700};
  w.sm_clock_mhz = Spread{1755, 1980, 1980};
  w.mem_clock_mhz = Spread{3201, 3201, 3201};
  w.gpu_temp_c = Spread{61, 64, 66};
  w.hbm_temp_c = Spread{70, 71, 73};
  w.tflops = 731.4;
  w.wrong_elements = 0;
  w.pcie_gen = 5;
  w.pcie_width = 16;
  w.reasons = {{kClocksEventSwPowerCap, BitStreaks{10, 10, 10, 10}}, {kClocksEventHwSlowdown, BitStreaks{3, 2, 0, 1}}};
  w.counters.ecc_uncorrectable = 0;
  w.counters.ecc_correctable = 12;
  w.counters.remap_failed = 0;
  w.counters.remap_pending = 0;
  w.counters.pcie_replay = 3;
  w.counters.nvlink_errors = 0;
  return w;
}

GpuWindow EmptyWindow() {
  GpuWindow w;
  w.phase = "idle";
  return w;
}

StreamStart Start(std::string gpu, double planned = 600) {
  StreamStart s;
  s.gpu = std::move(gpu);
  s.model = "NVIDIA H200";
  s.pcie_gen_max = 5;
  s.pcie_width_max = 16;
  s.planned_s = planned;
  s.start_counters.ecc_uncorrectable = 0;
  s.xid_unread = "cannot open /dev/kmsg: Operation not permitted";
  return s;
}

StreamLine RoundTrip(const StreamLine& l) {
  const std::string text = ToStreamLine(l);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  gpuforge::Result<StreamLine> back = ParseStreamLine("node a, line 1", text);
  EXPECT_TRUE(back.ok()) << (back.ok() ? "" : back.error().message) << "\n" << text;
  return back.ok() ? *back : StreamLine{};
}

TEST(GpuStream, EveryKindOfLineComesBackEqual) {
  const std::vector<StreamLine> lines = {
      Start("gpu0"),
      StreamWindow{"gpu0", FullWindow(10)},
      StreamWindow{"gpu3", EmptyWindow()},  // every read failed
      StreamEvent{"gpu7", GpuEvent{2412.5, 79, "NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus."}},
      StreamEnded{"gpu12", "burnin.nvml_lost", "nvmlDeviceGetPowerUsage failed: GPU is lost (NVML error 15)"},
  };
  for (const StreamLine& l : lines) EXPECT_EQ(RoundTrip(l), l) << ToStreamLine(l);
}

TEST(GpuStream, AbsentFieldsStayAbsent) {
  StreamStart s = Start("gpu1");
  s.pcie_gen_max.reset();
  s.start_counters = {};
  s.xid_unread.clear();
  const std::string text = ToStreamLine(s);
  EXPECT_EQ(text.find("pcie_gen_max"), std::string::npos) << text;
  EXPECT_EQ(text.find("xid_unread"), std::string::npos) << text;
  EXPECT_EQ(RoundTrip(s), StreamLine{s});
}

TEST(GpuStream, TheWindowLineIsWhatDocsShow) {
  GpuWindow w;
  w.start_s = 20;
  w.samples = 10;
  w.phase = "gemm";
  w.power_w = Spread{690, 695, 699};
  w.reasons = {{kClocksEventHwSlowdown, BitStreaks{2, 2, 0, 0}}};
  w.counters.ecc_uncorrectable = 0;
  EXPECT_EQ(ToStreamLine(StreamWindow{"gpu0", w}),
            R"({"schema":"gpuforge.gpu-stream/v1","type":"window","gpu":"gpu0","window":{"start_s":20.0,)"
            R"("samples":10,"phase":"gemm","power_w":[690.0,695.0,699.0],"reasons":{"0x8":[2,2,0,0]},)"
            R"("counters":{"ecc_uncorrectable":0.0}}})");
}

TEST(GpuStream, AFieldThisVersionDoesNotKnowIsIgnored) {
  const auto l = ParseStreamLine(
      "n", R"({"schema":"gpuforge.gpu-stream/v1","type":"event","gpu":"gpu2","at_s":5,"xid":48,"detail":"x","new":1})");
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(std::get<StreamEvent>(*l).event.xid, 48);
}

// What a broken or hostile agent can send, and the words the error has for it.
TEST(GpuStream, BadLinesAreRefusedNamingTheSourceAndTheField) {
  const std::string w = R"({"schema":"gpuforge.gpu-stream/v1","type":"window","gpu":"gpu0","window":)";
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {R"({"schema":"gpuforge.probe/v1","type":"start"})", "schema is not gpuforge.gpu-stream/v1"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"sample","gpu":"gpu0"})", "'type' is not start, window"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"start","gpu":"gpu01"})", "'gpu' is not gpu0 to gpu999"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"start","gpu":"gpu1000"})", "'gpu' is not gpu0 to gpu999"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"start","gpu":"../x"})", "'gpu' has a character outside"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"start","gpu":"gpu0","model":"H200","planned_s":0,"start_counters":{}})",
       "'planned_s' is 0, outside 1 to 2592000"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"start","gpu":"gpu0","model":"H200","planned_s":60,"start_counters":{"ecc_correctable":-1}})",
       "'ecc_correctable' is -1"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"start","gpu":"gpu0","model":"H200","planned_s":60,"start_counters":{"pcie_replay":1.5}})",
       "counter 'pcie_replay' is not a whole number"},
      {w + R"({"start_s":0,"samples":11,"phase":"gemm","reasons":{},"counters":{}}})", "'samples' is 11, outside 0 to 10"},
      {w + R"({"start_s":0,"samples":10,"phase":"GEMM","reasons":{},"counters":{}}})", "'phase' has a character outside"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","power_w":[700,690,710],"reasons":{},"counters":{}}})",
       "'power_w' is not in order"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","power_w":[1,2],"reasons":{},"counters":{}}})",
       "'power_w' is not [min, median, max]"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","power_w":[1,2,1e300],"reasons":{},"counters":{}}})",
       "'power_w' has 1e+300, not a reading"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","reasons":{"0x1":[1,1,1,1]},"counters":{}}})",
       "reason '0x1' is not one burn-in keeps"},
      {w + R"({"start_s":0,"samples":4,"phase":"gemm","reasons":{"0x8":[5,5,0,0]},"counters":{}}})",
       "reason 0x8 has a count outside 0 to the window's 4 samples"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","reasons":{"0x8":[2,3,0,0]},"counters":{}}})",
       "reason 0x8 has streaks that cannot be"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","reasons":{"0x8":[0,0,0,0]},"counters":{}}})",
       "reason 0x8 has streaks that cannot be"},
      // One set sample cannot be both the first and the last of ten.
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","reasons":{"0x8":[1,1,1,1]},"counters":{}}})",
       "reason 0x8 has streaks that cannot be"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","pcie_gen":0,"reasons":{},"counters":{}}})", "'pcie_gen' is 0"},
      {w + R"({"start_s":0,"samples":10,"phase":"gemm","reasons":{}}})", "'counters' is missing or not an object"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"event","gpu":"gpu0","at_s":5,"xid":0,"detail":""})", "'xid' is 0, outside 1 to 999999"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"ended","gpu":"gpu0","code":"","reason":""})", "'code' is empty"},
      {R"({"schema":"gpuforge.gpu-stream/v1","type":"ended","gpu":"gpu0","code":"rm -rf","reason":""})",
       "'code' has a character outside"},
      {std::string(70000, ' '), "longer than 64 KiB"},
  };
  for (const auto& [line, words] : cases) {
    const auto r = ParseStreamLine("node b, burn-in stream line 9", line);
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_TRUE(r.error().message.starts_with("node b, burn-in stream line 9: not a burn-in stream line (")) << r.error().message;
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message << "\nwanted: " << words;
  }
}

// Every bit set in all ten samples: the start and end runs are the same run.
TEST(GpuStream, ABitSetThroughoutHasHeadAndTailEqualToTheWindow) {
  GpuWindow w = EmptyWindow();
  w.samples = 10;
  w.reasons = {{kClocksEventHwThermal, BitStreaks{10, 10, 10, 10}}};
  EXPECT_EQ(RoundTrip(StreamWindow{"gpu0", w}), StreamLine(StreamWindow{"gpu0", w}));
}

// What NVML can answer that the parser does not take is left out of the agent's line, so the
// line (and the GPU) still reaches the controller.
TEST(GpuStream, TheAgentLeavesOutReadingsTheParserWouldRefuse) {
  StreamLine start = Start("gpu0");
  std::get<StreamStart>(start).pcie_gen_max = 0;
  std::get<StreamStart>(start).pcie_width_max = -1;
  std::get<StreamStart>(start).start_counters.pcie_replay = 1e17;  // past 2^53
  FitForStream(start);
  const StreamLine start_back = RoundTrip(start);
  const StreamStart& s = std::get<StreamStart>(start_back);
  EXPECT_FALSE(s.pcie_gen_max.has_value());
  EXPECT_FALSE(s.pcie_width_max.has_value());
  EXPECT_FALSE(s.start_counters.pcie_replay.has_value());
  EXPECT_EQ(s.start_counters.ecc_uncorrectable, 0);
  GpuWindow w = FullWindow(0);
  w.power_w = Spread{1, 2, 4294967.295};  // 0xFFFFFFFF mW
  w.hbm_temp_c = Spread{1, std::numeric_limits<double>::infinity(), 2};
  w.pcie_gen = 4294967;
  w.tflops = -1;
  StreamLine line = StreamWindow{"gpu0", w};
  FitForStream(line);
  const StreamLine line_back = RoundTrip(line);
  const GpuWindow& back = std::get<StreamWindow>(line_back).window;
  EXPECT_FALSE(back.power_w.has_value());
  EXPECT_FALSE(back.hbm_temp_c.has_value());
  EXPECT_FALSE(back.pcie_gen.has_value());
  EXPECT_FALSE(back.tflops.has_value());
  EXPECT_EQ(back.gpu_temp_c, w.gpu_temp_c);  // the rest as it was
  EXPECT_EQ(back.counters, w.counters);
}

TEST(GpuStream, TextFromTheNodeIsMadePrintableAndBounded) {
  const std::string detail(600, 'x');
  const auto l = ParseStreamLine(
      "n", R"({"schema":"gpuforge.gpu-stream/v1","type":"event","gpu":"gpu2","at_s":5,"xid":48,"detail":"a\u001b[2Jb"})");
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(std::get<StreamEvent>(*l).event.detail, "a?[2Jb");
  EXPECT_FALSE(ParseStreamLine("n", R"({"schema":"gpuforge.gpu-stream/v1","type":"event","gpu":"gpu2","at_s":5,"xid":48,"detail":")" +
                                        detail + "\"}")
                   .ok());
}

TEST(GpuStream, TheFoldBuildsEachGpusSeriesInIndexOrder) {
  StreamFold fold("node-a", 600);
  ASSERT_TRUE(fold.Take(Start("gpu10")).ok());
  ASSERT_TRUE(fold.Take(Start("gpu2")).ok());
  ASSERT_TRUE(fold.Take(StreamWindow{"gpu2", FullWindow(0)}).ok());
  ASSERT_TRUE(fold.Take(StreamWindow{"gpu10", FullWindow(0)}).ok());
  ASSERT_TRUE(fold.Take(StreamWindow{"gpu2", FullWindow(10)}).ok());
  ASSERT_TRUE(fold.Take(StreamEvent{"gpu2", GpuEvent{12, 79, "fell off the bus"}}).ok());
  ASSERT_TRUE(fold.Take(StreamEnded{"gpu2", "burnin.nvml_lost", "GPU is lost"}).ok());
  const std::vector<GpuSeries> s = fold.Series();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].gpu, "gpu2");
  EXPECT_EQ(s[0].node, "node-a");
  EXPECT_EQ(s[0].model, "NVIDIA H200");
  EXPECT_EQ(s[0].planned_s, 600);
  EXPECT_EQ(s[0].pcie_gen_max, 5);
  EXPECT_EQ(s[0].start_counters.ecc_uncorrectable, 0);
  EXPECT_EQ(s[0].xid_unread, "cannot open /dev/kmsg: Operation not permitted");
  ASSERT_EQ(s[0].windows.size(), 2u);
  EXPECT_EQ(s[0].windows[1], FullWindow(10));
  ASSERT_EQ(s[0].events.size(), 1u);
  EXPECT_EQ(s[0].events[0].xid, 79);
  EXPECT_EQ(s[0].ended_code, "burnin.nvml_lost");
  EXPECT_EQ(s[1].gpu, "gpu10");
  EXPECT_EQ(s[1].windows.size(), 1u);
  EXPECT_TRUE(s[1].ended_code.empty());
}

TEST(GpuStream, TheFoldRefusesAStreamOutOfOrderAndKeepsWhatItHad) {
  StreamFold fold("node-b", 60);
  auto refused = [&](StreamLine l, std::string_view words) {
    const gpuforge::Status st = fold.Take(std::move(l));
    ASSERT_FALSE(st.ok()) << words;
    EXPECT_NE(st.error().message.find(words), std::string::npos) << st.error().message;
    EXPECT_TRUE(st.error().message.starts_with("node node-b")) << st.error().message;
  };
  refused(StreamWindow{"gpu0", FullWindow(0)}, "before the GPU's start line");
  ASSERT_TRUE(fold.Take(Start("gpu0", 60)).ok());
  refused(Start("gpu0"), "starts the GPU twice");
  ASSERT_TRUE(fold.Take(StreamWindow{"gpu0", FullWindow(20)}).ok());
  refused(StreamWindow{"gpu0", FullWindow(20)}, "before the previous one ended");
  refused(StreamWindow{"gpu0", FullWindow(15)}, "before the previous one ended");
  refused(StreamWindow{"gpu0", FullWindow(60)}, "past the planned 60 s");
  refused(Start("gpu1", 2592000), "plans 2592000 s, not the 60 s of this burn-in");
  ASSERT_TRUE(fold.Take(StreamEvent{"gpu0", GpuEvent{30, 48, ""}}).ok());
  refused(StreamEvent{"gpu0", GpuEvent{29, 48, ""}}, "before the previous one");
  ASSERT_TRUE(fold.Take(StreamEnded{"gpu0", "burnin.stopped", "SIGTERM"}).ok());
  refused(StreamWindow{"gpu0", FullWindow(30)}, "after the GPU's end");
  const std::vector<GpuSeries> s = fold.Series();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].windows.size(), 1u);  // only the one taken
  EXPECT_EQ(s[0].events.size(), 1u);
}

TEST(GpuStream, TheFoldBoundsWhatOneNodeCanMakeItKeep) {
  StreamFold fold("node-c", 600);
  for (std::size_t i = 0; i < kStreamMaxGpus; ++i) ASSERT_TRUE(fold.Take(Start("gpu" + std::to_string(i))).ok());
  EXPECT_FALSE(fold.Take(Start("gpu999")).ok());
  for (int i = 0; i < 1500; ++i) ASSERT_TRUE(fold.Take(StreamEvent{"gpu0", GpuEvent{1, 13, ""}}).ok());
  EXPECT_EQ(fold.Series()[0].events.size(), 1000u);
}

}  // namespace
}  // namespace gpuforge::probe
