#include "gpuforge/remote/local.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <thread>

#include "remote/command.h"

namespace gpuforge::remote {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

std::string SignalName(int sig) {
  if (const char* abbrev = sigabbrev_np(sig); abbrev != nullptr) return abbrev;
  return std::to_string(sig);
}

// Stops a process group: TERM, up to 2 s, then KILL. Returns once it is gone or after KILL.
void StopGroup(pid_t pgid, pid_t child, int* status, bool* reaped) {
  ::kill(-pgid, SIGTERM);
  const auto until = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < until) {
    if (!*reaped && ::waitpid(child, status, WNOHANG) == child) *reaped = true;
    if (*reaped && ::kill(-pgid, 0) != 0) return;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ::kill(-pgid, SIGKILL);
  if (!*reaped && ::waitpid(child, status, 0) == child) *reaped = true;
}

class LocalSession final : public Session {
 public:
  explicit LocalSession(Target target) : target_(std::move(target)) {}
  const Target& target() const override { return target_; }
  bool Alive() const override { return true; }

  Result<ExecResult> Exec(std::string_view command, const ExecOptions& o) override {
    const bool sudo = o.sudo && ::geteuid() != 0;
    ExecResult r;
    if (o.cancel != nullptr && o.cancel->load()) {
      r.end = ExecEnd::kCancelled;
      return r;  // nothing ran
    }
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return SysError("a pipe");
    Fd in_r(in[0]), in_w(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) return SysError("a pipe");
    Fd out_r(out[0]), out_w(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0) return SysError("a pipe");
    Fd err_r(err[0]), err_w(err[1]);

    const std::string cmd(command);
    const auto start = Clock::now();
    pid_t child = ::fork();
    if (child < 0) return SysError("fork");
    if (child == 0) {
      // A process group of its own, so that a timeout stops everything it started.
      ::setpgid(0, 0);
      ::dup2(in_r.get(), 0);
      ::dup2(out_w.get(), 1);
      ::dup2(err_w.get(), 2);
      ::signal(SIGPIPE, SIG_DFL);
      if (sudo) {
        ::execlp("sudo", "sudo", "-n", "/bin/sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      } else {
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      }
      ::_exit(127);
    }
    ::setpgid(child, child);  // both sides, so a fast kill cannot miss the group
    in_r.Close();
    out_w.Close();
    err_w.Close();
    ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);

    std::string pending_in = o.input;
    // What of pending_in is written already: erasing the front after every 64 KiB write moved
    // the rest each time, quadratic in the input (a 200 MB sanitizer-built agent took minutes
    // and timed out its upload).
    std::size_t pending_sent = 0;
    auto pending_left = [&] { return pending_in.size() - pending_sent; };
    bool stdin_open = true;
    const bool converse = static_cast<bool>(o.on_line);
    std::string partial;
    ExecEnd end = ExecEnd::kExited;
    bool out_open = true, err_open = true;
    auto close_stdin = [&] {
      in_w.Close();
      stdin_open = false;
    };
    auto append = [&](std::string& to, std::string_view chunk) {
      std::size_t room = o.output_cap > to.size() ? o.output_cap - to.size() : 0;
      if (chunk.size() > room) {
        end = ExecEnd::kOutputCap;
        chunk = chunk.substr(0, room);
      }
      to.append(chunk);
    };
    const auto deadline = start + o.timeout;
    while (out_open || err_open) {
      if (stdin_open && pending_left() == 0 && !converse) close_stdin();
      if (o.cancel != nullptr && o.cancel->load()) {
        end = ExecEnd::kCancelled;
        break;
      }
      if (end == ExecEnd::kOutputCap) break;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        end = ExecEnd::kTimedOut;
        break;
      }
      std::array<pollfd, 3> p{};
      p[0] = {out_open ? out_r.get() : -1, POLLIN, 0};
      p[1] = {err_open ? err_r.get() : -1, POLLIN, 0};
      p[2] = {stdin_open && pending_left() != 0 ? in_w.get() : -1, POLLOUT, 0};
      int rc = ::poll(p.data(), p.size(), static_cast<int>(std::min<long>(left.count(), 100)));
      if (rc < 0 && errno != EINTR) return SysError("poll");
      char buf[65536];
      for (int i = 0; i < 2; ++i) {
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        ssize_t n = ::read(p[i].fd, buf, sizeof buf);
        if (n <= 0) {
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          (i == 0 ? out_open : err_open) = false;
          continue;
        }
        std::string_view chunk(buf, static_cast<std::size_t>(n));
        append(i == 0 ? r.out : r.err, chunk);
        if (i == 0 && converse) partial.append(chunk);
      }
      if (p[2].fd >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
        ssize_t n = ::write(in_w.get(), pending_in.data() + pending_sent, pending_left());
        if (n > 0) pending_sent += static_cast<std::size_t>(n);
        if (pending_left() == 0) {
          pending_in.clear();
          pending_sent = 0;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) close_stdin();  // the command stopped reading
      }
      // The hook runs between polls, so that it may block (a barrier across nodes).
      for (std::size_t nl; converse && (nl = partial.find('\n')) != std::string::npos;) {
        std::string line = partial.substr(0, nl);
        partial.erase(0, nl + 1);
        std::optional<std::string> reply = o.on_line(line);
        if (!stdin_open) continue;
        if (!reply) {
          pending_in.clear();
          pending_sent = 0;
          close_stdin();
        } else {
          pending_in += *reply;
        }
      }
    }
    if (stdin_open) close_stdin();
    int status = 0;
    bool reaped = false;
    // Output closed but the command may still run (it closed its streams): wait to the deadline.
    while (end == ExecEnd::kExited && !reaped) {
      if (::waitpid(child, &status, WNOHANG) == child) {
        reaped = true;
      } else if (o.cancel != nullptr && o.cancel->load()) {
        end = ExecEnd::kCancelled;
      } else if (Clock::now() >= deadline) {
        end = ExecEnd::kTimedOut;
      } else {
        std::this_thread::sleep_for(milliseconds(10));
      }
    }
    if (end != ExecEnd::kExited) StopGroup(child, child, &status, &reaped);
    if (!reaped) {
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
    }
    r.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    r.end = end;
    if (end == ExecEnd::kExited) {
      if (WIFSIGNALED(status)) {
        r.end = ExecEnd::kSignalled;
        r.signal = SignalName(WTERMSIG(status));
      } else {
        r.exit_status = WEXITSTATUS(status);
      }
    }
    return r;
  }

  Status Upload(std::string_view content, const std::string& path, const UploadOptions& o) override {
    if (path.empty() || path[0] != '/') {
      return Error{fmt::format("node {} (local): upload to '{}': the path must be absolute", target_.node, path)};
    }
    ExecOptions eo;
    eo.input = std::string(content);
    eo.sudo = o.sudo;
    eo.timeout = std::chrono::seconds(120);
    Result<ExecResult> r = Exec(AtomicWriteScript(path, o.mode & 07777, o.owner, UploadDigest::Of(content)), eo);
    if (!r.ok()) return r.error();
    if (!r->Succeeded()) {
      std::string why = r->err;
      while (!why.empty() && why.back() == '\n') why.pop_back();
      return Error{fmt::format("node {} (local): upload {}: {} ({})", target_.node, path, why, DescribeEnd(*r, eo))};
    }
    return Status::Ok();
  }

  Result<std::string> Download(const std::string& path, std::size_t cap) override {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{fmt::format("node {} (local): download {}: {}", target_.node, path, std::strerror(errno))};
    std::string out;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      if (out.size() + static_cast<std::size_t>(in.gcount()) > cap) {
        return Error{fmt::format("node {} (local): download {}: larger than the cap of {} bytes", target_.node, path, cap)};
      }
      out.append(buf, static_cast<std::size_t>(in.gcount()));
    }
    return out;
  }

 private:
  Error SysError(std::string_view what) const {
    return Error{fmt::format("node {} (local): cannot start a command: {}: {}", target_.node, what, std::strerror(errno))};
  }
  Target target_;
};

class LocalConnector final : public Connector {
 public:
  Result<std::unique_ptr<Session>> Connect(const Target& target) override {
    return std::unique_ptr<Session>(std::make_unique<LocalSession>(target));
  }
};

}  // namespace

std::unique_ptr<Connector> MakeLocalConnector() {
  IgnoreSigpipe();
  return std::make_unique<LocalConnector>();
}

}  // namespace gpuforge::remote
