#include "gpuforge/plan/controller_files.h"

#include <fmt/format.h>

#include "gpuforge/base/read_file.h"
#include "gpuforge/base/sha256.h"

namespace gpuforge::plan {

Result<std::optional<MungeKeySource>> FindMungeKeySource(const model::Cluster& c, std::string_view env) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kSlurm) return std::optional<MungeKeySource>();
  if (!env.empty()) return std::optional<MungeKeySource>(MungeKeySource{std::string(env), std::string(kMungeKeyEnv)});
  if (!s.munge_key.empty()) {
    const SourcePos& p = s.munge_key_where;
    return std::optional<MungeKeySource>(
        MungeKeySource{s.munge_key, fmt::format("{}:{}:{}: software.scheduler.munge_key", p.file, p.line, p.col)});
  }
  return Error{fmt::format(
      "{}: a Slurm cluster (auth/munge) needs the same munge key on every node, and nothing names one: set "
      "software.scheduler.munge_key to a key file (relative to the inventory), or {}=PATH in the environment. "
      "Make a key with `mungekey --create --keyfile FILE` (or `dd if=/dev/urandom bs=1024 count=1 of=FILE`); "
      "gpuforge pushes it to {} (0400 munge:munge) and never prints it",
      c.source_file, kMungeKeyEnv, kMungeKeyPath)};
}

Result<std::shared_ptr<const Blob>> CheckMungeKey(const MungeKeySource& src, std::string bytes) {
  if (bytes.size() < kMungeKeyMinBytes) {
    return Error{fmt::format("{}: munge key {} holds {} byte{}; munged refuses a key shorter than {} bytes", src.named_by,
                             src.path, bytes.size(), bytes.size() == 1 ? "" : "s", kMungeKeyMinBytes)};
  }
  if (bytes.size() > kMungeKeyMaxBytes) {
    return Error{fmt::format("{}: munge key {} is larger than {}; a munge key is 1 KiB (mungekey writes at most "
                             "1024 bytes): is this the right file?",
                             src.named_by, src.path, base::DescribeBytes(kMungeKeyMaxBytes))};
  }
  auto blob = std::make_shared<Blob>();
  blob->sha256 = base::Sha256Hex(bytes);
  blob->bytes = std::move(bytes);
  return std::shared_ptr<const Blob>(std::move(blob));
}

bool IsExampleMungeKey(const Blob& key) { return key.sha256 == kExampleMungeKeySha256; }

bool IsSecretPath(std::string_view path) { return path == kMungeKeyPath; }

}  // namespace gpuforge::plan
