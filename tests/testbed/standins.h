#pragma once

// Shared by the end-to-end tests that need more than sshd on a test host: the STAND-IN
// systemctl, modprobe and sysctl (standins.sh) and a flat apt repository of STAND-IN .deb
// packages (debrepo.sh). See README.md beside this file for what each stand-in does and why.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "testbed/testbed.h"

namespace gpuforge::testbed {

// Where PublishRepo/CopyRepo put the repository on a host, and the list PublishRepo writes.
inline constexpr std::string_view kHostRepo = "/srv/gpuforge-repo";
inline constexpr std::string_view kHostList = "/etc/apt/sources.list.d/gpuforge-test.list";

// apt-get update reading the stand-in repository's list only.
inline constexpr std::string_view kAptUpdate =
    "apt-get update -o Dir::Etc::sourcelist=sources.list.d/gpuforge-test.list "
    "-o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0";
inline constexpr std::string_view kAptInstall = "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends";

// The stand-in packages: the names and versions a GPU node's inventory asks for (two NCCL
// versions, so pins and downgrades can be tested). slurmd is really installed on this machine
// (22.05.8-4+deb12u3), so its stand-in is newer.
extern const std::vector<std::string> kPackages;

// Runs `command` as root on host i, its stdin fed on this machine by `feed_prefix` (a pipeline
// ending in "| ", e.g. "tar -C DIR -cf - . | ") or `feed_suffix` (a redirection, "< FILE").
// stdout and stderr together.
Result<CommandOutput> SshFed(const Testbed& tb, std::size_t i, std::string_view command, std::string_view feed_prefix,
                             std::string_view feed_suffix, std::chrono::seconds timeout = std::chrono::seconds(120));

// Installs the stand-in systemctl, modprobe and sysctl (standins.sh) on host i.
Status InstallStandins(const Testbed& tb, std::size_t i);

// Builds the stand-in packages `specs` (debrepo.sh's NAME=VERSION[,unit=U][,depends=D]) into
// the flat apt repository `dir` on this machine.
Status BuildRepo(const std::string& dir, const std::vector<std::string>& specs);

// Copies the repository `dir` to /srv/gpuforge-repo on host i, names it in
// /etc/apt/sources.list.d/gpuforge-test.list and runs apt-get update on that list alone.
// Returns apt-get update's output.
Result<CommandOutput> PublishRepo(const Testbed& tb, std::size_t i, const std::string& dir);

// Copies the repository `dir` to /srv/gpuforge-repo on host i and nothing else (the
// inventory's software.repositories names it, and gpuforge writes the list).
Status CopyRepo(const Testbed& tb, std::size_t i, const std::string& dir);

}  // namespace gpuforge::testbed
