#pragma once

// The whole desired state of a node (files from render, plus packages pinned to the
// inventory's versions, kernel modules, sysctl values and services), what the node reports it
// has, and the plan between them. Pure: no network, no clock. The remote side (the state
// script and its parser) is in apply/.

#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/plan/controller_files.h"
#include "gpuforge/plan/file_plan.h"

namespace gpuforge::plan {

enum class OsFamily { kDebian, kRhel };
const char* ToString(OsFamily f);
// From software.os.distro: rhel, rocky, almalinux are kRhel; anything else (or none) kDebian.
OsFamily FamilyOf(const model::Software& sw);

// What `plan` and `apply` manage; --only picks a subset.
enum class Part { kFiles, kPackages, kModules, kSysctl, kServices, kAgent };
using Parts = std::set<Part>;
const char* ToString(Part p);
Parts AllParts();
// "files,packages" -> {kFiles, kPackages}; an unknown name is an error naming it.
Result<Parts> ParseParts(std::string_view list);

struct DesiredPackage {
  std::string name;
  std::string version;  // the inventory's pin, "" = any version
  Impact impact = Impact::kLive;
  std::string note;     // "reboot to load the new driver"
  std::string reason;   // the inventory key it comes from
  bool operator==(const DesiredPackage&) const = default;
};

struct DesiredSysctl {
  std::string key;    // kernel.numa_balancing
  std::string value;  // "0"
  bool operator==(const DesiredSysctl&) const = default;
};

// Where apply puts this binary on a node, for `validate` to run there (`gpuforge agent`).
inline constexpr std::string_view kAgentPath = model::kNodeAgentPath;

// The binary pushed as the agent, read once on the controller, and the architecture it runs on
// (uname -m).
struct AgentBinary {
  std::shared_ptr<const Blob> blob;
  std::string arch;
};

struct DesiredNode {
  OsFamily family = OsFamily::kDebian;
  std::vector<DesiredFile> files;            // path order
  std::vector<DesiredPackage> packages;      // install order
  std::vector<std::string> modules;          // nvidia-peermem
  std::vector<DesiredSysctl> sysctls;
  std::vector<std::string> services;         // units that must be enabled and running
  std::vector<std::string> repository_files; // the package lists among `files` (apt-get update reads only these)
  bool manage_removals = true;               // files are managed, so stale ones are removed
  std::string agent_arch;                    // set when `files` holds the agent: the build's arch
};

// Packages for a node, by family, with NVIDIA's CUDA repository names (docs/plan-apply.md).
std::vector<DesiredPackage> DesiredPackages(const model::Cluster& c, const model::Node& n, OsFamily family);

// The node's full desired state; `files` is DesiredFiles(render output, node). With Part::kAgent
// and an agent, the agent binary is one more file (kAgentPath, mode 0755). With Part::kFiles,
// `local`'s files join them: the munge key (secret, 0400 munge:munge) on every node that runs
// munge, the inventory and the GPU model table on slurmd nodes when the health check is asked
// for (controller_files.h).
DesiredNode DesiredNodeState(const model::Cluster& c, const model::Node& n, std::vector<DesiredFile> files,
                             const Parts& parts, const AgentBinary* agent = nullptr,
                             const ControllerFiles* local = nullptr);

// What the node reported (apply::ParseNodeState), in the order of the DesiredNode it answers.
struct ServiceState {
  std::string enabled;  // systemctl is-enabled: enabled, disabled, static, masked, not-found
  std::string active;   // systemctl is-active: active, inactive, failed, activating, unknown
  bool operator==(const ServiceState&) const = default;
};
struct ActualNode {
  std::string os_id;      // os-release ID
  std::string os_like;    // os-release ID_LIKE
  std::string arch;       // uname -m
  std::vector<ActualFile> files;
  std::vector<std::string> packages;              // installed version, "" = not installed
  std::vector<bool> modules;                      // loaded
  std::vector<std::optional<std::string>> sysctls;  // nullopt = no such key on this kernel
  std::vector<ServiceState> services;
  std::vector<std::string> managed;               // paths earlier applies wrote (the manifest)
  std::vector<ActualFile> managed_files;          // their state now, same order
  std::vector<std::string> pending;               // handlers a failed run left to run
  std::vector<std::string> leftovers;             // temporaries an interrupted upload left (NodePlan::leftovers)
  bool operator==(const ActualNode&) const = default;
};

// Whether an installed version satisfies a pin: "2.28.9" is met by "2.28.9", "2.28.9-1+cuda13.0"
// and "1:2.28.9-1"; not by "2.28.90".
bool VersionMatches(std::string_view installed, std::string_view pin);
// The install argument: apt "libnccl2=2.28.9-*" (or the exact pin when it has a Debian
// revision), dnf "libnccl-2.28.9"; the bare name when there is no pin.
std::string InstallSpec(OsFamily f, const DesiredPackage& p);

// The family the node reports: debian or ubuntu (or ID_LIKE debian) is kDebian; rhel, rocky,
// almalinux, centos, fedora (or ID_LIKE rhel/fedora) kRhel; nullopt for anything else.
std::optional<OsFamily> ReportedFamily(const ActualNode& a);

// Compares. Errors (naming the node): the node's OS family differs from the inventory's
// while packages are managed; a desired file is a link or a directory on the node. The agent
// is left alone (no change, with a note) on a node of another architecture.
Result<NodePlan> PlanNodeState(std::string_view node, const DesiredNode& d, const ActualNode& a);

// The manifest an apply leaves: on success the desired paths; after a failure the old
// manifest less what was removed plus what was written, so a later plan still finds them.
std::vector<std::string> NextManifest(const DesiredNode& d, std::span<const std::string> old_manifest,
                                      std::span<const std::string> written, std::span<const std::string> removed,
                                      bool succeeded);

}  // namespace gpuforge::plan
