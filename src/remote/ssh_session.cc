#include <fcntl.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "remote/command.h"
#include "remote/ssh_internal.h"

namespace gpuforge::remote::ssh_internal {
namespace {

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

}  // namespace

std::unique_ptr<Session> MakeSession(Target target, SessionPtr session, std::chrono::seconds io_timeout) {
  return std::make_unique<SshSession>(std::move(target), std::move(session), io_timeout);
}

}  // namespace gpuforge::remote::ssh_internal
