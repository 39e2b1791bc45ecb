// The signals that mean "stop" (issue #12, item 3): Ctrl-C, SIGTERM (a cancelled CI job) and
// SIGHUP (the terminal gone) all set the flag the fan-out and the node steps watch, the first
// time; the end-to-end case, a real apply sent SIGTERM, is ApplyFaults in apply_faults_e2e_test.

#include <gtest/gtest.h>

#include <csignal>

#include "cli/remote_options.h"

namespace gpuforge::cli {
namespace {

TEST(InterruptGuard, IntTermAndHupEachSetTheFlagAndTheGuardRestoresTheDefault) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    {
      InterruptGuard guard;
      EXPECT_FALSE(guard.interrupted()) << sig;
      ASSERT_EQ(std::raise(sig), 0);
      EXPECT_TRUE(guard.interrupted()) << sig;
      EXPECT_TRUE(guard.flag()->load()) << sig;
      // The second one ends the process the default way: the handler is no longer ours.
      struct sigaction now {};
      ASSERT_EQ(::sigaction(sig, nullptr, &now), 0);
      EXPECT_EQ(now.sa_handler, SIG_DFL) << sig;
    }
    // A new guard starts clear.
    InterruptGuard next;
    EXPECT_FALSE(next.interrupted()) << sig;
  }
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace gpuforge::cli
