// The files apply pushes whose bytes come from this machine, not from render
// (plan/controller_files.h): the munge key, slurmdbd's database password, and for the Slurm
// health check the inventory and the GPU model table. Each is read once, through the bounded
// reader; the secrets are never printed.

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <tuple>

#include "cli/commands.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/base/sha256.h"
#include "gpuforge/plan/controller_files.h"
#include "gpuforge/validate/thresholds.h"

namespace gpuforge::cli {

std::optional<plan::ControllerFiles> LoadControllerFiles(Context& ctx, const model::Cluster& cluster,
                                                         const std::string& inventory) {
  plan::ControllerFiles files;
  const char* env = std::getenv(std::string(plan::kMungeKeyEnv).c_str());
  Result<std::optional<plan::MungeKeySource>> source = plan::FindMungeKeySource(cluster, env == nullptr ? "" : env);
  if (!source.ok()) {
    ctx.Error(source.error().message);
    return std::nullopt;
  }
  if (*source) {
    const plan::MungeKeySource& src = **source;
    // The bounded reader: a regular file only, never more than the cap + 1 byte.
    Result<std::string> bytes = base::ReadInputFile({src.path, "munge key", plan::kMungeKeyMaxBytes, true});
    if (!bytes.ok()) {
      ctx.Error(fmt::format("{}: {}", src.named_by, bytes.error().message));
      return std::nullopt;
    }
    Result<std::shared_ptr<const plan::Blob>> key = plan::CheckMungeKey(src, std::move(*bytes));
    if (!key.ok()) {
      ctx.Error(key.error().message);
      return std::nullopt;
    }
    if (plan::IsExampleMungeKey(**key) && ctx.verbosity >= 0) {
      ctx.Err(fmt::format("gpuforge: {} {}: {} is gpuforge's public example munge key; anyone can forge this "
                          "cluster's credentials with it. Make your own (mungekey --create --keyfile FILE)\n",
                          ctx.err_style.Yellow("warning:"), src.named_by, src.path));
    }
    files.munge_key = std::move(*key);
  }
  if (const auto& acct = cluster.software.scheduler.accounting) {
    // slurmdbd's database password: the bounded reader, then the checks of what
    // slurmdbd.conf can carry; no message ever quotes it.
    Result<std::string> bytes = base::ReadInputFile({acct->storage_pass_file, "database password file",
                                                     plan::kSlurmdbdPassMaxBytes, true});
    if (!bytes.ok()) {
      const SourcePos& at = acct->storage_pass_where;
      ctx.Error(fmt::format("{}:{}:{}: software.scheduler.accounting.storage_pass_file: {}", at.file, at.line, at.col,
                            bytes.error().message));
      return std::nullopt;
    }
    if (plan::IsExampleSlurmdbdPass(*bytes) && ctx.verbosity >= 0) {
      const SourcePos& at = acct->storage_pass_where;
      ctx.Err(fmt::format("gpuforge: {} {}:{}:{}: software.scheduler.accounting.storage_pass_file: {} is gpuforge's "
                          "public example database password; anyone who reaches the database can use it. Name a "
                          "file of your own\n",
                          ctx.err_style.Yellow("warning:"), at.file, at.line, at.col, acct->storage_pass_file));
    }
    Result<std::shared_ptr<const plan::Blob>> pass = plan::SlurmdbdPassFile(*acct, std::move(*bytes));
    if (!pass.ok()) {
      ctx.Error(pass.error().message);
      return std::nullopt;
    }
    files.slurmdbd_pass = std::move(*pass);
  }
  if (cluster.software.scheduler.kind == model::SchedulerKind::kSlurm && cluster.software.scheduler.health_check) {
    // The health check program runs `validate --local` on the node: the inventory and the
    // pass marks go with it, the very bytes this run read.
    for (auto [path, what, into] : {std::tuple{inventory, "inventory", &files.inventory},
                                    std::tuple{validate::DefaultModelTablePath(), "GPU model table", &files.model_table}}) {
      Result<std::string> bytes = base::ReadInputFile({path, what, 64u << 20, true});
      if (!bytes.ok()) {
        ctx.Error(bytes.error().message);
        return std::nullopt;
      }
      auto blob = std::make_shared<plan::Blob>();
      blob->sha256 = base::Sha256Hex(*bytes);
      blob->bytes = std::move(*bytes);
      *into = std::move(blob);
    }
  }
  return files;
}

}  // namespace gpuforge::cli
