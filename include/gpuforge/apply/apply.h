#pragma once

// The apply stage, after remote/: reading a node's file state and applying a file plan to it, through the narrow
// remote::Session interface only (so tests drive it with the recording fake). Every remote
// command is built here from ShellQuote'd arguments; the builders are public so tests pin them.
// Clock, host name and randomness come from the caller.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::apply {

// The file plan types this stage acts on come from plan/ (the stage before remote).
using plan::ActualFile;
using plan::DesiredFile;
using plan::NodePlan;

inline constexpr std::string_view kStateDir = "/var/lib/gpuforge";
inline constexpr std::string_view kLockDir = "/var/lib/gpuforge/lock";
inline constexpr std::string_view kJournal = "/var/lib/gpuforge/journal.jsonl";
inline constexpr int kLockHeldExit = 75;  // EX_TEMPFAIL

// "20261130T064252Z-1a2b3c4d": UTC time of the run and 32 random bits.
std::string MakeRunId(std::chrono::system_clock::time_point now, std::uint32_t random);
// Whether `id` has MakeRunId's shape (so it is safe in a path).
bool IsRunId(std::string_view id);
// "/var/lib/gpuforge/backups/RUN/etc/nccl.conf".
std::string BackupPath(std::string_view run_id, std::string_view path);

// One POSIX sh script printing one line per path, in order: "N" (absent), "O" (a link or not a
// regular file) or "F MODE OWNER SIZE SHA256".
std::string StateScript(std::span<const std::string> paths);
// Strict: exactly `count` lines of those shapes, else an error naming node and command.
Result<std::vector<ActualFile>> ParseState(std::string_view node, std::string_view output, std::size_t count);

// Takes the lock (mkdir is atomic) and writes `holder` into it; when it is held, prints the
// holder's line and exits kLockHeldExit.
std::string LockScript(std::string_view holder);
std::string UnlockScript();
// Creates the parent directories of `paths` and the backup tree, then `cp -p` each of
// `backups` to BackupPath(run_id, path).
std::string PrepareScript(std::string_view run_id, std::span<const std::string> paths,
                          std::span<const std::string> backups);
std::string JournalScript(std::string_view json_line);

struct ApplyOptions {
  std::string run_id;
  std::string holder;  // "run RUN by USER@HOST at TIME": what a refused second apply shows
  std::string time_utc;  // for the journal
  bool sudo = false;     // commands and uploads through sudo -n
};

// One node's outcome.
struct NodeApply {
  enum class State { kApplied, kUnchanged, kLocked, kFailed } state = State::kFailed;
  NodePlan plan;                       // as read under the lock (empty when it could not be read)
  std::vector<std::string> written;    // paths replaced or created, in order
  std::vector<std::string> handlers;   // handlers that ran and succeeded
  std::string step;                    // where it failed: "lock", "read state", "upload PATH", "handler CMD", ...
  std::string detail;                  // the error or the command's output
  bool lock_left = false;              // the lock could not be released
};
const char* ToString(NodeApply::State s);

// Reads the node's state of `desired` and plans it.
Result<NodePlan> ReadPlan(remote::Session& s, std::span<const DesiredFile> desired, bool sudo);

// lock -> read state -> backups -> uploads -> handlers -> journal -> unlock. A failure stops
// the node where it happened; every file is then either old or new (uploads are atomic), the
// journal records the failure, and the lock is released.
NodeApply ApplyNode(remote::Session& s, std::span<const DesiredFile> desired, const ApplyOptions& o);

}  // namespace gpuforge::apply
