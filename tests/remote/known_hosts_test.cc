// gpuforge's own known_hosts reader: the cases libssh 0.10 gets wrong (a line it cannot parse
// reads as "host not found"; @revoked and @cert-authority are ignored) and OpenSSH's matching
// rules. The keys and hashed names were made with ssh-keygen (-t ed25519/ecdsa, -H) for these
// tests; 198.18.0.0/15 is the benchmarking range, never a real node.

#include "gpuforge/remote/known_hosts.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuforge::remote {
namespace {

const HostKey kA{"ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIFvOHsd3zXXw+TjZ3RYVvFBEpEUv9Tz+BfbjbJzZXfB0"};
const HostKey kB{"ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIPmlGtt277FWSshhkFrSQG4xUm2wjr1Tnb3DU9zN0Dbg"};
const HostKey kC{"ecdsa-sha2-nistp256",
                 "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBLwIh+nGCNhfvZeF/OHppLcKeYvwMuuEz/rwrzccxf//"
                 "s4RBAxjAYfvaJ3CujK+li2ecWAGvnjI5BXb4jkdiJYY="};
// ssh-keygen -H of "198.18.0.7" and "[198.18.0.8]:2222", both with key A.
const char* const kHashed7 = "|1|EI98yTiEidB+0GgQLf0CeWcBb9c=|ddF0X2Q6icSYIih8GGje2AT1QT4=";
const char* const kHashed8 = "|1|XSqxm+aSqZp3X3hgkDUZeNSA1mE=|qaxeK5v2LqN0aV6AkKk5WEHt3bY=";

std::string Line(std::string_view hosts, const HostKey& k, std::string_view marker = "") {
  std::string out = marker.empty() ? "" : std::string(marker) + " ";
  return out + std::string(hosts) + " " + k.type + " " + k.base64 + " comment\n";
}

HostKeyLookup Must(std::string_view text, std::string_view name, const HostKey& k) {
  Result<HostKeyLookup> r = LookupHostKey(text, "/kh", name, k);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : HostKeyLookup{};
}

TEST(KnownHosts, KnownChangedAndUnknownByPlainName) {
  std::string text = "# a comment\n\n" + Line("198.18.0.7", kA) + Line("198.18.0.9", kB);
  EXPECT_EQ(Must(text, "198.18.0.7", kA).status, HostKeyStatus::kKnown);
  EXPECT_EQ(Must(text, "198.18.0.7", kA).line, 3);
  HostKeyLookup changed = Must(text, "198.18.0.7", kB);
  EXPECT_EQ(changed.status, HostKeyStatus::kChanged);
  EXPECT_EQ(changed.line, 3);
  EXPECT_EQ(Must(text, "198.18.0.8", kA).status, HostKeyStatus::kUnknown);
  EXPECT_EQ(Must("", "198.18.0.8", kA).status, HostKeyStatus::kUnknown);
}

TEST(KnownHosts, AHostWithAKeyOfAnotherTypeIsNotNew) {
  // accept-new must not add a second key beside one the host already has.
  EXPECT_EQ(Must(Line("198.18.0.7", kC), "198.18.0.7", kA).status, HostKeyStatus::kChanged);
}

TEST(KnownHosts, HashedNamesMatchTheirHostAndPortOnly) {
  std::string text = Line(kHashed7, kA) + Line(kHashed8, kA);
  EXPECT_EQ(Must(text, "198.18.0.7", kA).status, HostKeyStatus::kKnown);
  EXPECT_EQ(Must(text, "198.18.0.7", kB).status, HostKeyStatus::kChanged);
  EXPECT_EQ(Must(text, "[198.18.0.8]:2222", kB).status, HostKeyStatus::kChanged);
  EXPECT_EQ(Must(text, "198.18.0.8", kB).status, HostKeyStatus::kUnknown);
  EXPECT_EQ(Must(text, "198.18.0.70", kB).status, HostKeyStatus::kUnknown);
}

TEST(KnownHosts, PatternsWildcardsNegationAndPorts) {
  EXPECT_TRUE(HostFieldMatches("198.18.0.*", "198.18.0.7"));
  EXPECT_TRUE(HostFieldMatches("node?,other", "NODE1"));
  EXPECT_FALSE(HostFieldMatches("node?", "node10"));
  EXPECT_TRUE(HostFieldMatches("*", "[198.18.0.8]:2222"));
  EXPECT_FALSE(HostFieldMatches("198.18.0.8", "[198.18.0.8]:2222"));
  EXPECT_TRUE(HostFieldMatches("[198.18.0.8]:2222", "[198.18.0.8]:2222"));
  EXPECT_FALSE(HostFieldMatches("198.18.0.*,!198.18.0.7", "198.18.0.7"));
  EXPECT_TRUE(HostFieldMatches("198.18.0.*,!198.18.0.7", "198.18.0.6"));
  EXPECT_FALSE(HostFieldMatches("!198.18.0.7", "198.18.0.6"));  // a negation alone matches nothing
  // A wildcard line with another key makes every host it covers "changed", never new.
  EXPECT_EQ(Must(Line("198.18.*", kB), "198.18.0.7", kA).status, HostKeyStatus::kChanged);
}

TEST(KnownHosts, ARevokedKeyLosesEvenAgainstAMatchingLine) {
  std::string text = Line("198.18.0.7", kA) + Line("*", kA, "@revoked");
  HostKeyLookup r = Must(text, "198.18.0.7", kA);
  EXPECT_EQ(r.status, HostKeyStatus::kRevoked);
  EXPECT_EQ(r.line, 2);
  // Revoked whatever host the line names: OpenSSH's "must not ever be accepted".
  EXPECT_EQ(Must(Line("elsewhere", kA, "@revoked"), "198.18.0.7", kA).status, HostKeyStatus::kRevoked);
  EXPECT_EQ(Must(Line("*", kB, "@revoked"), "198.18.0.7", kA).status, HostKeyStatus::kUnknown);
}

TEST(KnownHosts, ACertAuthorityLineMeansTheHostIsNotNew) {
  HostKeyLookup r = Must(Line("*.example.org,198.18.*", kB, "@cert-authority"), "198.18.0.7", kA);
  EXPECT_EQ(r.status, HostKeyStatus::kCertAuthority);
  EXPECT_EQ(r.line, 1);
  EXPECT_EQ(Must(Line("*.example.org", kB, "@cert-authority"), "198.18.0.7", kA).status, HostKeyStatus::kUnknown);
}

TEST(KnownHosts, AnyUnreadableLineIsAnErrorNamingFileAndLine) {
  const std::string good = Line("198.18.0.9", kB);
  std::string truncated_key = kA.base64.substr(0, 40);
  struct Case {
    std::string line;
    std::string why;
  } cases[] = {
      {"198.18.0.7 ssh-ed25519\n", "too few fields (want: [marker] hosts key-type base64-key [comment])"},
      {"198.18.0.7 ssh-ed25519 " + truncated_key + "\n", "the key is truncated"},
      {"198.18.0.7 ssh-ed25519 " + kA.base64.substr(0, 41) + "\n", "the key is not valid base64 (truncated?)"},
      {"198.18.0.7 ssh-rsa " + kA.base64 + "\n",
       "the key blob does not hold a key of the type the line names (truncated or mislabelled?)"},
      {"@trusted 198.18.0.7 ssh-ed25519 " + kA.base64 + "\n",
       "an unknown marker (OpenSSH knows @revoked and @cert-authority)"},
      {"|1|abc|def ssh-ed25519 " + kA.base64 + "\n",
       "a hashed host name that is not |1|salt|hash with 20-byte salt and hash"},
  };
  for (const Case& c : cases) {
    // The bad line is for the host itself, where libssh would have said "not found".
    Result<HostKeyLookup> r = LookupHostKey(good + c.line, "/root/.ssh/known_hosts", "198.18.0.7", kA);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_EQ(r.error().message,
              "/root/.ssh/known_hosts:2: unreadable known_hosts line: " + c.why +
                  ". Fix or remove it (gpuforge trusts no host key while a line cannot be read)");
  }
}

TEST(KnownHosts, TheKeyTypeComesFromTheBlob) {
  EXPECT_EQ(KeyBlobType(kA.base64), "ssh-ed25519");
  EXPECT_EQ(KeyBlobType(kC.base64), "ecdsa-sha2-nistp256");
  EXPECT_EQ(KeyBlobType("AAAA"), "");
  EXPECT_EQ(KeyBlobType("!!"), "");
}

}  // namespace
}  // namespace gpuforge::remote
