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

bool IsExampleSlurmdbdPass(std::string_view file_bytes) { return base::Sha256Hex(file_bytes) == kExampleSlurmdbdPassSha256; }

bool IsSecretPath(std::string_view path) { return path == kMungeKeyPath || path == model::kSlurmdbdPassPath; }

Result<std::shared_ptr<const Blob>> SlurmdbdPassFile(const model::Scheduler::Accounting& a, std::string bytes) {
  const SourcePos& at = a.storage_pass_where;
  const std::string named = fmt::format("{}:{}:{}: software.scheduler.accounting.storage_pass_file", at.file, at.line, at.col);
  if (bytes.size() > kSlurmdbdPassMaxBytes) {
    return Error{fmt::format("{}: {} is larger than {}; it should hold the database password on one line", named,
                             a.storage_pass_file, base::DescribeBytes(kSlurmdbdPassMaxBytes))};
  }
  // One line: a trailing newline (an editor's, or `echo`'s) is not part of the password.
  std::string pass = bytes.substr(0, bytes.find('\n'));
  if (!pass.empty() && pass.back() == '\r') pass.pop_back();
  if (bytes.find('\n') != std::string::npos && bytes.find_first_not_of("\r\n", bytes.find('\n')) != std::string::npos) {
    return Error{fmt::format("{}: {} holds more than one line; put only the database password in it", named, a.storage_pass_file)};
  }
  if (pass.empty()) return Error{fmt::format("{}: {} is empty; it should hold the database password", named, a.storage_pass_file)};
  // slurmdbd.conf(5) values end at white space and '#' starts a comment (Slurm's
  // s_p_parse_line); a quote or backslash would be read as quoting.
  for (char ch : pass) {
    const auto u = static_cast<unsigned char>(ch);
    if (u <= 0x20 || u == 0x7f || ch == '#' || ch == '"' || ch == '\\') {
      return Error{fmt::format("{}: the password in {} holds a space, '#', '\"', '\\' or a control character, which "
                               "slurmdbd.conf cannot carry (it would end the value or start a comment); choose "
                               "another (e.g. `openssl rand -base64 24 | tr -d '/+='`)",
                               named, a.storage_pass_file)};
    }
  }
  auto blob = std::make_shared<Blob>();
  blob->bytes = "StoragePass=" + pass + "\n";
  blob->sha256 = base::Sha256Hex(blob->bytes);
  return std::shared_ptr<const Blob>(std::move(blob));
}

}  // namespace gpuforge::plan
