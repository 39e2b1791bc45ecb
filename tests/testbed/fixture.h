#pragma once

// The preamble every end-to-end test on the test hosts shares, in one place: skip with the
// reason where this machine cannot run a testbed (never a pass), bring the hosts up, run
// commands on them as root, read and write inventories beside the testbed's own, and run
// gpuforge against them the way a user does (the testbed's known_hosts, no ssh config, no
// colour, stdin from /dev/null). The stand-in apt repository is built once per test program.

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "testbed/testbed.h"

namespace gpuforge::testbed {

// `hosts` hosts whose nvidia-smi is the STAND-IN that prints a recorded H200's output
// (tests/data/facts/nvidia-h200-1gpu); the testbed's inventory then has one H200 per host.
Options WithStandInGpu(int hosts);

// The stand-in apt repository (debrepo.sh building kPackages) on this machine: built on the
// first call of the test program (dpkg-deb for a dozen packages takes seconds), removed when
// the program ends. Its directory, or why it could not be built.
Result<std::string> StandinRepo();

// What happens to gpuforge's stderr in TestbedTest::Gpuforge.
enum class Stderr { kMerged, kDropped };

class TestbedTest : public ::testing::Test {
 protected:
  // Brings the hosts up. Where this machine cannot (Available() says why) the test is skipped
  // with the reason; where the start fails, the test fails. Both return false, so
  // `if (!Bring(o)) return;` ends SetUp or the test there.
  [[nodiscard]] bool Bring(const Options& o);
  [[nodiscard]] bool Bring(int hosts, bool netns = false);

  // Root on host i runs `command` (in `{ }` with its stderr merged into stdout); a command
  // that could not be run at all fails the test.
  CommandOutput Ssh(std::size_t i, const std::string& command,
                    std::chrono::seconds timeout = std::chrono::seconds(120));
  // Ssh's output, whatever the exit status.
  std::string SshOutput(std::size_t i, const std::string& command);
  // Ssh's output of a command that must succeed.
  std::string Out(std::size_t i, const std::string& command);

  // The testbed's own inventory, as text.
  std::string Inventory() const;
  // Writes `text` to NAME in the testbed's directory; the path.
  std::string WriteFile(const std::string& name, const std::string& text) const;

  // `gpuforge ARGS --known-hosts K --ssh-config none --color never TAIL </dev/null`: TAIL goes
  // last (`-- COMMAND` for run). stderr merged into the output unless dropped (to parse JSON).
  CommandOutput Gpuforge(std::string_view args, std::string_view tail = "", Stderr err = Stderr::kMerged,
                         std::chrono::seconds timeout = std::chrono::seconds(600));

  std::optional<Testbed> tb_;
};

}  // namespace gpuforge::testbed
