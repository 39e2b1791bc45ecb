// run's text and JSON from a hand-built run: outputs folded or not, stderr and the end of a
// failed command, errors, and the tally line.

#include "gpuforge/report/run_report.h"

#include <gtest/gtest.h>

namespace gpuforge::report {
namespace {

using State = remote::NodeRun::State;

remote::CommandRun Sample() {
  remote::CommandRun run;
  run.command = "uname -r";
  remote::NodeRun ok;
  ok.state = State::kOk;
  ok.result.exit_status = 0;
  ok.result.out = "6.8.0";
  ok.result.elapsed = std::chrono::milliseconds(12);
  ok.end = "exit 0";
  for (const char* n : {"gpu01", "gpu02"}) {
    ok.node = n;
    run.nodes.push_back(ok);
  }
  remote::NodeRun failed;
  failed.node = "gpu03";
  failed.state = State::kFailed;
  failed.result.exit_status = 3;
  failed.result.err = "oops";
  failed.end = "exit 3";
  run.nodes.push_back(failed);
  remote::NodeRun lost;
  lost.node = "gpu04";
  lost.state = State::kUnreachable;
  lost.error = "connection refused";
  run.nodes.push_back(lost);
  run.ok = 2;
  run.failed = 1;
  run.unreachable = 1;
  run.seconds = 1.25;
  return run;
}

TEST(RunReport, TextFoldsIdenticalOutput) {
  EXPECT_EQ(RunText(Sample(), true, Style{}),
            "---------------\ngpu[01-02] (2)\n---------------\n6.8.0\n"
            "---------------\ngpu03 (1)\n---------------\nstderr:\noops\nexit 3\n"
            "---------------\ngpu04 (1)\n---------------\nunreachable: connection refused\n");
}

TEST(RunReport, TextWithoutFolding) {
  const std::string text = RunText(Sample(), false, Style{});
  EXPECT_NE(text.find("gpu01 (1)\n---------------\n6.8.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu02 (1)\n---------------\n6.8.0\n"), std::string::npos) << text;
}

TEST(RunReport, Json) {
  EXPECT_EQ(RunJson(Sample()).dump(),
            R"({"schema":"gpuforge.run/v1","command":"uname -r","ok":2,"failed":1,"unreachable":1,"nodes":[)"
            R"({"node":"gpu01","state":"ok","end":"exit 0","exit_status":0,"stdout":"6.8.0","stderr":"","elapsed_ms":12},)"
            R"({"node":"gpu02","state":"ok","end":"exit 0","exit_status":0,"stdout":"6.8.0","stderr":"","elapsed_ms":12},)"
            R"({"node":"gpu03","state":"failed","end":"exit 3","exit_status":3,"stdout":"","stderr":"oops","elapsed_ms":0},)"
            R"({"node":"gpu04","state":"unreachable","error":"connection refused"}]})");
}

TEST(RunReport, Tally) {
  EXPECT_EQ(RunTally(Sample(), false), "run: 2 ok, 1 failed, 1 unreachable, 4 nodes in 1.2 s\n");
  EXPECT_EQ(RunTally(Sample(), true), "run: 2 ok, 1 failed, 1 unreachable, 4 nodes in 1.2 s (interrupted)\n");
}

}  // namespace
}  // namespace gpuforge::report
