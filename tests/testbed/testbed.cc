#include "testbed/testbed.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

extern char** environ;

namespace gpuforge::testbed {
namespace {

const std::string kScript = std::string(GPUFORGE_SOURCE_DIR) + "/tests/testbed/testbed.sh";

// The script's exit code for "cannot be done on this machine".
constexpr int kUnsupported = 3;

std::string Errno(std::string_view what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// posix_spawn's file actions, closed on every path out.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&fa_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&fa_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &fa_; }

 private:
  posix_spawn_file_actions_t fa_;
};

class SpawnAttr {
 public:
  SpawnAttr() { posix_spawnattr_init(&attr_); }
  ~SpawnAttr() { posix_spawnattr_destroy(&attr_); }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
  posix_spawnattr_t* get() { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// Runs argv with its output collected; `fd3`, when not -1, becomes the child's fd 3.
Result<CommandOutput> Spawn(const std::vector<std::string>& argv, int fd3,
                            std::chrono::seconds timeout) {
  if (argv.empty()) return Error{"Run: empty command"};
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error{Errno("pipe2")};
  Fd out_r(p[0]);
  Fd out_w(p[1]);
  // dup2 onto the same number would leave FD_CLOEXEC set on some C libraries.
  Fd fd3_copy(fd3 >= 0 ? ::fcntl(fd3, F_DUPFD_CLOEXEC, 10) : -1);
  if (fd3 >= 0 && fd3_copy.get() < 0) return Error{Errno("fcntl")};

  FileActions fa;
  posix_spawn_file_actions_addopen(fa.get(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(fa.get(), out_w.get(), 1);
  posix_spawn_file_actions_adddup2(fa.get(), out_w.get(), 2);
  if (fd3_copy.get() >= 0) posix_spawn_file_actions_adddup2(fa.get(), fd3_copy.get(), 3);
  SpawnAttr attr;
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGCHLD);
  posix_spawnattr_setsigmask(attr.get(), &none);
  posix_spawnattr_setsigdefault(attr.get(), &defaults);
  posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], fa.get(), attr.get(), args.data(), environ);
  out_w.reset();
  fd3_copy.reset();
  if (rc != 0) return Error{fmt::format("cannot run {}: {}", argv[0], std::strerror(rc))};

  CommandOutput result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{out_r.get(), POLLIN, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (n == 0) continue;
    ssize_t got = ::read(out_r.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    result.output.append(buf, static_cast<std::size_t>(got));
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Error{fmt::format("{} did not finish within {}s; it printed: {}", argv[0],
                             timeout.count(), Trim(result.output))};
  }
  result.exit_code = ExitCode(status);
  return result;
}

bool Executable(std::string_view tool) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    if (::access(fmt::format("{}/{}", dir, tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool ParseInt(std::string_view s, int* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

Result<std::vector<Host>> ReadHosts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{fmt::format("cannot read {}", path)};
  std::vector<Host> hosts;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, '\t');) f.push_back(field);
    Host h;
    if (f.size() != 5 || !ParseInt(f[2], &h.port) || !ParseInt(f[3], &h.pid)) {
      return Error{fmt::format("{}:{}: expected name, address, port, pid, link", path, line_no)};
    }
    h.name = f[0];
    h.address = f[1];
    h.link = f[4] == "-" ? "" : f[4];
    hosts.push_back(std::move(h));
  }
  return hosts;
}

}  // namespace

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 std::chrono::seconds timeout) {
  return Spawn(argv, -1, timeout);
}

bool Available(std::string* why) {
  auto no = [why](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (::geteuid() != 0) {
    return no(fmt::format("the testbed needs root for its mounts and namespaces (uid is {})",
                          ::geteuid()));
  }
  std::ifstream fs("/proc/filesystems");
  std::string text((std::istreambuf_iterator<char>(fs)), std::istreambuf_iterator<char>());
  if (text.find("\toverlay\n") == std::string::npos) return no("this kernel has no overlayfs");
  for (const char* tool : {"sshd", "ssh", "ssh-keygen", "unshare", "nsenter", "pivot_root", "ip",
                           "perl", "flock", "setsid"}) {
    if (!Executable(tool)) return no(fmt::format("{} is not installed", tool));
  }
  if (::access(kScript.c_str(), R_OK) != 0) return no(fmt::format("{} is missing", kScript));
  Result<CommandOutput> probe = RunCommand({"unshare", "--mount", "--pid", "--uts", "--net",
                                            "--fork", "--propagation", "private", "true"},
                                           std::chrono::seconds(20));
  if (!probe.ok()) return no(probe.error().message);
  if (probe->exit_code != 0) {
    return no(fmt::format("cannot create namespaces here: {}", Trim(probe->output)));
  }
  return true;
}

Result<Testbed> Testbed::Start(const Options& options) {
  if (options.hosts < 1) return Error{"a testbed needs at least one host"};
  std::string dir = options.dir;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        fmt::format("{}/gpuforge-testbed-XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
    if (::mkdtemp(pattern.data()) == nullptr)
      return Error{Errno(fmt::format("mkdtemp {}", pattern))};
    dir = pattern;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error{Errno("pipe2")};
  Fd lifeline_r(p[0]);
  Fd lifeline_w(p[1]);

  std::vector<std::string> argv = {kScript,         "up",
                                   "--dir",         dir,
                                   "--hosts",       std::to_string(options.hosts),
                                   "--port",        std::to_string(options.port),
                                   "--lifeline-fd", "3"};
  if (options.netns) argv.push_back("--netns");
  if (!options.stand_in_gpu_dir.empty()) {
    argv.push_back("--stand-in-gpu");
    argv.push_back(options.stand_in_gpu_dir);
  }
  Result<CommandOutput> up = Spawn(argv, lifeline_r.get(), std::chrono::seconds(300));
  lifeline_r.reset();
  if (!up.ok()) {
    lifeline_w.reset();
    RunCommand({kScript, "down", "--dir", dir});
    return up.error();
  }
  if (up->exit_code != 0) {
    return Error{
        fmt::format("testbed.sh up failed (exit {}): {}", up->exit_code, Trim(up->output))};
  }

  Testbed tb;
  tb.paths_ = Paths{.dir = dir,
                    .identity = dir + "/id_ed25519",
                    .known_hosts = dir + "/known_hosts",
                    .ssh_config = dir + "/ssh_config",
                    .inventory = dir + "/inventory.yaml",
                    .hosts_tsv = dir + "/hosts.tsv"};
  tb.netns_ = options.netns;
  tb.lifeline_ = lifeline_w.release();
  Result<std::vector<Host>> hosts = ReadHosts(tb.paths_.hosts_tsv);
  if (!hosts.ok()) return hosts.error();  // tb's destructor takes the hosts down
  tb.hosts_ = std::move(hosts).value();
  return Result<Testbed>(std::move(tb));
}

Testbed::Testbed(Testbed&& other) noexcept
    : paths_(std::move(other.paths_)),
      hosts_(std::move(other.hosts_)),
      netns_(other.netns_),
      lifeline_(std::exchange(other.lifeline_, -1)) {
  other.paths_.dir.clear();
}

Testbed& Testbed::operator=(Testbed&& other) noexcept {
  if (this != &other) {
    Stop();
    paths_ = std::move(other.paths_);
    hosts_ = std::move(other.hosts_);
    netns_ = other.netns_;
    lifeline_ = std::exchange(other.lifeline_, -1);
    other.paths_.dir.clear();
  }
  return *this;
}

Testbed::~Testbed() { Stop(); }

Status Testbed::Stop() {
  if (paths_.dir.empty()) return Status::Ok();
  Result<CommandOutput> down = RunCommand({kScript, "down", "--dir", paths_.dir});
  // Closing the lifeline after down: the watcher would otherwise race it.
  if (lifeline_ >= 0) ::close(std::exchange(lifeline_, -1));
  std::string dir = std::exchange(paths_.dir, "");
  hosts_.clear();
  if (!down.ok()) return down.error();
  if (down->exit_code != 0) {
    return Error{fmt::format("testbed.sh down --dir {} failed (exit {}): {}", dir, down->exit_code,
                             Trim(down->output))};
  }
  return Status::Ok();
}

std::vector<std::string> Testbed::SshArgv(std::size_t i, std::string_view user,
                                          std::string_view command) const {
  return {"ssh",
          "-F",
          paths_.ssh_config,
          "-l",
          std::string(user),
          hosts_.at(i).name,
          std::string(command)};
}

Status Testbed::HostCommand(std::string_view verb, std::size_t i,
                            const std::vector<std::string>& extra, bool* unsupported) {
  if (unsupported != nullptr) *unsupported = false;
  if (i >= hosts_.size()) {
    return Error{fmt::format("{}: no host {} (the testbed has {})", verb, i, hosts_.size())};
  }
  std::vector<std::string> argv = {kScript, std::string(verb), paths_.dir, std::to_string(i + 1)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Result<CommandOutput> out = RunCommand(argv);
  if (!out.ok()) return out.error();
  if (out->exit_code == kUnsupported && unsupported != nullptr) *unsupported = true;
  if (out->exit_code != 0) {
    return Error{fmt::format("testbed.sh {} {} failed (exit {}): {}", verb, hosts_[i].name,
                             out->exit_code, Trim(out->output))};
  }
  return Status::Ok();
}

Status Testbed::StopHost(std::size_t i) { return HostCommand("stop-host", i, {}, nullptr); }
Status Testbed::StartHost(std::size_t i) { return HostCommand("start-host", i, {}, nullptr); }
Status Testbed::HangHost(std::size_t i) { return HostCommand("hang-host", i, {}, nullptr); }
Status Testbed::CutLink(std::size_t i) { return HostCommand("cut-link", i, {}, nullptr); }
Status Testbed::RestoreLink(std::size_t i) { return HostCommand("restore-link", i, {}, nullptr); }

Status Testbed::Delay(std::size_t i, std::chrono::milliseconds delay, bool* unsupported) {
  return HostCommand("delay", i, {std::to_string(delay.count())}, unsupported);
}

}  // namespace gpuforge::testbed
