#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/app.h"
#include "gpuforge/facts/fabric.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/remote/target.h"
#include "gpuforge/render/measured.h"
#include "gpuforge/render/render.h"

namespace gpuforge::cli {

// One function per subcommand, each in cmd_<name>.cc; the table in app.cc lists them.
Command LintCommand();
Command EstimateCommand();
Command InventoryCommand();
Command HostlistCommand();
Command PlanCommand();
Command RenderCommand();
Command RunCommand();
Command FactsCommand();
Command CablingCommand();
Command InitCommand();
Command ApplyCommand();
Command RollbackCommand();
Command UnlockCommand();
Command AgentCommand();
Command ValidateCommand();
Command ThresholdsCommand();
Command VersionCommand();
Command CompletionCommand();
// `version` (cmd_version.cc), also printed by `gpuforge --version`.
std::string VersionText();
nlohmann::ordered_json VersionJson();

// Shared by `plan`, `apply` and `rollback` (local_inputs.cc): each target's desired state, files
// rendered with the inventory's file name as the header label so that the content does not
// depend on the directory gpuforge runs from. Prints the error and returns nullopt when
// rendering fails.
std::optional<std::map<std::string, plan::DesiredNode>> DesiredNodesFor(Context& ctx, const model::Cluster& cluster,
                                                                        std::span<const remote::Target> targets,
                                                                        const std::string& inventory,
                                                                        const plan::Parts& parts,
                                                                        const std::string& facts_dir = "");
// The files DesiredNodesFor pushes from this machine (plan/controller_files.h): the munge key
// (GPUFORGE_MUNGE_KEY, else software.scheduler.munge_key; a Slurm cluster without one is
// refused), and with the health check the inventory and the GPU model table. Prints the error
// (and a warning for the public example key) and returns nullopt when one cannot be used.
std::optional<plan::ControllerFiles> LoadControllerFiles(Context& ctx, const model::Cluster& cluster,
                                                         const std::string& inventory);
// --facts DIR (plan, apply, render): what `facts --save DIR` kept of each node: its measured PCI
// tree, from which alone the NCCL topology file is rendered (#13), and its GPUs' minors, from
// which gres.conf's File= lines are (#14). Prints the error and returns nullopt when a saved
// file is damaged; notes the nodes that lack what the inventory asks to render.
std::optional<render::Measured> LoadMeasured(Context& ctx, const model::Cluster& cluster,
                                                   const std::string& facts_dir);
inline constexpr const char* kFactsDirHelp =
    "Facts saved by `gpuforge facts --save DIR`: the NCCL topology file and gres.conf's device files are rendered from "
    "what each node measured";
// The InfiniBand subnet's view (cabling, init): run on a node, or read from saved output.
struct SubnetFlags {
  std::string subnet_from;    // --subnet-from NODE
  std::string iblinkinfo;     // --iblinkinfo FILE
  std::string ibnetdiscover;  // --ibnetdiscover FILE
};
// Adds --subnet-from (with `from_help`), --iblinkinfo and --ibnetdiscover.
void AddSubnetOptions(CLI::App& app, SubnetFlags* flags, const std::string& from_help);
// The saved views the flags name, iblinkinfo first, each parsed (facts/fabric.h). Prints the
// error naming the flag and FILE:LINE and returns nullopt when one cannot be read or parsed.
std::optional<std::vector<facts::IbSubnet>> ReadSubnetFiles(Context& ctx, const SubnetFlags& flags);
// The agent binary to push (Part::kAgent): gpuforge-agent beside this binary, else itself.
Result<plan::AgentBinary> LoadAgent();
// --only: "" is everything; prints the error and returns nullopt for an unknown part.
std::optional<plan::Parts> PartsFrom(Context& ctx, const std::string& only);
std::optional<std::string> FileSha256(Context& ctx, const std::string& path);
// The inventory as generated files' headers name it: its file name, so that the same inventory
// renders the same bytes from any working directory (plan compares bytes); "<stdin>" for "-".
std::string InventoryLabel(const std::string& path);
// render's notes (what rendered files assume, placeholders to fill) on stderr, unless -q.
void PrintRenderNotes(Context& ctx, const render::Output& out);
std::string NowUtc();
// "user@host" for lock holders: $USER, else the effective user's name.
std::string LocalUserAtHost();

}  // namespace gpuforge::cli
