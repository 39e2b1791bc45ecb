// The POSIX sh scripts apply sends besides the state readers (node_state.cc): the lock, the
// backups, the packages and other items, removals and the journal, and the run ids and backup
// paths they name.

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "apply/internal.h"
#include "gpuforge/apply/apply.h"
#include "remote/command.h"

namespace gpuforge::apply {
using namespace internal;  // text helpers shared with rollback.cc
using remote::ShellQuote;

std::string MakeRunId(std::chrono::system_clock::time_point now, std::uint32_t random) {
  return fmt::format("{:%Y%m%dT%H%M%SZ}-{:08x}", std::chrono::floor<std::chrono::seconds>(now), random);
}

bool IsRunId(std::string_view id) {
  // 20261130T064252Z-1a2b3c4d
  if (id.size() != 25 || id[8] != 'T' || id[15] != 'Z' || id[16] != '-') return false;
  return AllOf(id.substr(0, 8), kDigits) && AllOf(id.substr(9, 6), kDigits) && AllOf(id.substr(17), kHex);
}

std::string BackupPath(std::string_view run_id, std::string_view path) {
  return fmt::format("{}/backups/{}{}", kStateDir, run_id, path);
}

std::string LockScript(std::string_view holder) {
  const std::string dir = ShellQuote(kStateDir), lock = ShellQuote(kLockDir),
                    file = ShellQuote(std::string(kLockDir) + "/holder");
  // Only a lock that is there is "held": any other failed mkdir (EACCES, ENOSPC, a read-only
  // file system) is that error, not a holder with an empty name.
  return fmt::format(
      "umask 022\n"
      "mkdir -p {0} || exit 1\n"
      "if err=$(mkdir {1} 2>&1); then\n"
      "  printf '%s\\n' {3} > {2} || {{ rm -rf {1}; exit 1; }}\n"
      "  exit 0\n"
      "fi\n"
      "if [ -d {1} ]; then cat {2} 2>/dev/null; exit {4}; fi\n"
      "printf '%s\\n' \"$err\" >&2\n"
      "exit 1\n",
      dir, lock, file, ShellQuote(holder), kLockHeldExit);
}

std::string UnlockScript(std::string_view holder) {
  // Only this run's lock: a run that outlived its lock (someone removed it) must not delete the
  // next run's.
  const std::string lock = ShellQuote(kLockDir), file = ShellQuote(std::string(kLockDir) + "/holder");
  return fmt::format(
      "if [ \"$(cat {1} 2>/dev/null)\" = {2} ]; then rm -f {1} && rmdir {0}; exit; fi\n"
      "if [ -d {0} ]; then printf 'the lock is held by another run now: %s\\n' \"$(cat {1} 2>/dev/null)\" >&2; "
      "else echo 'the lock was already gone' >&2; fi\n"
      "exit 1\n",
      lock, file, ShellQuote(holder));
}

std::string UnlockRunScript(std::string_view run_id) {
  const std::string lock = ShellQuote(kLockDir), file = ShellQuote(std::string(kLockDir) + "/holder");
  return fmt::format(
      "[ -d {0} ] || exit {3}\n"
      "h=$(cat {1} 2>/dev/null)\n"
      "case \"$h\" in {2}*|{5}*) rm -f {1} && rmdir {0} || exit 1; printf '%s\\n' \"$h\"; exit 0;; esac\n"
      "printf '%s\\n' \"$h\"\n"
      "exit {4}\n",
      lock, file, ShellQuote(fmt::format("run {} ", run_id)), kNoLockExit, kLockHeldExit,
      ShellQuote(fmt::format("rollback {} ", run_id)));
}

std::string PrepareScript(std::string_view run_id, std::span<const std::string> paths,
                          std::span<const std::string> backups, std::span<const std::string> handlers) {
  std::string s = "set -e\numask 022\n";
  std::set<std::string> dirs;
  for (const std::string& p : paths) dirs.insert(Parent(p));
  for (const std::string& d : dirs) s += fmt::format("mkdir -p -- {}\n", ShellQuote(d));
  if (!backups.empty()) {
    const std::string root = fmt::format("{}/backups", kStateDir);
    s += fmt::format("mkdir -p -- {0}\nchmod 0700 {0}\n", ShellQuote(root));
    for (const std::string& p : backups) {
      const std::string to = BackupPath(run_id, p);
      s += fmt::format("mkdir -p -- {}\ncp -p -- {} {}\n", ShellQuote(Parent(to)), ShellQuote(p), ShellQuote(to));
    }
  }
  if (!handlers.empty()) {
    std::string lines;
    for (const std::string& h : handlers) lines += h + "\n";
    s += fmt::format("mkdir -p -- {}\nprintf '%s' {} > {}\n", ShellQuote(kStateDir), ShellQuote(lines),
                     ShellQuote(kPendingHandlers));
  }
  return s;
}

std::string JournalScript(std::string_view json_line) {
  // Root only (#28 item 14): each line holds the SHA-256 of every file the run wrote, the munge
  // key's and slurmdbd's password file's too, and an unsalted digest of a password is crackable
  // offline. Rollback needs the digests (a file changed since the run is not clobbered), and
  // whoever can read a 0600 root file can read the secrets themselves. The chmod also closes a
  // journal an older gpuforge left 0644.
  return fmt::format("umask 077\nmkdir -p {0} && printf '%s\\n' {1} >> {2} && chmod 0600 {2}\n", ShellQuote(kStateDir),
                     ShellQuote(json_line), ShellQuote(kJournal));
}

std::string PackagesScript(plan::OsFamily family, std::span<const std::string> repository_files,
                           std::span<const std::string> specs) {
  std::string list;
  for (const std::string& spec : specs) list += " " + ShellQuote(spec);
  if (family == plan::OsFamily::kRhel) {
    return "set -e\ndnf -y -q --setopt=install_weak_deps=False install" + list + "\n";
  }
  std::string s = "set -e\nDEBIAN_FRONTEND=noninteractive; export DEBIAN_FRONTEND\n";
  if (repository_files.empty()) {
    s += "apt-get -q update\n";
  } else {
    // Only gpuforge's lists: the node's other repositories are neither contacted nor cleaned.
    for (const std::string& f : repository_files) {
      s += fmt::format("apt-get -q update -o Dir::Etc::sourcelist={} -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0\n",
                       ShellQuote(f));
    }
  }
  s += "apt-get -q -y install --no-install-recommends --allow-downgrades -o Dpkg::Options::=--force-confdef "
       "-o Dpkg::Options::=--force-confold" +
       list + "\n";
  return s;
}

std::string ItemScript(const plan::ItemChange& item) {
  using K = plan::ItemChange::Kind;
  switch (item.kind) {
    case K::kPackage: return "";  // one transaction for all: PackagesScript
    case K::kModule: return "modprobe " + ShellQuote(item.id) + "\n";
    case K::kSysctl: return "sysctl -q -w " + ShellQuote(item.id + "=" + item.want) + "\n";
    case K::kService: {
      std::string s;
      if (item.want.find("enable") != std::string::npos) s += "systemctl enable " + ShellQuote(item.id) + "\n";
      if (item.want.find("start") != std::string::npos) s += "systemctl start " + ShellQuote(item.id) + "\n";
      return s.empty() ? s : "set -e\n" + s;
    }
  }
  return "";
}

std::string RemoveScript(std::span<const std::string> paths) {
  std::string s = "rm -f --";
  for (const std::string& p : paths) s += " " + ShellQuote(p);
  return s + "\n";
}

}  // namespace gpuforge::apply
