#pragma once

// Local SSH test hosts for tests and benchmarks: a handle on tests/testbed/testbed.sh, which
// brings up N copy-on-write clones of this machine, each in its own namespaces running a real
// sshd. Start() brings them up; the destructor takes them down, and if the test process dies
// first, the testbed notices (a lifeline pipe) and takes itself down. See README.md beside
// this file.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"

namespace gpuforge::testbed {

struct Options {
  int hosts = 3;
  bool netns = false;            // each host in its own network namespace behind a veth pair
  int port = 22;                 // sshd's port on every host
  std::string stand_in_gpu_dir;  // recorded nvidia-smi outputs; "" = no stand-in nvidia-smi
  std::string dir;               // where the keys and configs go; "" = a fresh temporary dir
};

struct Host {
  std::string name;     // tb01, tb02, ... (as many digits as the host count needs, at least 2)
  std::string address;  // 127.x.y.z, or 198.18-19.x.y with netns
  int port = 22;
  int pid = 0;       // the host's pid 1 as this machine sees it, for nsenter -t
  std::string link;  // netns: this machine's end of the host's veth; "" otherwise
};

struct Paths {
  std::string dir;
  std::string identity;     // the user key (ed25519) for root and gpuforge on every host
  std::string known_hosts;  // every host's key
  std::string ssh_config;   // Host entries by name: `ssh -F ssh_config tb01 true`
  std::string inventory;    // a gpuforge inventory of the hosts
  std::string hosts_tsv;    // name, address, port, pid, link
};

// What a finished command printed (stdout and stderr together) and how it ended.
struct CommandOutput {
  int exit_code = 0;  // the exit status, or 128 + the signal that ended it
  std::string output;
};

// Runs argv (looked up in PATH) with stdin from /dev/null, collecting its output. A command
// still running after `timeout` is killed and reported as an Error.
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 std::chrono::seconds timeout = std::chrono::seconds(120));

// Whether this machine can bring up a testbed (root, overlayfs, namespaces, OpenSSH); when it
// cannot, *why says what is missing, for GTEST_SKIP.
bool Available(std::string* why);

class Testbed {
 public:
  static Result<Testbed> Start(const Options& options);

  Testbed(Testbed&& other) noexcept;
  Testbed& operator=(Testbed&& other) noexcept;
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;
  ~Testbed();  // Stop(), errors ignored

  const std::vector<Host>& hosts() const { return hosts_; }
  const Paths& paths() const { return paths_; }
  bool netns() const { return netns_; }

  // argv for OpenSSH's client running `command` on host i as `user`, through ssh_config.
  std::vector<std::string> SshArgv(std::size_t i, std::string_view user,
                                   std::string_view command) const;

  // Host i is hosts()[i]. Stopping stops its sshd (the host keeps its files and processes);
  // starting starts sshd again; hanging puts a listener that accepts and never answers in
  // sshd's place (StartHost undoes it).
  Status StopHost(std::size_t i);
  Status StartHost(std::size_t i);
  Status HangHost(std::size_t i);
  // netns only: takes the host's end of its veth down (SSH then times out) and up again.
  Status CutLink(std::size_t i);
  Status RestoreLink(std::size_t i);
  // Adds `delay` to the host's link (0 removes it). Where that cannot be done here (no netem
  // in the kernel, or no netns), returns the reason as an Error and sets *unsupported.
  Status Delay(std::size_t i, std::chrono::milliseconds delay, bool* unsupported = nullptr);

  // Takes every host down and removes what the testbed wrote; safe to call twice.
  Status Stop();

 private:
  Testbed() = default;
  Status HostCommand(std::string_view verb, std::size_t i, const std::vector<std::string>& extra,
                     bool* unsupported);

  Paths paths_;
  std::vector<Host> hosts_;
  bool netns_ = false;
  int lifeline_ = -1;  // write end; the testbed's watcher takes it down when this closes
};

}  // namespace gpuforge::testbed
