#include "gpuforge/remote/known_hosts.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <cstdint>
#include <optional>
#include <vector>

#include <fmt/format.h>


namespace gpuforge::remote {
namespace {

std::optional<std::string> Base64Decode(std::string_view in) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '=') {
      // Padding only at the end, at most two.
      if (i + 2 < in.size()) return std::nullopt;
      ++pad;
      continue;
    }
    if (pad != 0) return std::nullopt;
    std::size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (pad > 2) return std::nullopt;
  return out;
}

// The SSH wire "string": a 32-bit big-endian length and that many bytes.
std::optional<std::string_view> TakeString(std::string_view* blob) {
  if (blob->size() < 4) return std::nullopt;
  auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>((*blob)[i])); };
  std::uint32_t len = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
  if (blob->size() - 4 < len) return std::nullopt;
  std::string_view s = blob->substr(4, len);
  blob->remove_prefix(4 + len);
  return s;
}

// OpenSSH's match_pattern: `*` any run, `?` any one character, case-insensitive as host names are.
bool Glob(std::string_view p, std::string_view s) {
  std::size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || std::tolower(static_cast<unsigned char>(p[pi])) ==
                                               std::tolower(static_cast<unsigned char>(s[si])))) {
      ++pi, ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++, mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1, si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool HashedMatches(std::string_view field, std::string_view name) {
  // |1|base64(salt)|base64(HMAC-SHA1(salt, name)), as ssh-keygen -H writes it.
  std::string_view rest = field.substr(3);
  std::size_t bar = rest.find('|');
  if (bar == std::string_view::npos) return false;
  std::optional<std::string> salt = Base64Decode(rest.substr(0, bar));
  std::optional<std::string> want = Base64Decode(rest.substr(bar + 1));
  if (!salt || !want) return false;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha1(), salt->data(), static_cast<int>(salt->size()),
           reinterpret_cast<const unsigned char*>(name.data()), name.size(), mac, &mac_len) == nullptr) {
    return false;
  }
  return std::string_view(reinterpret_cast<const char*>(mac), mac_len) == *want;
}

bool ValidHashedField(std::string_view field) {
  std::string_view rest = field.substr(3);
  std::size_t bar = rest.find('|');
  if (bar == std::string_view::npos) return false;
  std::optional<std::string> salt = Base64Decode(rest.substr(0, bar));
  std::optional<std::string> hash = Base64Decode(rest.substr(bar + 1));
  return salt && hash && salt->size() == 20 && hash->size() == 20;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

struct Entry {
  enum class Marker { kNone, kRevoked, kCertAuthority } marker = Marker::kNone;
  std::string_view hosts;
  std::string blob;  // the decoded key blob
};

// One line that is not blank or a comment; the error says what is wrong, the caller adds where.
Result<Entry> ParseEntry(std::string_view line) {
  std::vector<std::string_view> f = Fields(line);
  Entry e;
  std::size_t at = 0;
  if (f[0].starts_with('@')) {
    if (f[0] == "@revoked") {
      e.marker = Entry::Marker::kRevoked;
    } else if (f[0] == "@cert-authority") {
      e.marker = Entry::Marker::kCertAuthority;
    } else {
      return Error{"an unknown marker (OpenSSH knows @revoked and @cert-authority)"};
    }
    at = 1;
  }
  if (f.size() < at + 3) return Error{"too few fields (want: [marker] hosts key-type base64-key [comment])"};
  e.hosts = f[at];
  if (e.hosts.starts_with("|1|") && !ValidHashedField(e.hosts)) {
    return Error{"a hashed host name that is not |1|salt|hash with 20-byte salt and hash"};
  }
  std::string_view type = f[at + 1];
  std::optional<std::string> blob = Base64Decode(f[at + 2]);
  if (!blob) return Error{"the key is not valid base64 (truncated?)"};
  std::string_view rest = *blob;
  std::optional<std::string_view> inner = TakeString(&rest);
  if (!inner || *inner != type) {
    return Error{"the key blob does not hold a key of the type the line names (truncated or mislabelled?)"};
  }
  // A plain key is a row of SSH strings to the last byte; a cut one is not. Certificates carry
  // integers too, so only their type is checked.
  if (!type.ends_with("-cert-v01@openssh.com")) {
    int parts = 0;
    while (!rest.empty()) {
      if (!TakeString(&rest)) return Error{"the key is truncated"};
      ++parts;
    }
    if (parts == 0) return Error{"the key is truncated"};
  }
  e.blob = std::move(*blob);
  return e;
}

}  // namespace

std::string KeyBlobType(std::string_view base64) {
  std::optional<std::string> blob = Base64Decode(base64);
  if (!blob) return "";
  std::string_view rest = *blob;
  std::optional<std::string_view> type = TakeString(&rest);
  return type ? std::string(*type) : "";
}

bool HostFieldMatches(std::string_view field, std::string_view name) {
  if (field.starts_with("|1|")) return HashedMatches(field, name);
  // OpenSSH's match_hostname: any positive pattern matching, and no negated one.
  bool positive = false;
  std::size_t start = 0;
  while (start <= field.size()) {
    std::size_t comma = field.find(',', start);
    std::string_view p = field.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!p.empty()) {
      bool negated = p.starts_with('!');
      if (negated) p.remove_prefix(1);
      if (Glob(p, name)) {
        if (negated) return false;
        positive = true;
      }
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return positive;
}

Result<HostKeyLookup> LookupHostKey(std::string_view text, std::string_view path, std::string_view name,
                                    const HostKey& key) {
  std::optional<std::string> presented = Base64Decode(key.base64);
  if (!presented) return Error{fmt::format("the host key of {} is not valid base64", name)};
  std::optional<HostKeyLookup> known, revoked, changed, authority;
  int number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    Result<Entry> e = ParseEntry(line.substr(first));
    if (!e.ok()) {
      return Error{fmt::format("{}:{}: unreadable known_hosts line: {}. Fix or remove it (gpuforge trusts no "
                               "host key while a line cannot be read)",
                               path, number, e.error().message)};
    }
    const bool same_key = e->blob == *presented;
    if (e->marker == Entry::Marker::kRevoked) {
      if (same_key && !revoked) revoked = HostKeyLookup{HostKeyStatus::kRevoked, number};
      continue;
    }
    if (!HostFieldMatches(e->hosts, name)) continue;
    if (e->marker == Entry::Marker::kCertAuthority) {
      if (!authority) authority = HostKeyLookup{HostKeyStatus::kCertAuthority, number};
    } else if (same_key) {
      if (!known) known = HostKeyLookup{HostKeyStatus::kKnown, number};
    } else if (!changed) {
      changed = HostKeyLookup{HostKeyStatus::kChanged, number};
    }
  }
  // The whole file is read before deciding: a bad line anywhere is an error, and a revoked key
  // loses even against a line that lists it as the host's.
  if (revoked) return *revoked;
  if (known) return *known;
  if (changed) return *changed;
  if (authority) return *authority;
  return HostKeyLookup{};
}

}  // namespace gpuforge::remote
