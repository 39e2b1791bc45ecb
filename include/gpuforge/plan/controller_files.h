#pragma once

// Files apply pushes whose bytes come from this machine rather than from render: Slurm's munge
// key (a secret: an operator's file, never printed), and for the Slurm health check the
// inventory itself and validate's GPU model table, which `validate --local` reads on the node.
// The CLI reads them once (bounded, base/read_file.h); the checks here are pure.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/plan/file_plan.h"

namespace gpuforge::plan {

// Where munged reads its key (munge_defs.h MUNGE_KEYFILE_PATH), and how: munged refuses a key
// its user does not own or that others can read (src/munged/conf.c, _conf_open_keyfile).
inline constexpr std::string_view kMungeKeyPath = "/etc/munge/munge.key";
inline constexpr unsigned kMungeKeyMode = 0400;
inline constexpr std::string_view kMungeKeyOwner = "munge:munge";
// The override an operator gives when the key lives outside the inventory's repository (a
// vault mount in CI): it wins over software.scheduler.munge_key.
inline constexpr std::string_view kMungeKeyEnv = "GPUFORGE_MUNGE_KEY";
// munged refuses a key shorter than MUNGE_KEY_LEN_MIN_BYTES (32, src/libcommon/munge_defs.h;
// "Keyfile must be at least 32 bytes", src/munged/conf.c create_subkeys). It reads any length
// above; mungekey writes at most MUNGE_KEY_LEN_MAX_BYTES (1024), so a file over 1 MiB is
// something else named by mistake.
inline constexpr std::size_t kMungeKeyMinBytes = 32;
inline constexpr std::size_t kMungeKeyMaxBytes = 1u << 20;
// SHA-256 of inventories/examples/munge.key.example, the key the examples name: public, so a
// cluster that runs with it lets anyone forge credentials. plan and apply warn.
inline constexpr std::string_view kExampleMungeKeySha256 =
    "f36797741b484354c16ef7976dc510ea0cb0ca6052861e4590aee9ef15ce6769";

// SHA-256 of inventories/examples/slurmdbd.pass.example, the database password the example
// names: public, so plan and apply warn, as for the example munge key.
inline constexpr std::string_view kExampleSlurmdbdPassSha256 =
    "c72b1d8f40a5030bd31488f1e643ec8211dc952ad5f7f70f4e6d12f8d38da91a";
// Whether the bytes of a storage_pass_file are the example's.
bool IsExampleSlurmdbdPass(std::string_view file_bytes);

// What the health check program is and reads on a node (model/slurm_roles.h, which render's
// healthcheck template names too).
inline constexpr std::string_view kNodeInventoryPath = model::kHealthCheckInventoryPath;
inline constexpr std::string_view kNodeModelTablePath = model::kHealthCheckModelTablePath;
inline constexpr std::string_view kHealthCheckPath = model::kHealthCheckProgramPath;

// Which file holds the munge key, and who named it (for messages).
struct MungeKeySource {
  std::string path;
  std::string named_by;  // "GPUFORGE_MUNGE_KEY" or "FILE:LINE:COL: software.scheduler.munge_key"
};

// The key source for `c`: `env` (the value of GPUFORGE_MUNGE_KEY, "" when unset) first, then
// the inventory's software.scheduler.munge_key. nullopt when `c` runs no munge (not Slurm);
// an error saying how to name one when it does and neither is set.
Result<std::optional<MungeKeySource>> FindMungeKeySource(const model::Cluster& c, std::string_view env);

// The key's bytes as read from `src` (at most kMungeKeyMaxBytes + 1 of them), checked for the
// sizes munged takes; the error names the file and who named it.
Result<std::shared_ptr<const Blob>> CheckMungeKey(const MungeKeySource& src, std::string bytes);

bool IsExampleMungeKey(const Blob& key);

// Whether gpuforge ever writes a secret at `path` (the munge key, slurmdbd's password file): a file there is never read
// back for a diff, also when it is to be removed.
bool IsSecretPath(std::string_view path);

// The accounting database password (software.scheduler.accounting.storage_pass_file): the
// file's first line, which must be a value slurmdbd.conf can hold unquoted (no white space,
// '#', '"', '\\' or control characters). Returns the bytes of model::kSlurmdbdPassPath,
// "StoragePass=...\n"; the error names the file and the inventory line that named it and never
// quotes the password.
inline constexpr std::size_t kSlurmdbdPassMaxBytes = 4096;
Result<std::shared_ptr<const Blob>> SlurmdbdPassFile(const model::Scheduler::Accounting& a, std::string bytes);

// The bytes the CLI read for DesiredNodeState; a null member is a file not pushed.
struct ControllerFiles {
  std::shared_ptr<const Blob> munge_key;    // to every node that runs munge
  std::shared_ptr<const Blob> slurmdbd_pass;  // to the slurmdbd node (SlurmdbdPassFile)
  std::shared_ptr<const Blob> inventory;    // to every slurmd node, with health_check set
  std::shared_ptr<const Blob> model_table;  // likewise
};

}  // namespace gpuforge::plan
