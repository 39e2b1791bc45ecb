#pragma once

// The known_hosts file as gpuforge reads it itself, before any key is trusted or recorded.
// libssh (0.10) takes a host whose known_hosts line it cannot parse for "not found" and knows
// neither `@revoked` nor `@cert-authority`, so with --accept-new-host-keys a truncated line made
// a changed key look new and a revoked key got recorded. This reader checks every line and
// follows OpenSSH's rules (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"): comma-separated host
// patterns with `*`, `?` and `!`, hashed names (`|1|salt|HMAC-SHA1`), `[host]:port` for a port
// other than 22, and the two markers.

#include <string>
#include <string_view>

#include "gpuforge/base/result.h"

namespace gpuforge::remote {

// A public key as known_hosts writes it: the key type and the base64 of the key blob.
struct HostKey {
  std::string type;    // "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", ...
  std::string base64;  // the blob, as in the file's third field
};

enum class HostKeyStatus {
  kKnown,          // a plain line for this host holds this key
  kUnknown,        // no line of any kind names this host
  kChanged,        // lines name this host, none of them with this key
  kRevoked,        // an @revoked line holds this key (whatever host it names)
  kCertAuthority,  // only a @cert-authority line names this host; gpuforge cannot check certificates
};

struct HostKeyLookup {
  HostKeyStatus status = HostKeyStatus::kUnknown;
  int line = 0;  // the line that decided; 0 for kUnknown
};

// Looks `name` (the host as known_hosts writes it: "host" on port 22, "[host]:port" otherwise)
// up with the key it presented, in the text of the known_hosts file `path`. Every line must
// parse: the first that does not is an error naming path:line and what is wrong with it.
Result<HostKeyLookup> LookupHostKey(std::string_view text, std::string_view path, std::string_view name,
                                    const HostKey& key);

// Whether OpenSSH's host field (a pattern list, or one hashed name) matches `name`.
bool HostFieldMatches(std::string_view field, std::string_view name);

// The key type a base64 key blob names inside itself; "" when the blob is not a valid key blob.
std::string KeyBlobType(std::string_view base64);

}  // namespace gpuforge::remote
