#include "gpuforge/base/names.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <vector>

namespace gpuforge::names {

namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::optional<std::string> CheckAlphabet(std::string_view s, std::string_view extra,
                                         std::string_view what) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (IsAlnum(c) || extra.find(c) != std::string_view::npos) continue;
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return fmt::format("{} contains a control character at position {}", what, i + 1);
    }
    // A byte of a multi-byte character (a right-to-left override, a C1 control) is named by its
    // value: quoted alone it is half a character, which a terminal shows as '?' (#28 item 23).
    if (static_cast<unsigned char>(c) >= 0x80) {
      return fmt::format("{} contains the non-ASCII byte 0x{:02X} at position {}, which is not allowed", what,
                         static_cast<unsigned char>(c), i + 1);
    }
    return fmt::format("{} contains '{}' at position {}, which is not allowed", what, c, i + 1);
  }
  return std::nullopt;
}

bool IsIpv4(std::string_view s) {
  int parts = 0;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t j = s.find('.', i);
    if (j == std::string_view::npos) j = s.size();
    std::string_view p = s.substr(i, j - i);
    if (p.empty() || p.size() > 3) return false;
    int v = 0;
    for (char c : p) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      v = v * 10 + (c - '0');
    }
    if (v > 255) return false;
    ++parts;
    i = j + 1;
    if (j == s.size()) break;
  }
  return parts == 4;
}

}  // namespace

std::optional<std::string> CheckHostname(std::string_view s) {
  if (s.empty()) return "host name is empty";
  if (s.size() > 253) return fmt::format("host name is {} characters long; the limit is 253", s.size());
  if (auto bad = CheckAlphabet(s, "-.", "host name")) return bad;
  if (IsIpv4(s)) return std::nullopt;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t j = s.find('.', i);
    if (j == std::string_view::npos) j = s.size();
    std::string_view label = s.substr(i, j - i);
    if (label.empty()) return "host name has an empty label (two dots, or a leading or trailing dot)";
    if (label.size() > 63) return fmt::format("host name label '{}' is longer than 63 characters", label);
    if (label.front() == '-' || label.back() == '-') {
      return fmt::format("host name label '{}' starts or ends with '-'", label);
    }
    if (j == s.size()) break;
    i = j + 1;
  }
  return std::nullopt;
}

std::optional<std::string> CheckAddress(std::string_view s) {
  if (s.find(':') != std::string_view::npos) {
    if (s.size() > 45) return "IPv6 address is too long";
    for (char c : s) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
        return fmt::format("address '{}' contains '{}', which is not allowed in an IPv6 address", s, c);
      }
    }
    return std::nullopt;
  }
  return CheckHostname(s);
}

std::optional<std::string> CheckName(std::string_view s) {
  if (s.empty()) return "name is empty";
  if (s.size() > 64) return fmt::format("name is {} characters long; the limit is 64", s.size());
  if (!IsAlnum(s.front())) return fmt::format("name '{}' must start with a letter or digit", s);
  return CheckAlphabet(s, "_.-", "name");
}

std::optional<std::string> CheckDeviceName(std::string_view s) {
  if (s.empty()) return "device name is empty";
  if (s.size() > 31) return fmt::format("device name is {} characters long; the limit is 31", s.size());
  if (!IsAlnum(s.front())) return fmt::format("device name '{}' must start with a letter or digit", s);
  return CheckAlphabet(s, "_.-", "device name");
}

std::optional<std::string> CheckPciBusId(std::string_view s) {
  // dddd:bb:dd.f
  auto bad = [&] {
    return fmt::format("PCI bus id '{}' is not of the form 0000:1b:00.0 (domain:bus:device.function)", s);
  };
  if (s.size() != 12) return bad();
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i == 4 || i == 7) {
      if (c != ':') return bad();
    } else if (i == 10) {
      if (c != '.') return bad();
    } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return bad();
    }
  }
  if (s[11] > '7') return bad();
  return std::nullopt;
}

std::optional<std::string> CheckPath(std::string_view s) {
  if (s.empty()) return "path is empty";
  if (s.size() > 1024) return "path is longer than 1024 characters";
  if (s.front() != '/' && s.front() != '~') return fmt::format("path '{}' must be absolute", s);
  std::string_view rest = s.front() == '~' ? s.substr(1) : s;
  if (auto bad = CheckAlphabet(rest, "_./+@%-", "path")) return bad;
  if (s.find("/../") != std::string_view::npos || s.ends_with("/..")) {
    return fmt::format("path '{}' contains '..'", s);
  }
  return std::nullopt;
}

std::optional<std::string> CheckVersion(std::string_view s) {
  if (s.empty()) return "version is empty";
  if (s.size() > 64) return "version is longer than 64 characters";
  return CheckAlphabet(s, "._+~:-", "version");
}

std::optional<std::string> CheckSafeValue(std::string_view s) {
  if (s.size() > 256) return "value is longer than 256 characters";
  return CheckAlphabet(s, "_.,:=^/+-%@~", "value");
}

std::optional<std::string> CheckUrl(std::string_view s) {
  if (s.size() > 512) return "URL is longer than 512 characters";
  std::string_view rest;
  for (std::string_view scheme : {"https://", "http://", "file:/"}) {
    if (s.starts_with(scheme)) {
      rest = s.substr(scheme.size());
      break;
    }
  }
  if (rest.empty()) return fmt::format("URL '{}' must start with https://, http:// or file:/ and name a place", s);
  // The whole URL, so that a reported position counts from its first character (every scheme
  // character is in the alphabet).
  return CheckAlphabet(s, "_.~:/%+@-", "URL");
}

std::optional<std::string> CheckEnvName(std::string_view s) {
  if (s.empty()) return "variable name is empty";
  if (std::isdigit(static_cast<unsigned char>(s.front()))) {
    return fmt::format("variable name '{}' starts with a digit", s);
  }
  for (char c : s) {
    if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      return fmt::format("variable name '{}' must be upper-case letters, digits and '_'", s);
    }
  }
  return std::nullopt;
}

std::optional<std::string> CheckUser(std::string_view u) {
  bool ok = !u.empty() && u.size() <= 32 && (std::islower(static_cast<unsigned char>(u[0])) || u[0] == '_');
  for (char c : u) {
    ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                c == '_' || c == '-');
  }
  if (ok) return std::nullopt;
  return "a user name is lower-case letters, digits, '_' and '-', starting with a letter or '_', "
         "at most 32 characters";
}

std::optional<std::string> CheckJump(std::string_view s) {
  std::string_view host = s;
  if (auto at = host.rfind('@'); at != std::string_view::npos) {
    if (auto bad = CheckUser(host.substr(0, at))) return fmt::format("the part before '@' is not a user name; {}", *bad);
    host = host.substr(at + 1);
  }
  if (auto colon = host.find(':'); colon != std::string_view::npos) {
    const std::string_view port = host.substr(colon + 1);
    int v = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || v < 1 || v > 65535) {
      return std::string("the port after ':' must be a number from 1 to 65535 (ssh -J reads no bare IPv6 address)");
    }
    host = host.substr(0, colon);
  }
  return CheckHostname(host);
}

std::optional<std::string> CheckCpuModel(std::string_view m) {
  bool ok = !m.empty() && m.size() <= 128;
  for (char c : m) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || std::string_view(" ._-+@()/").find(c) != std::string_view::npos);
  }
  if (ok) return std::nullopt;
  return "a CPU model may hold letters, digits, spaces and ._-+@()/ only, 1 to 128 characters";
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace gpuforge::names
