#include "gpuforge/remote/fanout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "remote/fake_session.h"

namespace gpuforge::remote {
namespace {

using testing::FakeConnector;

std::vector<Target> Targets(int n) {
  std::vector<Target> out;
  for (int i = 1; i <= n; ++i) {
    Target t;
    t.node = fmt::format("n{:02}", i);
    t.endpoint = {fmt::format("127.0.0.{}", i), 22, "root"};
    out.push_back(t);
  }
  return out;
}

TEST(Fanout, EveryNodeRunsOnceAndConnectionsAreReusedAcrossSteps) {
  FakeConnector fake;
  Fleet fleet(fake, Targets(10), {});
  for (int step = 0; step < 3; ++step) {
    fleet.Each([&](std::size_t, Session& s) { return s.Exec(fmt::format("step {}", step), {}).ok(); });
  }
  EXPECT_EQ(fake.connects, 10);
  for (int i = 1; i <= 10; ++i) {
    EXPECT_EQ(fake.log[fmt::format("n{:02}", i)], (std::vector<std::string>{"exec: step 0", "exec: step 1", "exec: step 2"}));
  }
}

TEST(Fanout, NeverMoreThanWidthAtOnce) {
  FakeConnector fake;
  std::atomic<int> now{0}, peak{0};
  for (int i = 1; i <= 40; ++i) {
    fake.nodes[fmt::format("n{:02}", i)].exec = [&](const std::string&) -> Result<ExecResult> {
      int v = ++now;
      for (int p = peak.load(); v > p && !peak.compare_exchange_weak(p, v);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      --now;
      ExecResult r;
      r.exit_status = 0;
      return r;
    };
  }
  FanoutOptions o;
  o.width = 4;
  Fleet fleet(fake, Targets(40), o);
  fleet.Each([&](std::size_t, Session& s) { return s.Exec("x", {}).ok(); });
  EXPECT_LE(peak.load(), 4);
  EXPECT_GE(peak.load(), 2) << "the fleet did not work on nodes in parallel";
}

TEST(Fanout, AnUnreachableNodeIsReportedAndSkippedLater) {
  FakeConnector fake;
  fake.nodes["n02"].connect_error = "node n02: cannot connect to root@127.0.0.2:22: Connection refused";
  std::vector<Progress> seen;
  FanoutOptions o;
  o.width = 1;
  o.on_progress = [&](const Progress& p) { seen.push_back(p); };
  Fleet fleet(fake, Targets(3), o);
  std::vector<int> ran(3, 0);
  fleet.Each([&](std::size_t i, Session&) { return ++ran[i] > 0; });
  fleet.Each([&](std::size_t i, Session&) { return ++ran[i] > 0; });
  EXPECT_EQ(ran, (std::vector<int>{2, 0, 2}));
  ASSERT_TRUE(fleet.lost(1).has_value());
  EXPECT_EQ(fleet.lost(1)->message, "node n02: cannot connect to root@127.0.0.2:22: Connection refused");
  EXPECT_FALSE(fleet.lost(0).has_value());
  EXPECT_EQ(fake.connects, 3);  // no retry of n02 in the second step
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().done, 3u);
  EXPECT_EQ(seen.back().failed, 1u);
  EXPECT_EQ(seen.back().running, 0u);
}

TEST(Fanout, ALostConnectionTakesTheNodeOutOfLaterSteps) {
  FakeConnector fake;
  fake.nodes["n01"].dies_after_exec = true;
  Fleet fleet(fake, Targets(2), {});
  fleet.Each([&](std::size_t, Session& s) { return s.Exec("first", {}).ok(); });
  ASSERT_TRUE(fleet.lost(0).has_value());
  EXPECT_EQ(fleet.lost(0)->message, "node n01: connection lost");
  fleet.Each([&](std::size_t, Session& s) { return s.Exec("second", {}).ok(); });
  EXPECT_EQ(fake.log["n01"], std::vector<std::string>{"exec: first"});
  EXPECT_EQ(fake.log["n02"], (std::vector<std::string>{"exec: first", "exec: second"}));
}

TEST(Fanout, CancelSkipsNodesNotYetStarted) {
  FakeConnector fake;
  std::atomic<bool> cancel{false};
  FanoutOptions o;
  o.width = 1;
  o.cancel = &cancel;
  Fleet fleet(fake, Targets(5), o);
  fleet.Each([&](std::size_t i, Session&) {
    if (i == 1) cancel = true;
    return true;
  });
  EXPECT_FALSE(fleet.lost(0).has_value());
  EXPECT_FALSE(fleet.lost(1).has_value());
  for (std::size_t i = 2; i < 5; ++i) {
    ASSERT_TRUE(fleet.lost(i).has_value());
    EXPECT_EQ(fleet.lost(i)->message, fmt::format("node n{:02}: not started: interrupted", i + 1));
  }
}

TEST(Fanout, WithoutKeptConnectionsEachStepConnectsAgain) {
  FakeConnector fake;
  FanoutOptions o;
  o.keep_connections = false;
  Fleet fleet(fake, Targets(3), o);
  fleet.Each([&](std::size_t, Session& s) { return s.Exec("a", {}).ok(); });
  fleet.Each([&](std::size_t, Session& s) { return s.Exec("b", {}).ok(); });
  EXPECT_EQ(fake.connects, 6);
}

}  // namespace
}  // namespace gpuforge::remote
