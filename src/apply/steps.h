#pragma once

// The steps ApplyNode takes on one node, in the order it takes them: lock, read state, back
// up, upload, packages, removals, items, handlers, manifest, journal, unlock.

#include <span>
#include <string>
#include <vector>

#include "gpuforge/apply/apply.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::apply::internal {

// One node's apply in progress: where it runs, what is wanted, the outcome so far, and the
// steps. A step that returns false has stopped the node: it failed (Fail), or found nothing
// more to do.
struct NodeRun {
  NodeRun(remote::Session& session, const DesiredNode& wanted, const ApplyOptions& options);

  // Takes the node's lock; false when it is held by another run (kLocked) or could not be taken.
  bool TakeLock();
  // Reads the node's state under the lock and plans from it; false when that failed, when the
  // state is not the one a saved plan expects (kStale), or when there is nothing to change
  // (kUnchanged).
  bool ReadState();
  // Creates the parent directories of `touched`, copies `backups` to the run's backup tree and
  // records `owed` as pending handlers.
  bool BackUp(std::span<const std::string> touched, std::span<const std::string> backups,
              std::span<const std::string> owed);
  // The journal line written before the first change: every file the run is about to write or
  // remove, its backup and the digest of what it will write.
  std::string IntentLine() const;
  // Uploads the changed files: the repository lists (`repositories`), or every other file.
  bool UploadFiles(bool repositories);
  // One package transaction with every package the plan changes.
  bool InstallPackages();
  // Removes the files the inventory no longer renders.
  bool RemoveLeftovers();  // the plan's leftover temporaries (plan::NodePlan::leftovers)
  bool RemoveFiles(const std::vector<std::string>& removals);
  // Modules, sysctl values and services; `started` gets the services started.
  bool CarryOutItems(std::vector<std::string>* started);
  // The handlers the changes owe, but for cluster handlers (deferred) and restarts of services
  // this run started; then the pending list `owed` is cleared.
  bool RunHandlers(const std::vector<std::string>& started, const std::vector<std::string>& owed);
  // Rewrites the manifest of the files gpuforge manages on the node, when it changed.
  void WriteManifest();
  // Appends the run's journal line; when that fails after an earlier failure, the earlier one
  // is what the outcome reports.
  void WriteJournal();
  // Releases the lock; out.lock_left when it could not.
  void ReleaseLock();

  NodeApply out;
  bool read = false;  // the node's state was read under the lock

  // Marks the node failed at `step`.
  void Fail(std::string step, std::string detail);
  // Runs one step's command; false (and the node failed) unless it exited 0. With
  // `opts.cancel` set and raised, the step does not start.
  bool Run(const std::string& step, const std::string& command, const remote::ExecOptions& opts);
  // Whether the run was interrupted; when it was, marks the node failed at `step`, not started.
  bool StopsBefore(const std::string& step);

  remote::Session& s;
  const DesiredNode& desired;
  const ApplyOptions& o;
  const std::string& node;
  remote::ExecOptions eo;       // the lock, journal, manifest and unlock: these always run
  remote::ExecOptions step_eo;  // the changes: eo, stopped by an interrupt (ApplyOptions::cancel)
};

}  // namespace gpuforge::apply::internal
