#include "gpuforge/remote/ssh.h"

#include <fcntl.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <random>
#include <vector>

#include "gpuforge/base/read_file.h"
#include "gpuforge/remote/known_hosts.h"
#include "remote/command.h"
#include "remote/ssh_internal.h"

namespace gpuforge::remote {
namespace {

using namespace ssh_internal;  // the handle types


// known_hosts is one file that many connecting threads read and, with accept-new, append to.
std::mutex& KnownHostsMutex() {
  static std::mutex m;
  return m;
}

std::string Home() {
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return h;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr) return pw->pw_dir;
  return "/";
}

std::string ExpandTilde(const std::string& path) {
  if (path == "~" || path.starts_with("~/")) return Home() + path.substr(1);
  return path;
}

// "[host]:port" the way known_hosts and ssh-keygen -R write a host on a non-default port.
std::string KnownHostsName(const Endpoint& e) {
  return e.port == 22 ? e.host : fmt::format("[{}]:{}", e.host, e.port);
}

std::string Fingerprint(ssh_session s, std::string* type) {
  ssh_key raw = nullptr;
  if (ssh_get_server_publickey(s, &raw) != SSH_OK) return "(no key)";
  KeyPtr key(raw);
  *type = ssh_key_type_to_char(ssh_key_type(key.get()));
  unsigned char* hash = nullptr;
  size_t len = 0;
  if (ssh_get_publickey_hash(key.get(), SSH_PUBLICKEY_HASH_SHA256, &hash, &len) != SSH_OK) {
    return "(no hash)";
  }
  char* text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len);
  ssh_clean_pubkey_hash(&hash);
  std::string out = text != nullptr ? text : "(no fingerprint)";
  ssh_string_free_char(text);
  return out;
}

// Set when libssh wanted a passphrase to load a key: the key is encrypted.
struct PassphraseAsked {
  bool yes = false;
};

int RefusePassphrase(const char* /*prompt*/, char* buf, size_t len, int /*echo*/, int /*verify*/, void* userdata) {
  if (len > 0) buf[0] = '\0';
  if (userdata != nullptr) static_cast<PassphraseAsked*>(userdata)->yes = true;
  return -1;
}

// The callbacks a session keeps after authentication: no prompt ever, nothing to note.
ssh_callbacks NeverPrompt() {
  static ssh_callbacks_struct cb = [] {
    ssh_callbacks_struct c{};
    c.auth_function = RefusePassphrase;
    ssh_callbacks_init(&c);
    return c;
  }();
  return &cb;
}

// "ed25519" for ssh_host_ed25519_key.pub from a key type name.
std::string_view KeyFileKind(std::string_view type) {
  for (std::string_view k : {"ed25519", "ecdsa", "rsa"}) {
    if (type.find(k) != std::string_view::npos) return k;
  }
  return "*";
}

class SshConnector final : public Connector {
 public:
  explicit SshConnector(SshOptions o) : o_(std::move(o)) {
    known_hosts_ = o_.known_hosts.empty() ? Home() + "/.ssh/known_hosts" : ExpandTilde(o_.known_hosts);
    if (o_.config_file.empty()) {
      std::string def = Home() + "/.ssh/config";
      std::error_code ec;
      if (std::filesystem::exists(def, ec)) config_ = def;
    } else if (o_.config_file != "none") {
      config_ = ExpandTilde(o_.config_file);
    }
  }

  Result<std::unique_ptr<Session>> Connect(const Target& t) override {
    SessionPtr s(ssh_new());
    if (!s) return Error{fmt::format("node {}: cannot create an SSH session", t.node)};
    int quiet = SSH_LOG_NOLOG;
    ssh_options_set(s.get(), SSH_OPTIONS_LOG_VERBOSITY, &quiet);
    bool no = false;
    ssh_options_set(s.get(), SSH_OPTIONS_PROCESS_CONFIG, &no);
    // ~/.ssh/config matches Host patterns against the node's name, as `ssh NODE` would; what
    // the inventory says about address, port and user then wins, like ssh's command line.
    ssh_options_set(s.get(), SSH_OPTIONS_HOST, t.node.c_str());
    if (!config_.empty()) {
      // libssh opens it by path: a FIFO would hang every node's thread (issue #12, item 9).
      if (Status ok = base::CheckInputFile({config_, "ssh config", kMaxSshConfigBytes}); !ok) {
        return Error{fmt::format("node {}: {}", t.node, ok.error().message)};
      }
      if (ssh_options_parse_config(s.get(), config_.c_str()) < 0) {
        return Error{fmt::format("node {}: cannot use ssh config {}: {}", t.node, config_,
                                 ssh_get_error(s.get()))};
      }
    }
    // Stated inventory values win; unstated ones keep what the config said for this name, else
    // the built-in defaults the target carries (root, 22).
    Endpoint used = t.endpoint;
    char* value = nullptr;
    if (!t.host_stated && ssh_options_get(s.get(), SSH_OPTIONS_HOST, &value) == SSH_OK) used.host = value;
    ssh_string_free_char(value);
    value = nullptr;
    if (!t.user_stated && ssh_options_get(s.get(), SSH_OPTIONS_USER, &value) == SSH_OK) used.user = value;
    ssh_string_free_char(value);
    unsigned config_port = 0;
    if (!t.port_stated && ssh_options_get_port(s.get(), &config_port) == SSH_OK && config_port != 0) {
      used.port = static_cast<int>(config_port);
    }
    ssh_options_set(s.get(), SSH_OPTIONS_HOST, used.host.c_str());
    unsigned port = static_cast<unsigned>(used.port);
    ssh_options_set(s.get(), SSH_OPTIONS_PORT, &port);
    ssh_options_set(s.get(), SSH_OPTIONS_USER, used.user.c_str());
    ssh_options_set(s.get(), SSH_OPTIONS_KNOWNHOSTS, known_hosts_.c_str());
    long secs = static_cast<long>(o_.connect_timeout.count());
    ssh_options_set(s.get(), SSH_OPTIONS_TIMEOUT, &secs);
    if (!t.identity_file.empty()) {
      std::string id = ExpandTilde(t.identity_file);
      // The same for the key file libssh reads by path.
      if (Status ok = base::CheckInputFile({id, "identity file", kMaxIdentityFileBytes}); !ok) {
        return Error{fmt::format("node {}: {}", t.node, ok.error().message)};
      }
      ssh_options_set(s.get(), SSH_OPTIONS_ADD_IDENTITY, id.c_str());
    }
    if (t.jump) {
      std::string cmd = JumpCommand(t);
      ssh_options_set(s.get(), SSH_OPTIONS_PROXYCOMMAND, cmd.c_str());
    }
    // Nagle off (libssh leaves it on: SSH_OPTIONS_NODELAY defaults to 0). An SFTP write goes out
    // as a full packet and a short one behind it; with Nagle the short one waits for the ACK of
    // the first, which the node's kernel delays by up to 40 ms, so every 32 KiB of an upload
    // cost ~35 ms (strace on the test hosts: sendto 32796 + sendto 76, then ~35 ms of quiet):
    // a 159 MB sanitizer-build agent took ~3 minutes per node, a 10 MB release one ~12 s.
    int nodelay = 1;
    ssh_options_set(s.get(), SSH_OPTIONS_NODELAY, &nodelay);

    const std::string where = Describe(used);
    if (ssh_connect(s.get()) != SSH_OK) {
      return Error{fmt::format("node {}: cannot connect to {}{}: {}", t.node, where,
                               t.jump ? " via " + Describe(*t.jump) : "", ssh_get_error(s.get()))};
    }
    if (Status k = CheckHostKey(s.get(), t.node, used); !k.ok()) {
      ssh_disconnect(s.get());
      return k.error();
    }
    // Without an auth callback, OpenSSL asks for a PEM key's passphrase on the terminal in the
    // middle of a run (libssh pki_crypto.c passes it no callback), blocking every node's thread.
    // This one never answers and notes that a key wanted one.
    PassphraseAsked asked;
    ssh_callbacks_struct cb{};
    cb.userdata = &asked;
    cb.auth_function = RefusePassphrase;
    ssh_callbacks_init(&cb);
    ssh_set_callbacks(s.get(), &cb);
    int rc = ssh_userauth_publickey_auto(s.get(), nullptr, nullptr);
    ssh_set_callbacks(s.get(), NeverPrompt());
    if (rc != SSH_AUTH_SUCCESS) {
      std::string tried = std::getenv("SSH_AUTH_SOCK") != nullptr ? "ssh-agent, " : "";
      tried += t.identity_file.empty() ? "the default identities in ~/.ssh" : t.identity_file;
      if (asked.yes) {
        std::string key = t.identity_file.empty() ? "a key in ~/.ssh" : ExpandTilde(t.identity_file);
        Error e{fmt::format("node {}: authentication refused for {}: {} is an encrypted key, and gpuforge "
                            "never asks for a passphrase: load it into ssh-agent (`{}`) and run again",
                            t.node, where, key, t.identity_file.empty() ? "ssh-add" : "ssh-add " + ShellQuote(key))};
        ssh_disconnect(s.get());
        return e;
      }
      Error e{rc == SSH_AUTH_ERROR
                  ? fmt::format("node {}: authentication failed at {}: {}", t.node, where,
                                ssh_get_error(s.get()))
                  : fmt::format("node {}: authentication refused for {}: no key was accepted "
                                "(tried {}); the node needs the public key in ~{}/.ssh/"
                                "authorized_keys",
                                t.node, where, tried, used.user)};
      ssh_disconnect(s.get());
      return e;
    }
    Target reached = t;
    reached.endpoint = used;
    // The user may have come from ~/.ssh/config: sudo follows the user really logged in as.
    reached.sudo = (t.sudo || t.sudo_wanted) && used.user != "root";
    return MakeSession(std::move(reached), std::move(s), std::chrono::seconds(30));
  }

 private:
  std::string JumpCommand(const Target& t) const {
    const Endpoint& j = *t.jump;
    std::string cmd = fmt::format(
        "exec {} -W '[%h]:%p' -p {} -l {} -o BatchMode=yes -o UserKnownHostsFile={} "
        "-o StrictHostKeyChecking={} -o ConnectTimeout={}",
        ShellQuote(o_.jump_program), j.port, ShellQuote(j.user), ShellQuote(known_hosts_),
        o_.accept_new_host_keys ? "accept-new" : "yes", o_.connect_timeout.count());
    cmd += " -F " + (config_.empty() ? std::string("none") : ShellQuote(config_));
    if (!t.identity_file.empty()) cmd += " -i " + ShellQuote(ExpandTilde(t.identity_file));
    return cmd + " " + ShellQuote(j.host);
  }

  // gpuforge's own reading of known_hosts decides (remote/known_hosts.h); libssh only
  // presents the key and, for a host the file has nothing about, appends it.
  Status CheckHostKey(ssh_session s, const std::string& node, const Endpoint& e) {
    std::string type = "?";
    const std::string fp = Fingerprint(s, &type);
    const std::string name = KnownHostsName(e);
    Result<HostKey> presented = PresentedKey(s);
    if (!presented.ok()) return Error{fmt::format("node {}: {}", node, presented.error().message)};
    std::lock_guard lock(KnownHostsMutex());
    Result<std::string> text = ReadKnownHosts();
    if (!text.ok()) return Error{fmt::format("node {}: {}", node, text.error().message)};
    Result<HostKeyLookup> found = LookupHostKey(*text, known_hosts_, name, *presented);
    if (!found.ok()) return Error{fmt::format("node {}: {}", node, found.error().message)};
    switch (found->status) {
      case HostKeyStatus::kKnown:
        return Status::Ok();
      case HostKeyStatus::kRevoked:
        // OpenSSH's words (sshconnect.c, HOST_REVOKED); it refuses whatever StrictHostKeyChecking says.
        return Error{fmt::format(
            "node {}: WARNING: REVOKED HOST KEY DETECTED! The {} host key for {} is marked as revoked "
            "({}:{}). This could mean that a stolen key is being used to impersonate this host",
            node, type, name, known_hosts_, found->line)};
      case HostKeyStatus::kChanged:
        return Error{fmt::format(
            "node {}: HOST KEY CHANGED for {}: it now presents {} {}, which does not match {}:{}. "
            "This is a reinstalled node or a man-in-the-middle. If the node was reinstalled, "
            "remove the old key with `ssh-keygen -R '{}' -f {}` and connect again",
            node, name, type, fp, known_hosts_, found->line, name, known_hosts_)};
      case HostKeyStatus::kCertAuthority:
        return Error{fmt::format(
            "node {}: {} is vouched for by a @cert-authority line ({}:{}), and gpuforge cannot check "
            "host certificates; it presents {} {}: add that key for {} to {} once you have checked it",
            node, name, known_hosts_, found->line, type, fp, name, known_hosts_)};
      case HostKeyStatus::kUnknown:
        break;
    }
    if (o_.accept_new_host_keys) {
      if (ssh_session_update_known_hosts(s) != SSH_OK) {
        return Error{fmt::format("node {}: cannot add the host key of {} to {}: {}", node, name,
                                 known_hosts_, ssh_get_error(s))};
      }
      return Status::Ok();
    }
    return Error{fmt::format(
        "node {}: unknown host key for {}: {} {}. Check the fingerprint on the node "
        "(ssh-keygen -lf /etc/ssh/ssh_host_{}_key.pub), then add it with `ssh-keyscan -p {} "
        "{} >> {}`, or rerun with --accept-new-host-keys",
        node, name, type, fp, KeyFileKind(type), e.port, e.host, known_hosts_)};
  }

  static Result<HostKey> PresentedKey(ssh_session s) {
    ssh_key raw = nullptr;
    if (ssh_get_server_publickey(s, &raw) != SSH_OK) return Error{"the server presented no host key"};
    KeyPtr key(raw);
    char* b64 = nullptr;
    if (ssh_pki_export_pubkey_base64(key.get(), &b64) != SSH_OK || b64 == nullptr) {
      return Error{"cannot read the server's host key"};
    }
    HostKey k{"", b64};
    ssh_string_free_char(b64);
    k.type = KeyBlobType(k.base64);
    return k;
  }

  // The whole file through the one bounded reader (base/read_file.h), or "" when there is none
  // yet. A known_hosts past 16 MiB is not one.
  Result<std::string> ReadKnownHosts() const {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(known_hosts_, ec)) && !ec) return std::string();
    return base::ReadInputFile({known_hosts_, "known_hosts", 16u << 20});
  }

  SshOptions o_;
  std::string known_hosts_;
  std::string config_;
};

}  // namespace

std::unique_ptr<Connector> MakeSshConnector(const SshOptions& options) {
  IgnoreSigpipe();
  return std::make_unique<SshConnector>(options);
}

}  // namespace gpuforge::remote
