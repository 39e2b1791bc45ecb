#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuforge::names {

// Checks for values that later reach file names, config files and remote shell commands.
// Each returns nothing when the value is acceptable, or the reason it is not. They are
// deliberately narrow: anything outside the allowed alphabet is refused at load time, so
// shell metacharacters never reach a later command.

// RFC 1123 host name: labels of [A-Za-z0-9-], not starting or ending with '-', 1..63 chars,
// joined by '.', at most 253 chars. An IPv4 dotted quad also passes.
std::optional<std::string> CheckHostname(std::string_view s);

// A host address: an IPv4 dotted quad, a bracket-free IPv6 address, or a host name.
std::optional<std::string> CheckAddress(std::string_view s);

// Object names (profiles, groups, switches, racks, networks, tiers): [A-Za-z0-9_.-], starting
// with a letter or digit, 1..64 chars.
std::optional<std::string> CheckName(std::string_view s);

// NIC / RDMA device / network interface names (mlx5_0, ib0, enp1s0f0): [A-Za-z0-9_.-],
// 1..31 chars (IFNAMSIZ is 16, RDMA device names up to 64; 31 keeps both readable).
std::optional<std::string> CheckDeviceName(std::string_view s);

// PCI bus id in domain:bus:device.function form, "0000:1b:00.0" (hex, case-insensitive).
std::optional<std::string> CheckPciBusId(std::string_view s);

// Absolute path of [A-Za-z0-9_./+@%-] (and '~' as the first character), no "..".
std::optional<std::string> CheckPath(std::string_view s);

// Version strings ("560.35.03", "2.21.5-1+cuda12.4", "24.04"): [A-Za-z0-9._+~:-], 1..64.
std::optional<std::string> CheckVersion(std::string_view s);

// Values that are written into config files and environment settings (NCCL_IB_HCA=...):
// printable ASCII without whitespace, quotes, backslash, '$', '`', ';', '&', '|', '<', '>',
// '(', ')', '#', '*', '?', '!', '{', '}', '[', ']'. Up to 256 chars.
std::optional<std::string> CheckSafeValue(std::string_view s);

// Repository URLs: http://, https:// or file:/ followed by [A-Za-z0-9_.~:/%+@-], up to 512
// chars (no query strings, spaces or brackets: the URL is written into sources.list lines).
std::optional<std::string> CheckUrl(std::string_view s);

// Linux user names as useradd accepts them by default (NAME_REGEX in adduser.conf's
// "[a-z_][a-z0-9_-]*", at most 32 characters): the SSH user of a node or a jump host.
std::optional<std::string> CheckUser(std::string_view s);

// An SSH jump host, `[user@]host[:port]`, as `ssh -J` reads it: OpenSSH misc.c
// parse_user_host_port splits the user at the last '@' and the port at the first ':' (hpdelim),
// so a bare IPv6 address cannot be a jump host; the host must be a host name or an IPv4 quad.
std::optional<std::string> CheckJump(std::string_view s);

// A CPU model as lscpu reports it and the inventory keeps it ("AMD EPYC 9654 96-Core
// Processor"): letters, digits, spaces and ._-+@()/, 1..128 characters. Free text for people,
// but it reaches config comments.
std::optional<std::string> CheckCpuModel(std::string_view s);

// Environment variable names: [A-Z_][A-Z0-9_]*.
std::optional<std::string> CheckEnvName(std::string_view s);

// Edit distance, for "did you mean" suggestions.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The closest candidate within a small edit distance, if any. A candidate that shares nothing
// with the word (as many edits as the longer of the two has characters: "xx" against "*") is
// no suggestion at all (#28 item 24: `--nodes @xx` was asked "did you mean '@*'?").
template <class Range>
std::optional<std::string> Closest(std::string_view word, const Range& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = 0;
  for (const auto& c : candidates) {
    const std::string_view cv(c);
    std::size_t d = EditDistance(word, cv);
    std::size_t limit = std::max<std::size_t>(2, cv.size() / 3);
    if (d >= std::max(word.size(), cv.size())) continue;
    if (d <= limit && (!best || d < best_d)) {
      best = std::string(c);
      best_d = d;
    }
  }
  return best;
}

}  // namespace gpuforge::names
