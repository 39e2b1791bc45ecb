#include "testbed/standins.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "remote/command.h"

namespace gpuforge::testbed {
namespace {

const std::string kStandins = std::string(GPUFORGE_SOURCE_DIR) + "/tests/testbed/standins.sh";
const std::string kDebrepo = std::string(GPUFORGE_SOURCE_DIR) + "/tests/testbed/debrepo.sh";

}  // namespace

// The stand-in packages: the names and versions a GPU node's inventory asks for. slurmd is
// really installed on this machine (22.05.8-4+deb12u3), so its stand-in is newer.
const std::vector<std::string> kPackages = {
    // The driver package brings nvidia-persistenced, as NVIDIA's does. Branch 580 gets the open
    // kernel modules by default (#14), so the package is nvidia-open-580; NSCQ is planned with
    // DCGM on NVSwitch profiles. From R580 Fabric Manager and NSCQ carry no branch in their names.
    "nvidia-open-580=580.159.04-1,unit=nvidia-persistenced",
    "libnvidia-nscq=580.159.04-1",
    "nvidia-fabricmanager=580.159.04-1,unit=nvidia-fabricmanager",
    "cuda-toolkit-13-0=13.0.2-1",
    "libnccl2=2.28.9-1+cuda13.0",
    "libnccl2=2.27.7-1+cuda13.0",
    "libnccl-dev=2.28.9-1+cuda13.0,depends=libnccl2 (= 2.28.9-1+cuda13.0)",
    "libnccl-dev=2.27.7-1+cuda13.0,depends=libnccl2 (= 2.27.7-1+cuda13.0)",
    "datacenter-gpu-manager-4-cuda13=1:4.4.1-1,unit=nvidia-dcgm",
    // The exporter at the pinned release and an older one the pin must not pick.
    "datacenter-gpu-manager-exporter=4.8.2-1,unit=nvidia-dcgm-exporter",
    "datacenter-gpu-manager-exporter=4.5.2-1,unit=nvidia-dcgm-exporter",
    "rdma-core=2507.0-1",
    "ibverbs-utils=2507.0-1,depends=rdma-core",
    "perftest=25.07.0-1",
    "slurmd=24.11.6-1,unit=slurmd",
};

namespace {

using remote::ShellQuote;

// argv as one shell command line.
std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& a : argv) words.push_back(ShellQuote(a));
  return fmt::format("{}", fmt::join(words, " "));
}

}  // namespace


// Runs `command` as root on host i, its stdin fed on this machine by `feed_prefix` (a pipeline
// ending in "| ", e.g. "tar -C DIR -cf - . | ") or `feed_suffix` (a redirection, "< FILE").
// stdout and stderr together.
Result<CommandOutput> SshFed(const Testbed& tb, std::size_t i, std::string_view command,
                             std::string_view feed_prefix, std::string_view feed_suffix,
                             std::chrono::seconds timeout) {
  std::string line =
      fmt::format("{}{} {} 2>&1", feed_prefix, CommandLine(tb.SshArgv(i, "root", command)), feed_suffix);
  return RunCommand({"/bin/sh", "-c", line}, timeout);
}

// Installs the stand-in systemctl, modprobe and sysctl (standins.sh) on host i.
Status InstallStandins(const Testbed& tb, std::size_t i) {
  Result<CommandOutput> out = SshFed(tb, i, "sh -s", "", fmt::format("< {}", ShellQuote(kStandins)));
  if (!out.ok()) return out.error();
  if (out->exit_code != 0) {
    return Error{fmt::format("standins.sh on {} failed (exit {}): {}", tb.hosts()[i].name,
                             out->exit_code, out->output)};
  }
  return Status::Ok();
}

// Builds the stand-in packages `specs` (debrepo.sh's NAME=VERSION[,unit=U][,depends=D]) into
// the flat apt repository `dir` on this machine.
Status BuildRepo(const std::string& dir, const std::vector<std::string>& specs) {
  std::vector<std::string> argv = {kDebrepo, dir};
  argv.insert(argv.end(), specs.begin(), specs.end());
  Result<CommandOutput> out = RunCommand({"/bin/sh", "-c", CommandLine(argv) + " 2>&1"});
  if (!out.ok()) return out.error();
  if (out->exit_code != 0) {
    return Error{fmt::format("debrepo.sh failed (exit {}): {}", out->exit_code, out->output)};
  }
  return Status::Ok();
}

// Copies the repository `dir` to /srv/gpuforge-repo on host i, names it in
// /etc/apt/sources.list.d/gpuforge-test.list and runs apt-get update on that list alone.
// Returns apt-get update's output.
Result<CommandOutput> PublishRepo(const Testbed& tb, std::size_t i, const std::string& dir) {
  std::string command = fmt::format(
      "set -e; rm -rf {0}; mkdir -p {0}; tar -C {0} -xf -; "
      "echo 'deb [trusted=yes] file:{0} ./' > {1}; {2}",
      kHostRepo, kHostList, kAptUpdate);
  return SshFed(tb, i, command, fmt::format("tar -C {} -cf - . | ", ShellQuote(dir)), "");
}

Status CopyRepo(const Testbed& tb, std::size_t i, const std::string& dir) {
  Result<CommandOutput> out = SshFed(tb, i, fmt::format("set -e; rm -rf {0}; mkdir -p {0}; tar -C {0} -xf -", kHostRepo),
                                     fmt::format("tar -C {} -cf - . | ", ShellQuote(dir)), "");
  if (!out.ok()) return out.error();
  if (out->exit_code != 0) {
    return Error{fmt::format("copying the repository to {} failed (exit {}): {}", tb.hosts()[i].name, out->exit_code,
                             out->output)};
  }
  return Status::Ok();
}

}  // namespace gpuforge::testbed
