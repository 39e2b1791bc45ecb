#pragma once

// The shell text gpuforge sends to nodes, kept pure so that tests pin it: quoting, the
// wrapper that reports the remote process group, the stop script and the atomic-write script.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpuforge::remote {

// 'text' for a POSIX shell: single quotes, with ' written as '\''.
std::string ShellQuote(std::string_view text);

// The first stderr line the wrapper prints: "@@gpuforge-pid <pid>".
inline constexpr std::string_view kPidMarker = "@@gpuforge-pid ";

// What is sent to the login shell: print its own pid (sshd made it a session and process
// group leader, so the pid names the whole group), then exec /bin/sh -c COMMAND, through
// `sudo -n` when asked. Works with sh, bash and zsh as the login shell.
std::string WrapCommand(std::string_view command, bool sudo);

// Parses a marker line (without its newline); nullopt unless it is exactly marker + digits.
std::optional<long> ParsePidMarker(std::string_view line);

// Stops process group `pgid`: TERM, up to 2 s for it to go, then KILL. Exit 0 when the group is
// gone at the end.
std::string StopGroupScript(long pgid, bool sudo);

// What an upload must arrive as: its size in bytes and its SHA-256 (sha256sum's hex).
struct UploadDigest {
  std::size_t size = 0;
  std::string sha256;
  static UploadDigest Of(std::string_view content);
};

// Shell text that exits 1, with the reason on stderr, unless the file `file` (shell text: a
// quoted path or "$t") holds exactly `want`. `cat` takes an early EOF (a controller or jump host
// killed mid-upload) for success, so nothing is installed before this passes.
std::string VerifyUploadScript(const std::string& file, const UploadDigest& want);

// Writes stdin to `path` atomically as the script's user (root under sudo): mktemp in the same
// directory, cat, the size and SHA-256 checked against `want`, chmod, chown, sync, mv -fT (never
// into a directory planted at the path). The temporary file is removed on any failure.
std::string AtomicWriteScript(const std::string& path, unsigned mode, const std::string& owner,
                              const UploadDigest& want);

// "dir/.name.gpuforge-XXXXXX" with a random suffix, for SFTP uploads.
std::string TemporarySibling(const std::string& path, std::string_view suffix);

}  // namespace gpuforge::remote
