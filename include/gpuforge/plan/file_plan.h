#pragma once

// The file part of `gpuforge plan` and `apply`: which files a node should hold (the per-node
// output of render::Render), what it holds now (one round trip, parsed strictly), and the
// difference, each change classed by what it takes to take effect. Pure: no network, no clock.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/render/render.h"

namespace gpuforge::plan {

// Content shared by every node and too large to copy per node (the agent binary), with its
// digest computed once.
struct Blob {
  std::string bytes;
  std::string sha256;
};

// One file gpuforge manages on a node.
struct ImpactRule;  // below

struct DesiredFile {
  std::string path;  // absolute
  std::string content;
  unsigned mode = 0644;
  std::shared_ptr<const Blob> blob = nullptr;  // when set, the content (and `content` is empty)
  std::string owner = "root:root";  // "user:group" apply gives it (the munge key: munge:munge)
  // A secret (the munge key): its bytes are pushed but never shown. Plans list its size and
  // source, --diff neither reads the node's copy nor prints the new one, a saved plan holds
  // only the digest of everything (saved_plan.h).
  bool secret = false;
  // The rule for this node where the path's row of the impact table does not fit it (set by
  // DesiredNodeState from what the node runs); null = ImpactFor(path).
  const ImpactRule* impact = nullptr;
  std::string_view Content() const { return blob ? std::string_view(blob->bytes) : std::string_view(content); }
  std::string Sha256() const;
  // The user part of `owner`, as the node state reports it.
  std::string_view OwnerUser() const { return std::string_view(owner).substr(0, owner.find(':')); }
};

// The node's own files from a render. Cluster-wide files (node "", render's _cluster/) are
// not pushed: render already writes a per-node copy of everything a node reads (the Slurm
// files on every node with a Slurm role); the rest (job script, Volcano, Prometheus) belong to
// a host the inventory does not name.
std::vector<DesiredFile> DesiredFiles(const render::Output& rendered, std::string_view node);

// What it takes for a changed file to take effect, mildest first.
enum class Impact {
  kLive,         // read on next use (the next job, the next sysctl --system)
  kNewSessions,  // read at login (pam_limits)
  kReload,       // a daemon re-reads it (scontrol reconfigure)
  kRestart,      // a daemon restart (slurmd); drain the node first
  kReboot,       // read at boot
};
const char* ToString(Impact i);

// One row of the impact table: files under `prefix` (or exactly it) take `impact`, and
// apply runs `handler` once after any of them changed ("" = nothing to run).
struct ImpactRule {
  std::string_view prefix;
  Impact impact;
  std::string_view handler;  // shell command run on the node, as root
  std::string_view note;     // for the plan: "scontrol reconfigure", "drain first, restart slurmd"
};
std::span<const ImpactRule> ImpactTable();
// Whether `command` is one of the table's handlers (a pending list read from a node is checked).
bool IsHandler(std::string_view command);
// Whether a path's last component is one of gpuforge's upload or rollback temporaries:
// ".NAME.gpuforge-SUFFIX" (remote::AtomicWriteScript's mktemp, SFTP's TemporarySibling) or
// "NAME.gpuforge-rollback.SUFFIX" (the rollback script's mktemp); SUFFIX is 6 to 16 letters and
// digits. Nothing else is ever removed as a leftover.
bool IsLeftoverTemporary(std::string_view path);
// The first matching row; the last row (prefix "") matches everything: live, no handler.
const ImpactRule& ImpactFor(std::string_view path);
// The rule for a file slurmd alone reads (gres.conf, cgroup.conf, job_container.conf) on a node
// that runs no slurmd: in configless mode the controller holds them for slurmctld to serve
// (render/slurm.cc), so a change there is `scontrol reconfigure`, never a restart of a slurmd
// that is not installed. Null for any other path.
const ImpactRule* ImpactWithoutSlurmd(std::string_view path);
// slurm.conf on the controller of a cluster with software.scheduler.accounting: a restart of
// slurmctld, not `scontrol reconfigure`, which leaves the accounting plugin it started with
// (file_plan.cc). Null for any other path.
const ImpactRule* ImpactOnAccountingController(std::string_view path);

// What a node holds at a path.
struct ActualFile {
  enum class Kind { kAbsent, kRegular, kOther } kind = Kind::kAbsent;  // kOther: link, dir, ...
  std::string sha256;  // lowercase hex
  unsigned mode = 0;
  std::string owner;
  std::uint64_t size = 0;
  bool operator==(const ActualFile&) const = default;
};

enum class Action { kNone, kCreate, kChange, kRemove };
const char* ToString(Action a);

struct FileChange {
  std::string path;
  Action action = Action::kNone;
  bool content = false, mode = false, owner = false;  // what differs, for kChange
  unsigned mode_from = 0, mode_to = 0644;
  std::string owner_from;
  std::string owner_to = "root";  // the user apply gives it
  bool secret = false;            // DesiredFile::secret: content never shown
  Impact impact = Impact::kLive;
  std::string handler;
  std::string note;
  bool operator==(const FileChange&) const = default;
};

// A package, kernel module, sysctl value or service: what the node has against what it should.
struct ItemChange {
  enum class Kind { kPackage, kModule, kSysctl, kService } kind = Kind::kPackage;
  std::string id;  // package name, module name, sysctl key, unit name
  Action action = Action::kNone;
  std::string from;  // as the node has it: a version, a value, "disabled, inactive"; "" = absent
  std::string to;    // as it should be, for people: "2.28.9-*", "0", "enabled, active"
  std::string want;  // as the apply step needs it: "libnccl2=2.28.9-*", "0", "enable start"
  Impact impact = Impact::kLive;
  std::string note;  // "reboot to load the new driver", ...
  bool operator==(const ItemChange&) const = default;
};
const char* ToString(ItemChange::Kind k);

struct NodePlan {
  std::string node;
  // Every desired file in path order (kNone included), then kRemove entries: files an earlier
  // apply wrote that the inventory no longer renders.
  std::vector<FileChange> files;
  std::vector<ItemChange> items;  // packages, modules, sysctl, services, in apply order
  std::vector<std::string> managed;  // the manifest the node had (paths earlier applies wrote)
  // Handlers an earlier run changed files for but did not get to run (it failed after its
  // uploads): they run this time even if no file changes.
  std::vector<std::string> pending;
  // Temporaries a controller killed between upload and rename (or during a rollback) left next
  // to managed files (".NAME.gpuforge-SUFFIX", "NAME.gpuforge-rollback.SUFFIX"): apply removes them.
  std::vector<std::string> leftovers;
  std::size_t Count(Action a) const;  // files and items
  bool HasChanges() const {
    return Count(Action::kCreate) + Count(Action::kChange) + Count(Action::kRemove) > 0 || !pending.empty() ||
           !leftovers.empty();
  }
  Impact WorstImpact() const;  // of the changes; kLive when there are none
  // Handlers to run, once each, in impact-table order, for the files that change and the
  // pending ones.
  std::vector<std::string> Handlers() const;
};

// Compares. `actual` holds one entry per desired path (same order). A path that is not a
// regular file (a symbolic link, a directory) is an error naming node and path: gpuforge
// does not replace what it did not write.
Result<NodePlan> PlanNode(std::string_view node, std::span<const DesiredFile> desired,
                          std::span<const ActualFile> actual);

// Nodes with identical plans, folded: {"gpu[01-32]", plans[i]} with the text of one.
struct FoldedPlan {
  std::string nodes;
  std::size_t count = 0;
  const NodePlan* plan = nullptr;  // the first node's; the others are equal but for the name
};
std::vector<FoldedPlan> FoldPlans(std::span<const NodePlan> plans);

}  // namespace gpuforge::plan
