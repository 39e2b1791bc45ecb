#include "remote/command.h"

#include <fmt/format.h>

#include <charconv>

#include "gpuforge/base/sha256.h"

namespace gpuforge::remote {

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string WrapCommand(std::string_view command, bool sudo) {
  return fmt::format("printf '{}%s\\n' \"$$\" >&2; exec {}/bin/sh -c {}", kPidMarker,
                     sudo ? "sudo -n " : "", ShellQuote(command));
}

std::optional<long> ParsePidMarker(std::string_view line) {
  if (!line.starts_with(kPidMarker)) return std::nullopt;
  std::string_view digits = line.substr(kPidMarker.size());
  long pid = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || pid <= 1) return std::nullopt;
  return pid;
}

std::string StopGroupScript(long pgid, bool sudo) {
  // The shell's own kill: `kill -SIG -PGID` (dash rejects `--`). kill -0 on a group answers
  // whether any member is left. Under sudo the group holds sudo itself, which relays TERM to
  // the command it runs.
  std::string body = fmt::format(
      "kill -TERM -{0} 2>/dev/null || exit 0; i=0; "
      "while kill -0 -{0} 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; "
      "kill -KILL -{0} 2>/dev/null; sleep 0.1; ! kill -0 -{0} 2>/dev/null",
      pgid);
  return sudo ? "sudo -n /bin/sh -c " + ShellQuote(body) : body;
}

UploadDigest UploadDigest::Of(std::string_view content) { return {content.size(), base::Sha256Hex(content)}; }

std::string VerifyUploadScript(const std::string& file, const UploadDigest& want) {
  return fmt::format(
      "n=$(wc -c < {0}); if [ \"$n\" -ne {1} ]; then "
      "echo \"$n of {1} bytes arrived; nothing was installed\" >&2; exit 1; fi; "
      "h=$(sha256sum < {0} | cut -c1-64); if [ \"$h\" != {2} ]; then "
      "echo \"what arrived is not what was sent (SHA-256 $h, want {2}); nothing was installed\" >&2; exit 1; fi",
      file, want.size, want.sha256);
}

std::string AtomicWriteScript(const std::string& path, unsigned mode, const std::string& owner,
                              const UploadDigest& want) {
  std::string dir = "/";
  std::string base = path;
  if (auto slash = path.rfind('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
    base = path.substr(slash + 1);
  }
  std::string chown = owner.empty() ? "" : fmt::format("chown {} \"$t\"; ", ShellQuote(owner));
  return fmt::format(
      "set -e; umask 077; t=$(mktemp {}); trap 'rm -f \"$t\"' EXIT; cat > \"$t\"; {}; "
      "chmod {:o} \"$t\"; {}sync \"$t\" 2>/dev/null || sync; mv -fT \"$t\" {}; trap - EXIT",
      ShellQuote(dir + "/." + base + ".gpuforge-XXXXXX"), VerifyUploadScript("\"$t\"", want), mode, chown,
      ShellQuote(path));
}

std::string TemporarySibling(const std::string& path, std::string_view suffix) {
  std::string dir;
  std::string base = path;
  if (auto slash = path.rfind('/'); slash != std::string::npos) {
    dir = path.substr(0, slash + 1);
    base = path.substr(slash + 1);
  }
  return fmt::format("{}.{}.gpuforge-{}", dir, base, suffix);
}

}  // namespace gpuforge::remote
