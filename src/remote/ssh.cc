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

namespace gpuforge::remote {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct SessionFree {
  void operator()(ssh_session s) const { ssh_free(s); }
};
struct ChannelFree {
  void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
struct KeyFree {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};
struct EventFree {
  void operator()(ssh_event e) const { ssh_event_free(e); }
};
struct SftpFree {
  void operator()(sftp_session s) const { sftp_free(s); }
};
struct SftpFileClose {
  void operator()(sftp_file f) const { sftp_close(f); }
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionFree>;
using ChannelPtr = std::unique_ptr<ssh_channel_struct, ChannelFree>;
using KeyPtr = std::unique_ptr<ssh_key_struct, KeyFree>;
using EventPtr = std::unique_ptr<ssh_event_struct, EventFree>;
using SftpPtr = std::unique_ptr<sftp_session_struct, SftpFree>;
using SftpFilePtr = std::unique_ptr<sftp_file_struct, SftpFileClose>;

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

// What one command run collects; filled by libssh's channel callbacks.
struct ExecState {
  std::size_t cap = kDefaultOutputCap;
  bool strip_marker = true;
  std::string out, err;
  bool cap_hit = false;
  bool eof = false, closed = false, got_exit = false;
  int exit_status = -1;
  std::string signal;
  std::string first_err_line;  // until the pid marker is seen
  bool marker_done = false;
  std::optional<long> pgid;
  // With ExecOptions::on_line: complete stdout lines not yet handed to the hook.
  bool split_lines = false;
  std::string partial;
  std::vector<std::string> lines;

  void Append(std::string& to, std::string_view chunk) {
    std::size_t room = cap > to.size() ? cap - to.size() : 0;
    if (chunk.size() > room) {
      cap_hit = true;
      chunk = chunk.substr(0, room);
    }
    to.append(chunk);
  }
};

int OnData(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr, void* user) {
  auto* st = static_cast<ExecState*>(user);
  std::string_view chunk(static_cast<const char*>(data), len);
  if (is_stderr == 0) {
    st->Append(st->out, chunk);
    if (st->split_lines) {
      st->partial.append(chunk);
      for (std::size_t nl; (nl = st->partial.find('\n')) != std::string::npos;) {
        st->lines.push_back(st->partial.substr(0, nl));
        st->partial.erase(0, nl + 1);
      }
      if (st->partial.size() > st->cap) st->cap_hit = true;
    }
    return static_cast<int>(len);
  }
  if (!st->strip_marker || st->marker_done) {
    st->Append(st->err, chunk);
    return static_cast<int>(len);
  }
  st->first_err_line.append(chunk);
  std::size_t nl = st->first_err_line.find('\n');
  if (nl == std::string::npos && st->first_err_line.size() < 64) return static_cast<int>(len);
  st->marker_done = true;
  std::string_view line(st->first_err_line);
  if (nl != std::string::npos) {
    if (auto pid = ParsePidMarker(line.substr(0, nl))) {
      st->pgid = pid;
      line = line.substr(nl + 1);
    }
  }
  st->Append(st->err, line);
  st->first_err_line.clear();
  return static_cast<int>(len);
}

void OnEof(ssh_session, ssh_channel, void* user) { static_cast<ExecState*>(user)->eof = true; }
void OnClose(ssh_session, ssh_channel, void* user) { static_cast<ExecState*>(user)->closed = true; }
void OnExitStatus(ssh_session, ssh_channel, int status, void* user) {
  auto* st = static_cast<ExecState*>(user);
  st->got_exit = true;
  st->exit_status = status;
}
void OnExitSignal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                  void* user) {
  auto* st = static_cast<ExecState*>(user);
  st->got_exit = true;
  st->signal = signal != nullptr ? signal : "?";
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:012x}", rng() & 0xffffffffffffULL);
}

class SshSession final : public Session {
 public:
  SshSession(Target target, SessionPtr session, std::chrono::seconds io_timeout)
      : target_(std::move(target)), s_(std::move(session)), io_timeout_(io_timeout) {}

  ~SshSession() override {
    sftp_.reset();
    if (ssh_is_connected(s_.get()) != 0) {
      SetTimeout(std::chrono::seconds(1));
      ssh_disconnect(s_.get());
    }
  }

  const Target& target() const override { return target_; }
  bool Alive() const override { return alive_ && ssh_is_connected(s_.get()) != 0; }

  Result<ExecResult> Exec(std::string_view command, const ExecOptions& o) override {
    bool sudo = o.sudo && target_.endpoint.user != "root";
    return Run(WrapCommand(command, sudo), o, sudo, /*stop_on_abort=*/true);
  }

  Status Upload(std::string_view content, const std::string& path,
                const UploadOptions& o) override {
    if (path.empty() || path[0] != '/') {
      return Error{fmt::format("node {}: upload to '{}': the path must be absolute", target_.node,
                               path)};
    }
    bool sudo = o.sudo && target_.endpoint.user != "root";
    if (sudo) return UploadByShell(content, path, o);
    return UploadBySftp(content, path, o);
  }

  Result<std::string> Download(const std::string& path, std::size_t cap) override {
    SetTimeout(io_timeout_);
    if (Status s = OpenSftp(); !s.ok()) return s.error();
    SftpFilePtr f(sftp_open(sftp_.get(), path.c_str(), O_RDONLY, 0));
    if (!f) return SftpError("download", path);
    std::string out;
    char buf[32768];
    for (;;) {
      ssize_t n = sftp_read(f.get(), buf, sizeof buf);
      if (n < 0) return SftpError("download", path);
      if (n == 0) break;
      if (out.size() + static_cast<std::size_t>(n) > cap) {
        return Error{fmt::format("node {}: download {}: larger than the cap of {} bytes",
                                 target_.node, path, cap)};
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  void SetTimeout(std::chrono::seconds s) {
    long secs = std::max<long>(1, static_cast<long>(s.count()));
    ssh_options_set(s_.get(), SSH_OPTIONS_TIMEOUT, &secs);
  }

  Error Lost(std::string_view what) {
    alive_ = false;
    return Error{fmt::format("node {}: connection lost {}: {}", target_.node, what,
                             ssh_get_error(s_.get()))};
  }

  // Runs the wire command; on a timeout, cap or cancel stops the remote process group.
  Result<ExecResult> Run(const std::string& wire, const ExecOptions& o, bool sudo,
                         bool stop_on_abort) {
    if (!Alive()) {
      return Error{fmt::format("node {}: the connection was lost earlier in this run",
                               target_.node)};
    }
    const auto start = Clock::now();
    const auto deadline = start + o.timeout;
    auto remaining = [&] {
      return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    };
    SetTimeout(std::chrono::duration_cast<std::chrono::seconds>(
        std::min<milliseconds>(remaining() + std::chrono::seconds(1), io_timeout_)));

    ChannelPtr ch(ssh_channel_new(s_.get()));
    if (!ch) return Lost("opening a channel");
    if (ssh_channel_open_session(ch.get()) != SSH_OK) {
      if (ssh_is_connected(s_.get()) == 0) return Lost("opening a channel");
      return Error{fmt::format("node {}: the server refused a session channel: {}", target_.node,
                               ssh_get_error(s_.get()))};
    }
    ExecState st;
    st.cap = o.output_cap;
    st.strip_marker = stop_on_abort;
    st.split_lines = static_cast<bool>(o.on_line);
    ssh_channel_callbacks_struct cb{};
    cb.userdata = &st;
    cb.channel_data_function = OnData;
    cb.channel_eof_function = OnEof;
    cb.channel_close_function = OnClose;
    cb.channel_exit_status_function = OnExitStatus;
    cb.channel_exit_signal_function = OnExitSignal;
    ssh_callbacks_init(&cb);
    ssh_set_channel_callbacks(ch.get(), &cb);
    // Whatever happens below, libssh must not call into `st` after this frame.
    struct Unhook {
      ssh_channel c;
      ssh_channel_callbacks cb;
      ~Unhook() { ssh_remove_channel_callbacks(c, cb); }
    } unhook{ch.get(), &cb};

    if (o.cancel != nullptr && o.cancel->load()) {
      ExecResult r;
      r.end = ExecEnd::kCancelled;
      return r;  // interrupted before the command was sent: nothing ran
    }
    if (ssh_channel_request_exec(ch.get(), wire.c_str()) != SSH_OK) {
      if (ssh_is_connected(s_.get()) == 0) return Lost("starting a command");
      return Error{fmt::format("node {}: the server refused to run a command: {}", target_.node,
                               ssh_get_error(s_.get()))};
    }
    auto send = [&](std::string_view text) {
      for (std::size_t sent = 0; sent < text.size();) {
        int n = ssh_channel_write(ch.get(), text.data() + sent,
                                  static_cast<uint32_t>(std::min<std::size_t>(text.size() - sent, 64 * 1024)));
        if (n == SSH_ERROR) return false;
        sent += static_cast<std::size_t>(n);
      }
      return true;
    };
    if (!send(o.input)) return Lost("sending stdin");
    bool stdin_open = static_cast<bool>(o.on_line);
    if (!stdin_open) ssh_channel_send_eof(ch.get());

    EventPtr ev(ssh_event_new());
    if (!ev || ssh_event_add_session(ev.get(), s_.get()) != SSH_OK) {
      return Error{fmt::format("node {}: cannot poll the connection", target_.node)};
    }
    ExecEnd end = ExecEnd::kExited;
    bool lost = false;
    while (!(st.closed || (st.got_exit && st.eof))) {
      if (o.cancel != nullptr && o.cancel->load()) {
        end = ExecEnd::kCancelled;
        break;
      }
      if (st.cap_hit) {
        end = ExecEnd::kOutputCap;
        break;
      }
      milliseconds left = remaining();
      if (left.count() <= 0) {
        end = ExecEnd::kTimedOut;
        break;
      }
      int rc = ssh_event_dopoll(ev.get(), static_cast<int>(std::min<long>(left.count(), 100)));
      if (rc == SSH_ERROR || ssh_is_connected(s_.get()) == 0) {
        lost = true;
        break;
      }
      // The hook runs here, outside libssh's callbacks, so that it may block and write.
      while (!st.lines.empty() && !lost) {
        std::string line = std::move(st.lines.front());
        st.lines.erase(st.lines.begin());
        std::optional<std::string> reply = o.on_line(line);
        if (!stdin_open) continue;
        if (!reply) {
          ssh_channel_send_eof(ch.get());
          stdin_open = false;
        } else if (!reply->empty() && !send(*reply)) {
          lost = true;
        }
      }
      if (lost) break;
    }
    ssh_event_remove_session(ev.get(), s_.get());
    if (lost) return Lost("while a command ran");

    ExecResult r;
    r.out = std::move(st.out);
    r.err = std::move(st.err);
    if (!st.marker_done) r.err += st.first_err_line;
    r.end = end;
    if (end == ExecEnd::kExited) {
      if (!st.signal.empty()) {
        r.end = ExecEnd::kSignalled;
        r.signal = st.signal;
      } else {
        r.exit_status = st.exit_status;
      }
    } else if (stop_on_abort) {
      r.remote_stopped = StopRemote(ch.get(), st.pgid, sudo);
    }
    r.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    return r;
  }

  // After a timeout, cap or cancel: signal the channel, then kill the process group over a
  // fresh channel. A link that is gone makes this fail fast and leaves the session dead.
  bool StopRemote(ssh_channel ch, std::optional<long> pgid, bool sudo) {
    ssh_channel_request_send_signal(ch, "TERM");
    ssh_channel_close(ch);
    if (!pgid) return false;
    ExecOptions o;
    o.timeout = std::chrono::seconds(4);
    o.output_cap = 4096;
    Result<ExecResult> stop = Run(StopGroupScript(*pgid, sudo), o, sudo, false);
    bool ok = stop.ok() && stop->Succeeded();
    if (!ok) alive_ = false;
    return ok;
  }

  Status OpenSftp() {
    if (sftp_) return Status::Ok();
    SftpPtr sftp(sftp_new(s_.get()));
    if (!sftp) {
      return Error{fmt::format("node {}: cannot open an SFTP session: {}", target_.node,
                               ssh_get_error(s_.get()))};
    }
    if (sftp_init(sftp.get()) != SSH_OK) {
      return Error{fmt::format("node {}: the SFTP subsystem failed to start: {}", target_.node,
                               ssh_get_error(s_.get()))};
    }
    sftp_ = std::move(sftp);
    return Status::Ok();
  }

  Error SftpError(std::string_view what, const std::string& path) {
    int code = sftp_ ? sftp_get_error(sftp_.get()) : -1;
    std::string why;
    switch (code) {
      case SSH_FX_NO_SUCH_FILE: why = "no such file or directory"; break;
      case SSH_FX_PERMISSION_DENIED: why = "permission denied"; break;
      case SSH_FX_FAILURE: why = "failure (disk full, or the path is a directory?)"; break;
      default: why = ssh_get_error(s_.get()); break;
    }
    if (ssh_is_connected(s_.get()) == 0) alive_ = false;
    return Error{fmt::format("node {}: {} {}: {}", target_.node, what, path, why)};
  }

  Status UploadBySftp(std::string_view content, const std::string& path, const UploadOptions& o) {
    SetTimeout(io_timeout_);
    if (Status s = OpenSftp(); !s.ok()) return s;
    const std::string tmp = TemporarySibling(path, RandomSuffix());
    auto fail = [&](std::string_view what) {
      Error e = SftpError(what, tmp);
      if (sftp_) sftp_unlink(sftp_.get(), tmp.c_str());
      return e;
    };
    {
      SftpFilePtr f(sftp_open(sftp_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL,
                              static_cast<mode_t>(o.mode & 07777)));
      if (!f) return SftpError(fmt::format("upload {}: cannot create", path), tmp);
      for (std::size_t sent = 0; sent < content.size();) {
        std::size_t n = std::min<std::size_t>(content.size() - sent, 32768);
        ssize_t w = sftp_write(f.get(), content.data() + sent, n);
        if (w < 0 || static_cast<std::size_t>(w) != n) return fail("upload: writing");
        sent += n;
      }
      if (sftp_extension_supported(sftp_.get(), "fsync@openssh.com", "1") != 0 &&
          sftp_fsync(f.get()) != 0) {
        return fail("upload: fsync of");
      }
    }
    // The server's umask may have trimmed the mode given at create.
    if (sftp_chmod(sftp_.get(), tmp.c_str(), static_cast<mode_t>(o.mode & 07777)) != 0) {
      return fail("upload: chmod of");
    }
    // SFTP v3 rename refuses to replace an existing file, and libssh 0.10 does not send
    // OpenSSH's posix-rename extension; mv -fT in the same directory is rename(2), atomic, and -T never moves the file into a directory planted at the path.
    // What SFTP wrote is checked by size and digest on the node before it goes into place: a
    // write the server took short, or a link cut mid-file, installs nothing.
    std::string finish = fmt::format("{{ {}; }} && mv -fT {} {}", VerifyUploadScript(ShellQuote(tmp), UploadDigest::Of(content)),
                                     ShellQuote(tmp), ShellQuote(path));
    if (!o.owner.empty()) finish = fmt::format("chown {} {} && {}", ShellQuote(o.owner), ShellQuote(tmp), finish);
    ExecOptions eo;
    eo.timeout = io_timeout_;
    Result<ExecResult> r = Exec(finish, eo);
    if (!r.ok() || !r->Succeeded()) {
      if (Alive()) sftp_unlink(sftp_.get(), tmp.c_str());
      std::string why = r.ok() ? r->err : r.error().message;
      while (!why.empty() && why.back() == '\n') why.pop_back();
      bool owner_failed = !o.owner.empty() && why.find("chown:") != std::string::npos;
      return Error{fmt::format("node {}: upload {}: {}: {}", target_.node, path,
                               owner_failed ? "cannot set owner " + o.owner
                                            : std::string("cannot move the new file into place"),
                               why)};
    }
    return Status::Ok();
  }

  Status UploadByShell(std::string_view content, const std::string& path, const UploadOptions& o) {
    ExecOptions eo;
    eo.timeout = io_timeout_;
    eo.input = std::string(content);
    eo.sudo = true;
    Result<ExecResult> r = Exec(AtomicWriteScript(path, o.mode & 07777, o.owner, UploadDigest::Of(content)), eo);
    if (!r.ok()) return r.error();
    if (!r->Succeeded()) {
      return Error{fmt::format("node {}: upload {} through sudo: {}: {}", target_.node, path,
                               DescribeEnd(*r, eo), r->err)};
    }
    return Status::Ok();
  }

  Target target_;
  SessionPtr s_;
  std::chrono::seconds io_timeout_;
  SftpPtr sftp_;
  bool alive_ = true;
};

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
      std::error_code ec;
      if (!std::filesystem::exists(config_, ec)) {
        return Error{fmt::format("ssh config {} does not exist", config_)};
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
      ssh_options_set(s.get(), SSH_OPTIONS_ADD_IDENTITY, id.c_str());
    }
    if (t.jump) {
      std::string cmd = JumpCommand(t);
      ssh_options_set(s.get(), SSH_OPTIONS_PROXYCOMMAND, cmd.c_str());
    }

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
    return std::unique_ptr<Session>(
        std::make_unique<SshSession>(std::move(reached), std::move(s), std::chrono::seconds(30)));
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
