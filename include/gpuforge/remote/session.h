#pragma once

// The narrow interface everything that touches a node goes through: a session runs commands
// and moves files. The SSH implementation is in ssh.h; tests of the layers above use a
// recording fake (tests/remote/fake_session.h).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "gpuforge/remote/target.h"

namespace gpuforge::remote {

inline constexpr std::size_t kDefaultOutputCap = std::size_t{16} << 20;

struct ExecOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::size_t output_cap = kDefaultOutputCap;  // per stream; beyond it the command is stopped
  std::string input;                           // sent on stdin, then EOF
  bool sudo = false;  // run through `sudo -n` when the target's user is not root
  // Set from another thread (Ctrl-C): the command is stopped like on a timeout.
  const std::atomic<bool>* cancel = nullptr;
  // For commands that converse (the agent's exchange, probe.h): called with each complete
  // stdout line as it arrives (without its newline; the line is also kept in
  // ExecResult::out). What it returns is written to the command's stdin; nullopt closes stdin.
  // While it is set, stdin stays open after `input` until the hook closes it or the command
  // ends. It may block (a barrier across nodes); the timeout and cancel apply around it.
  std::function<std::optional<std::string>(std::string_view line)> on_line;
};

enum class ExecEnd {
  kExited,     // the command ended; exit_status is its status
  kSignalled,  // it was killed by a signal on the node; signal names it
  kTimedOut,   // it ran past the timeout and was stopped
  kOutputCap,  // it wrote more than output_cap and was stopped
  kCancelled,  // the run was interrupted (Ctrl-C)
};

struct ExecResult {
  ExecEnd end = ExecEnd::kExited;
  int exit_status = -1;
  std::string signal;  // "KILL", "TERM", ... when kSignalled
  std::string out;
  std::string err;
  std::chrono::milliseconds elapsed{0};
  // Whether the process group on the node was confirmed stopped after a timeout, cap or
  // cancel; false means it may still run there (the link was gone).
  bool remote_stopped = true;

  bool Succeeded() const { return end == ExecEnd::kExited && exit_status == 0; }
};

// "exit 3", "timed out after 5 s", ... for reports.
std::string DescribeEnd(const ExecResult& r, const ExecOptions& o);

struct UploadOptions {
  unsigned mode = 0644;
  std::string owner;  // "" = leave as created; a user name, or "user:group"
  bool sudo = false;  // write as root through `sudo -n` (the file lands root-owned)
};

class Session {
 public:
  virtual ~Session() = default;
  virtual const Target& target() const = 0;

  // Runs `command` with the user's login shell on the node. An Error means the transport
  // failed (connection lost, channel refused); a command that fails is an ExecResult.
  virtual Result<ExecResult> Exec(std::string_view command, const ExecOptions& options) = 0;

  // Replaces `remote_path` atomically: a temporary file in the same directory, written,
  // fsynced, given its mode and owner, then renamed over the old one. On any failure the old
  // file is untouched and the temporary one removed.
  virtual Status Upload(std::string_view content, const std::string& remote_path,
                        const UploadOptions& options) = 0;

  // Reads `remote_path`; more than `cap` bytes is an error.
  virtual Result<std::string> Download(const std::string& remote_path, std::size_t cap) = 0;

  // False once the connection is known to be broken; a pool reconnects or reports it.
  virtual bool Alive() const = 0;
};

class Connector {
 public:
  virtual ~Connector() = default;
  // Connects and authenticates. Errors name the node and say what to do next.
  virtual Result<std::unique_ptr<Session>> Connect(const Target& target) = 0;
};

// Sets SIGPIPE to ignored for the whole process, once. A pipe whose reader died (a local
// upload's sh on a full disk, a jump host's ssh killed) then fails the write with EPIPE, which
// every writer handles as a value, instead of ending gpuforge with rc 141 and no output. The
// connectors call it; so does main().
void IgnoreSigpipe();

}  // namespace gpuforge::remote
