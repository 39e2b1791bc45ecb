// The controller's side of the probe exchange: rounds, failures, and a group run through the
// recording fake (the SSH path runs in validate_e2e_test's TCP pairs).

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "gpuforge/probe/probe.h"
#include "gpuforge/validate/exchange_hub.h"
#include "gpuforge/validate/runner.h"
#include "remote/fake_session.h"

namespace gpuforge::validate {
namespace {

using Clock = std::chrono::steady_clock;
using remote::testing::FakeConnector;

Clock::time_point In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// fuzz_probe_json found a reply whose part was the word "probe" read as a result line: the
// test for an exchange line looked for words in it rather than at its structure.
TEST(ExchangeLine, TheLinesStructureDecidesNotTheWordsInIt) {
  EXPECT_TRUE(probe::IsExchangeLine(probe::ExchangeReplyLine({"probe", "b+/c"})));
  EXPECT_TRUE(probe::IsExchangeLine(probe::ExchangeOfferLine("probe")));
  EXPECT_TRUE(probe::IsExchangeLine(probe::ExchangeOfferLine("")));
  // A result line that quotes the schema in its log is still a result line.
  probe::ProbeResult r;
  r.probe = "nccl.allreduce";
  r.log.push_back(std::string("peer said {\"schema\":\"") + std::string(probe::kExchangeSchema) + "\"}");
  EXPECT_FALSE(probe::IsExchangeLine(probe::ToJsonLine(r)));
  EXPECT_FALSE(probe::IsExchangeLine(R"({"schema":"gpuforge.probe/v1","offer":"x"})"));
  EXPECT_FALSE(probe::IsExchangeLine("plain agent output"));
  EXPECT_FALSE(probe::IsExchangeLine(R"(["gpuforge.exchange/v1"])"));
  // Broken JSON that names the schema goes to the strict parser, which says what is wrong.
  EXPECT_TRUE(probe::IsExchangeLine(R"({"schema":"gpuforge.exchange/v1","offer":)"));
  EXPECT_FALSE(probe::ParseExchangeOffer("n", R"({"schema":"gpuforge.exchange/v1","offer":)").ok());
}

TEST(ExchangeHub, EveryParticipantGetsEveryPartInOrderRoundByRound) {
  ExchangeHub hub(3, In(5000), nullptr);
  auto run = [&](std::size_t who) {
    std::vector<std::string> got;
    for (int round = 0; round < 2; ++round) {
      std::optional<std::string> r = hub.Offer(who, fmt::format("r{}=p{}", round, who));
      got.push_back(r.value_or("FAILED"));
    }
    return got;
  };
  auto a = std::async(std::launch::async, run, 2);
  auto b = std::async(std::launch::async, run, 0);
  std::vector<std::string> c = run(1);
  for (const auto& got : {a.get(), b.get(), c}) {
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], "{\"parts\":[\"r0=p0\",\"r0=p1\",\"r0=p2\"],\"schema\":\"gpuforge.exchange/v1\"}\n");
    EXPECT_EQ(got[1], "{\"parts\":[\"r1=p0\",\"r1=p1\",\"r1=p2\"],\"schema\":\"gpuforge.exchange/v1\"}\n");
    Result<std::vector<std::string>> parsed = probe::ParseExchangeReply("test", got[1]);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->at(2), "r1=p2");
  }
  EXPECT_EQ(hub.failure(), "");
}

TEST(ExchangeHub, AParticipantThatEndsFailsTheRoundForTheOthers) {
  ExchangeHub hub(2, In(5000), nullptr);
  auto waiting = std::async(std::launch::async, [&] { return hub.Offer(0, "id=1"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  hub.Leave(1);
  EXPECT_EQ(waiting.get(), std::nullopt);
  EXPECT_EQ(hub.failure(), "participant 1 ended before exchange round 1");
  EXPECT_EQ(hub.Offer(1, "late"), std::nullopt);  // a failed exchange stays failed
}

TEST(ExchangeHub, TheDeadlineAndACancelEndTheWait) {
  ExchangeHub slow(2, In(200), nullptr);
  const auto start = Clock::now();
  EXPECT_EQ(slow.Offer(0, ""), std::nullopt);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(150));
  EXPECT_EQ(slow.failure(), "exchange round 1 timed out waiting for every participant");

  std::atomic<bool> cancel{true};
  ExchangeHub cancelled(2, In(60000), &cancel);
  EXPECT_EQ(cancelled.Offer(1, ""), std::nullopt);
  EXPECT_EQ(cancelled.failure(), "interrupted during the exchange");
}

remote::ExecResult Exited(std::string out) {
  remote::ExecResult r;
  r.exit_status = 0;
  r.out = std::move(out);
  return r;
}

std::unique_ptr<remote::Session> Connect(FakeConnector& c, const std::string& node) {
  remote::Target t;
  t.node = node;
  return std::move(c.Connect(t)).value();
}

probe::ProbeResult Served(const std::string& key) {
  probe::ProbeResult r;
  r.probe = key;
  r.measurements.push_back({"node", "served", 1, "count", {}, {}});
  return r;
}

TEST(RunGroup, OffersMeetAtTheControllerAndEachAgentGetsAllParts) {
  FakeConnector c;
  for (const std::string node : {"n01", "n02"}) {
    c.nodes[node].exec = [node](const std::string&) -> Result<remote::ExecResult> {
      return Exited(probe::ExchangeOfferLine("from=" + node) + "\n" + probe::ToJsonLine(Served("tcp.bandwidth")) +
                    "\n");
    };
  }
  auto s1 = Connect(c, "n01");
  auto s2 = Connect(c, "n02");
  PlannedRun run;
  run.check = run.probe = "tcp.bandwidth";
  run.node = "n02";
  PlannedRun other = run;
  other.node = "n01";
  const std::vector<GroupMember> members = {{s1.get(), "/a", other}, {s2.get(), "/b", run}};
  auto out = RunGroup(members, 30, nullptr);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& r : out) {
    ASSERT_TRUE(std::holds_alternative<probe::ProbeResult>(r));
    EXPECT_EQ(std::get<probe::ProbeResult>(r).probe, "tcp.bandwidth");
  }
  const std::string reply =
      "stdin: {\"parts\":[\"from=n01\",\"from=n02\"],\"schema\":\"gpuforge.exchange/v1\"}\n";
  EXPECT_EQ(c.log["n01"], (std::vector<std::string>{"exec: '/a' agent run 'tcp.bandwidth' --timeout 30 --exchange", reply}));
  EXPECT_EQ(c.log["n02"], (std::vector<std::string>{"exec: '/b' agent run 'tcp.bandwidth' --timeout 30 --exchange", reply}));
}

TEST(RunGroup, AHostileOfferClosesTheExchangeAndTheReasonReachesTheVerdicts) {
  FakeConnector c;
  c.nodes["n01"].exec = [](const std::string&) -> Result<remote::ExecResult> {
    // A part outside the alphabet: a node must not smuggle text into its peers' stdin.
    return Exited("{\"schema\":\"gpuforge.exchange/v1\",\"offer\":\"x;reboot\"}\n");
  };
  c.nodes["n02"].exec = [](const std::string&) -> Result<remote::ExecResult> {
    return Exited(probe::ExchangeOfferLine("ok") + "\n");
  };
  auto s1 = Connect(c, "n01");
  auto s2 = Connect(c, "n02");
  PlannedRun a;
  a.check = a.probe = "nccl.allreduce";
  a.node = "n01";
  PlannedRun b = a;
  b.node = "n02";
  const std::vector<GroupMember> members = {{s1.get(), "/a", a}, {s2.get(), "/a", b}};
  auto out = RunGroup(members, 30, nullptr);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& r : out) {
    ASSERT_TRUE(std::holds_alternative<Verdict>(r));
    const Verdict& v = std::get<Verdict>(r);
    EXPECT_EQ(v.state, State::kError);
    EXPECT_EQ(v.code, "agent.bad_output");
    EXPECT_NE(v.detail.find("(exchange: node n01, agent run nccl.allreduce: exchange offer is not a string"),
              std::string::npos)
        << v.detail;
  }
  EXPECT_EQ(c.log["n01"].back(), "stdin: EOF");
  EXPECT_EQ(c.log["n02"].back(), "stdin: EOF");
}

}  // namespace
}  // namespace gpuforge::validate
