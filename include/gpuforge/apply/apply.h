#pragma once

// The apply stage, after remote/: reading a node's file state and applying a file plan to it, through the narrow
// remote::Session interface only (so tests drive it with the recording fake). Every remote
// command is built here from ShellQuote'd arguments; the builders are public so tests pin them.
// Clock, host name and randomness come from the caller.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::apply {

// The file plan types this stage acts on come from plan/ (the stage before remote).
using plan::ActualFile;
using plan::DesiredFile;
using plan::NodePlan;
using plan::ActualNode;
using plan::DesiredNode;

inline constexpr std::string_view kStateDir = "/var/lib/gpuforge";
inline constexpr std::string_view kLockDir = "/var/lib/gpuforge/lock";
inline constexpr std::string_view kJournal = "/var/lib/gpuforge/journal.jsonl";
// The paths gpuforge wrote and has not removed, one per line: how plan finds files the
// inventory no longer renders.
inline constexpr std::string_view kManifest = "/var/lib/gpuforge/managed-files";
// Handlers a run owes: written before its uploads, removed once they have run, so a run that
// fails in between leaves them to the next one.
inline constexpr std::string_view kPendingHandlers = "/var/lib/gpuforge/pending-handlers";
inline constexpr int kLockHeldExit = 75;  // EX_TEMPFAIL
inline constexpr int kNoLockExit = 3;      // UnlockRunScript: there is no lock

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

// One POSIX sh script, one round trip, read-only: the node's OS, architecture, then one line per
// desired file (StateScript's format), package ("P VERSION" or "P -"), module ("M 1"/"M 0"),
// sysctl ("S VALUE" or "S ?"), service ("U ENABLED ACTIVE"), then for each manifest entry
// "G PATH" and its file state line, then "H HANDLER" per pending handler, then "T PATH" per
// leftover temporary beside a desired or managed file (IsLeftoverTemporary), then "end".
std::string NodeStateScript(const DesiredNode& d);
// Strict, like ParseState; every value the node prints is checked against its alphabet.
Result<ActualNode> ParseNodeState(std::string_view node, std::string_view output, const DesiredNode& d);
// Reads and plans; *state_sha256 (when given) gets the SHA-256 of the raw state output, which
// a saved plan records so that apply can tell whether the node changed since.
Result<NodePlan> ReadNodePlan(remote::Session& s, const DesiredNode& d, bool sudo, std::string* state_sha256 = nullptr);

// Installs the packages: refreshes gpuforge's repository lists only (all lists when the
// inventory names none), then one apt-get / dnf transaction with every pinned spec.
std::string PackagesScript(plan::OsFamily family, std::span<const std::string> repository_files,
                           std::span<const std::string> specs);
// modprobe, sysctl -w, systemctl enable/start: one command per item.
std::string ItemScript(const plan::ItemChange& item);
// Removes files the inventory no longer renders (backed up first by PrepareScript).
std::string RemoveScript(std::span<const std::string> paths);

// Takes the lock (mkdir is atomic) and writes `holder` into it; when it is held, prints the
// holder's line and exits kLockHeldExit. Any other failure to create it is exit 1 with mkdir's
// own error on stderr.
std::string LockScript(std::string_view holder);
// Releases the lock only when `holder` still holds it; otherwise exit 1 saying who does.
std::string UnlockScript(std::string_view holder);
// `gpuforge unlock --run ID`: removes the lock only when run ID holds it, printing the holder
// line (exit 0); prints another holder's line and exits kLockHeldExit; kNoLockExit when there
// is no lock.
std::string UnlockRunScript(std::string_view run_id);
// Creates the parent directories of `paths` and the backup tree, then `cp -p` each of
// `backups` to BackupPath(run_id, path), then records `handlers` as pending (when any).
std::string PrepareScript(std::string_view run_id, std::span<const std::string> paths,
                          std::span<const std::string> backups, std::span<const std::string> handlers = {});
std::string JournalScript(std::string_view json_line);

struct ApplyOptions {
  std::string run_id;
  std::string holder;  // "run RUN by USER@HOST at TIME": what a refused second apply shows
  std::string time_utc;  // for the journal
  bool sudo = false;     // commands and uploads through sudo -n
  // From a saved plan: the SHA-256 of the state the plan was made from; the node is refused
  // when what it reports under the lock differs. "" = plan afresh.
  std::string expect_state_sha256;
  std::chrono::seconds package_timeout{1800};
  // Set by Ctrl-C, SIGTERM or SIGHUP: no step starts after it, and a running step is stopped on
  // the node, but for a package transaction, which finishes (dpkg or rpm killed mid-way leaves
  // the package database half-configured). The journal, manifest and unlock still run.
  const std::atomic<bool>* cancel = nullptr;
};

// Handlers that act on the whole cluster, run once per apply (on one node) instead of on every
// node whose file changed.
bool IsClusterHandler(std::string_view handler);

// One node's outcome.
struct NodeApply {
  enum class State { kApplied, kUnchanged, kLocked, kStale, kFailed } state = State::kFailed;
  NodePlan plan;                       // as read under the lock (empty when it could not be read)
  std::vector<std::string> written;    // paths replaced or created, in order
  std::vector<std::string> removed;    // paths removed, in order
  std::vector<std::string> items;      // "package libnccl2=2.28.9-*", ... that were carried out
  std::vector<std::string> handlers;   // handlers that ran and succeeded
  std::vector<std::string> deferred;   // cluster handlers this node needs (IsClusterHandler)
  bool reboot_needed = false;          // a change that takes effect at boot was made
  std::string step;                    // where it failed: "lock", "read state", "upload PATH", "handler CMD", ...
  std::string detail;                  // the error or the command's output
  bool lock_left = false;              // the lock could not be released
};
const char* ToString(NodeApply::State s);


// lock -> read state (-> refuse if stale) -> backups -> repository files -> packages -> other
// files and removals -> modules, sysctl, services -> handlers -> manifest -> journal -> unlock. A failure stops
// the node where it happened; every file is then either old or new (uploads are atomic), the
// journal records the failure, and the lock is released.
NodeApply ApplyNode(remote::Session& s, const DesiredNode& desired, const ApplyOptions& o);

}  // namespace gpuforge::apply

namespace gpuforge::apply {

// `gpuforge rollback`: puts back the files one run changed on a node, from that run's backups.

// One file a run wrote or removed, as its journal line records it.
struct JournalFile {
  std::string path;
  std::string action;  // create, change, remove
  std::string backup;  // "" for create
  std::string sha256;  // what the run wrote; "" for remove
};

// Prints the journal lines of `run_id` and of rollbacks of it (a run id, checked by the caller
// with IsRunId).
std::string JournalReadScript(std::string_view run_id);
// The "result" of the intent record a run appends after its backups and before its first
// write; the line at its end has the run's real result.
inline constexpr std::string_view kIntentResult = "started";

struct JournalRun {
  std::vector<JournalFile> files;  // in order; none when the run changed nothing here
  std::string rolled_back_by;      // a rollback that already undid it here, "" if none
  // The run never wrote its completion record here (killed, link lost): `files` are what it
  // was about to change, from its intent record, and any of them may still be as before.
  bool from_intent = false;
};
// An error naming the node when a line is not the journal's JSON or names a foreign path.
Result<JournalRun> ParseJournal(std::string_view node, std::string_view output, std::string_view run_id);
// Copies the backup beside the path and renames it over the path (atomic), keeping its mode
// and owner.
std::string RestoreScript(std::string_view backup, std::string_view path);

struct RollbackOptions {
  ApplyOptions apply;         // run_id is the rollback's own run (journalled like an apply)
  std::string target_run;     // the run to undo
  bool force = false;         // restore even files that changed since the run
};

// lock -> read the run's journal -> check each file is still what the run left (else refuse,
// unless force) -> restore backups / remove created files -> handlers -> manifest -> journal
// -> unlock. Packages, modules, sysctl values and services are not rolled back.
NodeApply RollbackNode(remote::Session& s, const RollbackOptions& o);

}  // namespace gpuforge::apply
