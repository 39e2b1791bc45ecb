// Whose failure a pair or group run is (#28 item 13): a participant's own failure is its
// verdict; the others, which only waited on it, get a SKIP naming it; with no failure of its
// own anywhere, every waiting failure keeps its ERROR.

#include "validate/blame.h"

#include <gtest/gtest.h>

namespace gpuforge::validate::internal {
namespace {

Verdict V(std::string node, State state, std::string code, std::string detail = "") {
  Verdict v;
  v.check = "tcp.bandwidth";
  v.node = std::move(node);
  v.entity = "peer";
  v.state = state;
  v.code = std::move(code);
  v.detail = std::move(detail);
  return v;
}

TEST(BlameOwnFailures, TheServerThatCouldNotBindIsBlamedNotItsClient) {
  std::vector<Verdict> v = {
      V("tb01", State::kError, "exchange.failed", "participant 0 ended before exchange round 1"),
      V("tb02", State::kError, "sys.bind_failed", "bind(0.0.0.0:18517): Address already in use")};
  BlameOwnFailures(v, "pair.peer_failed");
  EXPECT_EQ(v[0].state, State::kSkip);
  EXPECT_EQ(v[0].code, "pair.peer_failed");
  EXPECT_EQ(v[0].detail,
            "not this node's failure: tb02 failed first (tb02: sys.bind_failed); here it ended ERROR exchange.failed: "
            "participant 0 ended before exchange round 1");
  EXPECT_EQ(v[0].next_step, "look at tb02 first; run the check again once it passes");
  EXPECT_EQ(v[1].state, State::kError);
  EXPECT_EQ(v[1].code, "sys.bind_failed");
}

TEST(BlameOwnFailures, AGroupNamesEveryMemberThatFailedOnItsOwn) {
  std::vector<Verdict> v = {V("gpu01", State::kError, "nccl.error"), V("gpu02", State::kError, "gpu.cuda_error"),
                            V("gpu03", State::kError, "exchange.failed"), V("gpu04", State::kFail, "gpu.not_visible"),
                            V("gpu05", State::kPass, "")};
  BlameOwnFailures(v, "group.member_failed");
  EXPECT_EQ(v[0].state, State::kSkip);
  EXPECT_EQ(v[0].code, "group.member_failed");
  EXPECT_EQ(v[0].detail.rfind("not this node's failure: gpu[02,04] failed first (gpu02: gpu.cuda_error; gpu04: "
                              "gpu.not_visible)",
                              0),
            0u)
      << v[0].detail;
  EXPECT_EQ(v[1].code, "gpu.cuda_error");
  EXPECT_EQ(v[2].code, "group.member_failed");
  EXPECT_EQ(v[3].state, State::kFail);
  EXPECT_EQ(v[4].state, State::kPass);
}

TEST(BlameOwnFailures, WithNoFailureOfItsOwnAnywhereEveryoneKeepsTheError) {
  std::vector<Verdict> v = {V("tb01", State::kError, "exchange.failed"), V("tb02", State::kError, "tcp.timeout")};
  BlameOwnFailures(v, "pair.peer_failed");
  EXPECT_EQ(v[0].state, State::kError);
  EXPECT_EQ(v[0].code, "exchange.failed");
  EXPECT_EQ(v[1].state, State::kError);
  EXPECT_EQ(v[1].code, "tcp.timeout");
}

TEST(BlameOwnFailures, ANodeWithItsOwnFailureKeepsItsWaitingOnesToo) {
  // A node that failed on its own stays failed in every verdict; only the others are excused.
  std::vector<Verdict> v = {V("tb01", State::kError, "agent.bad_output"), V("tb01", State::kError, "exchange.failed"),
                            V("tb02", State::kError, "tcp.timeout")};
  BlameOwnFailures(v, "pair.peer_failed");
  EXPECT_EQ(v[0].state, State::kError);
  EXPECT_EQ(v[1].state, State::kError);
  EXPECT_EQ(v[2].state, State::kSkip);
  EXPECT_EQ(v[2].code, "pair.peer_failed");
}

TEST(BlameOwnFailures, AServerCancelledWaitingForAClientThatCouldNotConnectIsNotBlamed) {
  // The path between them is dead: the client cannot connect, and the controller stops the
  // server that waited for it. Neither failed on its own, so both keep their errors (and
  // validate --isolate reads the pair as a zero figure, not a node to blame).
  std::vector<Verdict> v = {V("tb01", State::kError, "sys.connect_failed"), V("tb02", State::kError, "probe.cancelled")};
  BlameOwnFailures(v, "pair.peer_failed");
  EXPECT_EQ(v[0].code, "sys.connect_failed");
  EXPECT_EQ(v[1].code, "probe.cancelled");
  EXPECT_EQ(v[1].state, State::kError);
}

}  // namespace
}  // namespace gpuforge::validate::internal
