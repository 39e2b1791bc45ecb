#pragma once

// The shell text gpuforge sends to nodes, kept pure so that tests pin it: quoting, the
// wrapper that reports the remote process group, the stop script and the atomic-write script.

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

// Writes stdin to `path` atomically as the script's user (root under sudo): mktemp in the same
// directory, cat, chmod, chown, sync, mv -fT (never into a directory planted at the path). The temporary file is removed on any failure.
std::string AtomicWriteScript(const std::string& path, unsigned mode, const std::string& owner);

// "dir/.name.gpuforge-XXXXXX" with a random suffix, for SFTP uploads.
std::string TemporarySibling(const std::string& path, std::string_view suffix);

}  // namespace gpuforge::remote
