// The SSH layer against real OpenSSH servers: local test hosts from tests/testbed (each a
// clone of this machine in its own namespaces running sshd). Nothing here is mocked.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "remote/command.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/ssh.h"
#include "testbed/fixture.h"

namespace gpuforge::remote {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Each test brings up the hosts it needs (`if (!Bring(n)) return;`: skipped where this
// machine cannot run a testbed).
class SshE2e : public testbed::TestbedTest {
 protected:
  Target TargetOf(std::size_t i, const std::string& user = "root") const {
    const testbed::Host& h = tb_->hosts()[i];
    Target t;
    t.node = h.name;
    t.endpoint = {h.address, h.port, user};
    t.identity_file = tb_->paths().identity;
    return t;
  }

  SshOptions Options() const {
    SshOptions o;
    o.known_hosts = tb_->paths().known_hosts;
    o.config_file = "none";
    o.connect_timeout = 3s;
    return o;
  }

  std::unique_ptr<Session> Connect(std::size_t i, const std::string& user = "root") {
    Result<std::unique_ptr<Session>> s = MakeSshConnector(Options())->Connect(TargetOf(i, user));
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? std::move(*s) : nullptr;
  }

  static ExecResult Must(Result<ExecResult> r) {
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? std::move(*r) : ExecResult{};
  }
};

TEST_F(SshE2e, RunsCommandsAsRootAndAsAUserWithSudo) {
  if (!Bring(1)) return;
  auto root = Connect(0);
  ASSERT_TRUE(root);
  ExecResult r = Must(root->Exec("id -un; echo out; echo err >&2; exit 3", {}));
  EXPECT_EQ(r.end, ExecEnd::kExited);
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.out, "root\nout\n");
  EXPECT_EQ(r.err, "err\n");  // the wrapper's pid line is not part of it

  auto user = Connect(0, "gpuforge");
  ASSERT_TRUE(user);
  EXPECT_EQ(Must(user->Exec("id -un", {})).out, "gpuforge\n");
  ExecOptions sudo;
  sudo.sudo = true;
  ExecResult s = Must(user->Exec("id -u; printf '%s' \"$0\"", sudo));
  EXPECT_TRUE(s.Succeeded()) << s.err;
  EXPECT_EQ(s.out, "0\n/bin/sh");
}

TEST_F(SshE2e, StdinReachesTheCommandAndQuotingSurvives) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  ExecOptions o;
  o.input = std::string("line 'one'\n$(nothing)\n") + std::string(200000, 'x');
  ExecResult r = Must(s->Exec("wc -c; printf '%s\\n' \"it's\" '$HOME'", o));
  EXPECT_TRUE(r.Succeeded()) << r.err;
  EXPECT_EQ(r.out, fmt::format("{}\nit's\n$HOME\n", o.input.size()));
}

// The agent's exchange rides on this: a line out, an answer in, more lines, then EOF on close.
TEST_F(SshE2e, AConversingCommandGetsAnswersToItsLinesAndEofWhenClosed) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  ExecOptions o;
  std::vector<std::string> seen;
  o.on_line = [&](std::string_view line) -> std::optional<std::string> {
    seen.emplace_back(line);
    if (line == "first?") return std::string("one\n");
    if (line == "second?") return std::nullopt;  // closes stdin
    return std::string();
  };
  ExecResult r = Must(s->Exec(
      "echo 'first?'; read a; echo \"got $a\"; echo 'second?'; if read b; then echo \"more $b\"; else echo eof; fi", o));
  EXPECT_TRUE(r.Succeeded()) << r.err;
  EXPECT_EQ(r.out, "first?\ngot one\nsecond?\neof\n");
  EXPECT_EQ(seen, (std::vector<std::string>{"first?", "got one", "second?", "eof"}));
}

TEST_F(SshE2e, UnknownHostKeyIsRefusedWithItsFingerprint) {
  if (!Bring(1)) return;
  fs::path empty = tb_->paths().dir + "/empty_known_hosts";
  std::ofstream(empty).close();
  SshOptions o = Options();
  o.known_hosts = empty.string();
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(TargetOf(0));
  ASSERT_FALSE(s.ok());
  const std::string& m = s.error().message;
  const testbed::Host& h = tb_->hosts()[0];
  EXPECT_TRUE(m.starts_with(fmt::format("node {}: unknown host key for {}: ssh-ed25519 SHA256:", h.name, h.address)))
      << m;
  EXPECT_NE(m.find("--accept-new-host-keys"), std::string::npos) << m;
  EXPECT_NE(m.find(fmt::format("ssh-keyscan -p {} {} >> {}", h.port, h.address, empty.string())), std::string::npos)
      << m;

  // accept-new adds it, and the next connection without the flag is accepted.
  o.accept_new_host_keys = true;
  ASSERT_TRUE(MakeSshConnector(o)->Connect(TargetOf(0)).ok());
  std::ifstream in(empty);
  std::string written((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(written.starts_with(h.address + " ssh-ed25519 ")) << written;
  o.accept_new_host_keys = false;
  EXPECT_TRUE(MakeSshConnector(o)->Connect(TargetOf(0)).ok());
}

TEST_F(SshE2e, AChangedHostKeyIsAHardErrorEvenWithAcceptNew) {
  if (!Bring(2)) return;
  // Host 1's key recorded under host 0's address: what a reinstalled node looks like.
  std::ifstream in(tb_->paths().known_hosts);
  std::string line, other;
  const testbed::Host& h0 = tb_->hosts()[0];
  const testbed::Host& h1 = tb_->hosts()[1];
  while (std::getline(in, line)) {
    if (line.starts_with(h1.address + " ")) other = line.substr(h1.address.size());
  }
  ASSERT_FALSE(other.empty());
  fs::path kh = tb_->paths().dir + "/changed_known_hosts";
  std::ofstream(kh) << h0.address << other << "\n";
  SshOptions o = Options();
  o.known_hosts = kh.string();
  o.accept_new_host_keys = true;
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(TargetOf(0));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.error().message.starts_with(fmt::format("node {}: HOST KEY CHANGED for {}: it now presents ssh-ed25519 SHA256:",
                                                        h0.name, h0.address)))
      << s.error().message;
  EXPECT_NE(s.error().message.find(fmt::format("ssh-keygen -R '{}' -f {}", h0.address, kh.string())), std::string::npos);
}

// The host's own line from the testbed's known_hosts, without the host field: " TYPE KEY".
std::string KeyPartOf(const std::string& known_hosts, const std::string& address) {
  std::ifstream in(known_hosts);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(address + " ")) return line.substr(address.size());
  }
  return "";
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// libssh 0.10 reads a host whose line it cannot parse as "not found", so accept-new used to
// append the presented key, changed or not (issue #12, item 4).
TEST_F(SshE2e, AnUnreadableKnownHostsLineRefusesEvenWithAcceptNew) {
  if (!Bring(2)) return;
  const testbed::Host& h0 = tb_->hosts()[0];
  const testbed::Host& h1 = tb_->hosts()[1];
  std::string other = KeyPartOf(tb_->paths().known_hosts, h1.address);
  ASSERT_FALSE(other.empty());
  // Host 1's key under host 0's address (a changed key), cut short as a full disk leaves it.
  fs::path kh = tb_->paths().dir + "/truncated_known_hosts";
  const std::string text = "# kept by hand\n" + h0.address + other.substr(0, other.size() - 21) + "\n";
  std::ofstream(kh) << text;
  SshOptions o = Options();
  o.known_hosts = kh.string();
  o.accept_new_host_keys = true;
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(TargetOf(0));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, fmt::format("node {}: {}:2: unreadable known_hosts line: the key is not valid base64 "
                                           "(truncated?). Fix or remove it (gpuforge trusts no host key while a "
                                           "line cannot be read)",
                                           h0.name, kh.string()));
  EXPECT_EQ(Slurp(kh), text) << "nothing may be appended";
}

TEST_F(SshE2e, ARevokedHostKeyIsRefusedAndNeverRecorded) {
  if (!Bring(1)) return;
  const testbed::Host& h = tb_->hosts()[0];
  std::string own = KeyPartOf(tb_->paths().known_hosts, h.address);
  ASSERT_FALSE(own.empty());
  fs::path kh = tb_->paths().dir + "/revoked_known_hosts";
  const std::string text = "@revoked *" + own + "\n";
  std::ofstream(kh) << text;
  SshOptions o = Options();
  o.known_hosts = kh.string();
  o.accept_new_host_keys = true;
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(TargetOf(0));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, fmt::format("node {}: WARNING: REVOKED HOST KEY DETECTED! The ssh-ed25519 host key for "
                                           "{} is marked as revoked ({}:1). This could mean that a stolen key is "
                                           "being used to impersonate this host",
                                           h.name, h.address, kh.string()));
  EXPECT_EQ(Slurp(kh), text);
  // Revoked even beside a line that lists the key as the host's.
  std::ofstream(kh) << h.address << own << "\n" << text;
  EXPECT_FALSE(MakeSshConnector(o)->Connect(TargetOf(0)).ok());
}

TEST_F(SshE2e, AWildcardOrHashedLineWithAnotherKeyIsAChangeNotANewHost) {
  if (!Bring(2)) return;
  const testbed::Host& h0 = tb_->hosts()[0];
  std::string other = KeyPartOf(tb_->paths().known_hosts, tb_->hosts()[1].address);
  ASSERT_FALSE(other.empty());
  SshOptions o = Options();
  o.accept_new_host_keys = true;
  fs::path kh = tb_->paths().dir + "/wild_known_hosts";
  o.known_hosts = kh.string();
  std::ofstream(kh) << "*" << other << "\n";
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(TargetOf(0));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.error().message.starts_with(fmt::format("node {}: HOST KEY CHANGED for {}", h0.name, h0.address)))
      << s.error().message;
  EXPECT_NE(s.error().message.find(kh.string() + ":1."), std::string::npos) << s.error().message;

  // The same through a name ssh-keygen -H hashed.
  std::ofstream(kh) << h0.address << other << "\n";
  auto hashed = testbed::RunCommand({"ssh-keygen", "-H", "-f", kh.string()});
  ASSERT_TRUE(hashed.ok() && hashed->exit_code == 0);
  ASSERT_TRUE(Slurp(kh).starts_with("|1|"));
  s = MakeSshConnector(o)->Connect(TargetOf(0));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.error().message.starts_with(fmt::format("node {}: HOST KEY CHANGED", h0.name))) << s.error().message;
  std::string after = Slurp(kh);
  EXPECT_EQ(std::count(after.begin(), after.end(), '\n'), 1) << "nothing may be appended";
}

// OpenSSL prompts for a PEM key's passphrase on the terminal when libssh gives it no callback
// (issue #12, item 5); now the key is skipped and the message says what to do.
TEST_F(SshE2e, AnEncryptedKeyIsNeverPromptedFor) {
  if (!Bring(1)) return;
  std::string key = tb_->paths().dir + "/encrypted";
  auto gen = testbed::RunCommand({"ssh-keygen", "-q", "-m", "PEM", "-t", "rsa", "-b", "2048", "-N", "a passphrase",
                                  "-f", key});
  ASSERT_TRUE(gen.ok() && gen->exit_code == 0);
  // The node accepts the key: libssh then loads the private half, which is where OpenSSL asked.
  {
    auto root = Connect(0);
    ASSERT_TRUE(root);
    ExecOptions add;
    add.input = Slurp(key + ".pub");
    ASSERT_TRUE(Must(root->Exec("cat >> /root/.ssh/authorized_keys", add)).Succeeded());
  }
  Target t = TargetOf(0);
  t.identity_file = key;
  std::string home = tb_->paths().dir + "/home-encrypted";
  fs::create_directories(home);
  const char* old_home = std::getenv("HOME");
  std::string saved_home = old_home != nullptr ? old_home : "";
  const char* old_agent = std::getenv("SSH_AUTH_SOCK");
  std::string saved_agent = old_agent != nullptr ? old_agent : "";
  ::setenv("HOME", home.c_str(), 1);
  ::unsetenv("SSH_AUTH_SOCK");
  Result<std::unique_ptr<Session>> s = MakeSshConnector(Options())->Connect(t);
  ::setenv("HOME", saved_home.c_str(), 1);
  if (old_agent != nullptr) ::setenv("SSH_AUTH_SOCK", saved_agent.c_str(), 1);
  ASSERT_FALSE(s.ok());
  const testbed::Host& h = tb_->hosts()[0];
  EXPECT_EQ(s.error().message,
            fmt::format("node {}: authentication refused for root@{}:{}: {} is an encrypted key, and gpuforge never "
                        "asks for a passphrase: load it into ssh-agent (`ssh-add '{}'`) and run again",
                        h.name, h.address, h.port, key, key));
}

TEST_F(SshE2e, AnUnknownKeyIsRefusedAuthentication) {
  if (!Bring(1)) return;
  std::string key = tb_->paths().dir + "/stranger";
  auto gen = testbed::RunCommand({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key});
  ASSERT_TRUE(gen.ok() && gen->exit_code == 0);
  Target t = TargetOf(0);
  t.identity_file = key;
  // No agent, and a HOME without keys: only the stranger's key is offered.
  std::string home = tb_->paths().dir + "/home";
  fs::create_directories(home);
  const char* old_home = std::getenv("HOME");
  std::string saved_home = old_home != nullptr ? old_home : "";
  const char* old_agent = std::getenv("SSH_AUTH_SOCK");
  std::string saved_agent = old_agent != nullptr ? old_agent : "";
  ::setenv("HOME", home.c_str(), 1);
  ::unsetenv("SSH_AUTH_SOCK");
  Result<std::unique_ptr<Session>> s = MakeSshConnector(Options())->Connect(t);
  ::setenv("HOME", saved_home.c_str(), 1);
  if (old_agent != nullptr) ::setenv("SSH_AUTH_SOCK", saved_agent.c_str(), 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            fmt::format("node {0}: authentication refused for root@{1}:{2}: no key was accepted (tried {3}); the "
                        "node needs the public key in ~root/.ssh/authorized_keys",
                        tb_->hosts()[0].name, tb_->hosts()[0].address, tb_->hosts()[0].port, key));
}

// This process's TCP sockets connected to ADDRESS:PORT, with their TCP_NODELAY setting.
std::vector<int> NoDelayOfSocketsTo(const std::string& address, int port) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    int fd = std::atoi(e.path().filename().c_str());
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 || peer.sin_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &peer.sin_addr, text, sizeof(text));
    if (text != address || ntohs(peer.sin_port) != port) continue;
    int v = -1;
    len = sizeof(v);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0) out.push_back(v);
  }
  return out;
}

// Nagle is off on the session's socket. With it on, each SFTP write's short trailing packet
// waited for the node's delayed ACK: ~35 ms per 32 KiB, so pushing the sanitizer-build agent
// (159 MB) took about 3 minutes per node. A timing would flake on a loaded machine; the socket
// option is what the fix is.
TEST_F(SshE2e, TheSessionSocketHasNagleOff) {
  if (!Bring(1)) return;
  const testbed::Host& h = tb_->hosts()[0];
  EXPECT_TRUE(NoDelayOfSocketsTo(h.address, h.port).empty()) << "no session yet";
  auto s = Connect(0);
  ASSERT_TRUE(s);
  EXPECT_EQ(NoDelayOfSocketsTo(h.address, h.port), std::vector<int>{1});
}

TEST_F(SshE2e, UploadReplacesAtomicallyWithModeAndOwner) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  UploadOptions o;
  o.mode = 0640;
  o.owner = "gpuforge:gpuforge";
  ASSERT_TRUE(s->Upload("first\n", "/etc/gpuforge-e2e.conf", o).ok());
  std::string big(3 << 20, 'b');
  Status st = s->Upload(big, "/etc/gpuforge-e2e.conf", o);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ExecResult r = Must(s->Exec("stat -c '%a %U %G %s' /etc/gpuforge-e2e.conf; ls -a /etc | grep -c gpuforge-e2e", {}));
  EXPECT_EQ(r.out, fmt::format("640 gpuforge gpuforge {}\n1\n", big.size()));
  Result<std::string> back = s->Download("/etc/gpuforge-e2e.conf", 8 << 20);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, big);
  Result<std::string> capped = s->Download("/etc/gpuforge-e2e.conf", 1024);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.error().message,
            fmt::format("node {}: download /etc/gpuforge-e2e.conf: larger than the cap of 1024 bytes", tb_->hosts()[0].name));
  // The write went to the test host's own /etc, never this machine's.
  EXPECT_FALSE(fs::exists("/etc/gpuforge-e2e.conf"));
}

TEST_F(SshE2e, AFailedUploadLeavesTheOldFileAndNoTemporary) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Upload("old\n", "/etc/gpuforge-keep.conf", {}).ok());
  UploadOptions bad;
  bad.owner = "no-such-user";
  Status st = s->Upload("new\n", "/etc/gpuforge-keep.conf", bad);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.error().message.starts_with(
      fmt::format("node {}: upload /etc/gpuforge-keep.conf: cannot set owner no-such-user:", tb_->hosts()[0].name)))
      << st.error().message;
  ExecResult r = Must(s->Exec("cat /etc/gpuforge-keep.conf; ls -a /etc | grep -c gpuforge-keep", {}));
  EXPECT_EQ(r.out, "old\n1\n");
  Status missing = s->Upload("x", "/no/such/dir/file", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no such file or directory"), std::string::npos) << missing.error().message;
}

// `mv -f TMP PATH` with a directory planted at PATH moves the file into it and succeeds: the
// upload reported written what no consumer reads (issue #12, item 12). Over SFTP and through sudo.
TEST_F(SshE2e, AnUploadNeverLandsInsideADirectoryPlantedAtItsPath) {
  if (!Bring(1)) return;
  auto root = Connect(0);
  auto user = Connect(0, "gpuforge");
  ASSERT_TRUE(root && user);
  ASSERT_TRUE(Must(root->Exec("mkdir -p /etc/gpuforge-planted.conf", {})).Succeeded());
  UploadOptions o;
  o.mode = 0644;
  Status sftp = root->Upload("x\n", "/etc/gpuforge-planted.conf", o);
  ASSERT_FALSE(sftp.ok());
  EXPECT_NE(sftp.error().message.find("cannot overwrite directory"), std::string::npos) << sftp.error().message;
  o.sudo = true;
  Status sudo = user->Upload("x\n", "/etc/gpuforge-planted.conf", o);
  ASSERT_FALSE(sudo.ok());
  EXPECT_NE(sudo.error().message.find("cannot overwrite directory"), std::string::npos) << sudo.error().message;
  ExecResult r = Must(root->Exec("ls -A /etc/gpuforge-planted.conf | wc -l; ls -a /etc | grep -c gpuforge-planted", {}));
  EXPECT_EQ(r.out, "0\n1\n") << "nothing inside the directory, no temporary left beside it";
}

// A controller or jump host killed mid-upload through sudo: the node's `cat` saw EOF after part
// of the file, took it for success, and a 5 MB agent was installed at ~1 MB, mode 0755 (issue
// #12, item 2). The same upload script, over a real sshd through sudo, with only part of the
// bytes on its stdin: nothing is installed, the old file stays, no temporary is left.
TEST_F(SshE2e, AnUploadCutShortThroughSudoInstallsNothing) {
  if (!Bring(1)) return;
  auto root = Connect(0);
  auto user = Connect(0, "gpuforge");
  ASSERT_TRUE(root && user);
  ASSERT_TRUE(Must(root->Exec("printf 'old\\n' > /etc/gpuforge-cut.conf", {})).Succeeded());
  const std::string sent(5 << 20, 'a');
  ExecOptions eo;
  eo.sudo = true;
  eo.input = sent.substr(0, 1 << 20);
  ExecResult cut = Must(user->Exec(AtomicWriteScript("/etc/gpuforge-cut.conf", 0755, "", UploadDigest::Of(sent)), eo));
  EXPECT_FALSE(cut.Succeeded());
  EXPECT_EQ(cut.err, fmt::format("{} of {} bytes arrived; nothing was installed\n", 1 << 20, sent.size()));
  ExecResult r = Must(root->Exec("cat /etc/gpuforge-cut.conf; stat -c %a /etc/gpuforge-cut.conf; ls -a /etc | grep -c gpuforge-cut", {}));
  EXPECT_EQ(r.out, "old\n644\n1\n") << "the old file, its mode, and no temporary beside it";
  // The whole file through the session's own sudo upload goes in.
  UploadOptions o;
  o.sudo = true;
  o.mode = 0755;
  ASSERT_TRUE(user->Upload(sent, "/etc/gpuforge-cut.conf", o).ok());
  r = Must(root->Exec("stat -c '%a %s' /etc/gpuforge-cut.conf; ls -a /etc | grep -c gpuforge-cut", {}));
  EXPECT_EQ(r.out, fmt::format("755 {}\n1\n", sent.size()));
}

TEST_F(SshE2e, ANonRootUserWritesUnderEtcThroughSudo) {
  if (!Bring(1)) return;
  auto s = Connect(0, "gpuforge");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->Upload("x\n", "/etc/nccl.conf", {}).ok()) << "the plain user should not write /etc";
  UploadOptions o;
  o.sudo = true;
  o.mode = 0644;
  Status st = s->Upload("NCCL_IB_TIMEOUT=22\n", "/etc/nccl.conf", o);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ExecResult r = Must(s->Exec("stat -c '%a %U' /etc/nccl.conf; cat /etc/nccl.conf", {}));
  EXPECT_EQ(r.out, "644 root\nNCCL_IB_TIMEOUT=22\n");
}

TEST_F(SshE2e, ACommandThatNeverEndsIsStoppedOnTheNode) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  ExecOptions o;
  o.timeout = 1500ms;
  // A shell that ignores TERM, with a child: the whole group must go.
  auto start = Clock::now();
  ExecResult r = Must(s->Exec("trap '' TERM; sleep 4321 & sleep 4322; echo never", o));
  EXPECT_EQ(r.end, ExecEnd::kTimedOut);
  EXPECT_TRUE(r.remote_stopped);
  // Not a speed check: a generous bound that fails only if the stop hung.
  EXPECT_LT(Clock::now() - start, 30s);
  EXPECT_EQ(DescribeEnd(r, o), "timed out after 1.5 s");
  ExecResult left = Must(s->Exec("ps -eo args | grep -c '^sleep 432[12]' || true", {}));
  EXPECT_EQ(left.out, "0\n") << "the timed-out command still runs on the node";
}

// Under sudo (Debian's sudoers has use_pty) the command runs in a session of its own, outside
// the login shell's process group; the stop must find it through the process tree.
TEST_F(SshE2e, ATimedOutSudoCommandIsStoppedToo) {
  if (!Bring(1)) return;
  auto s = Connect(0, "gpuforge");
  ASSERT_TRUE(s);
  ExecOptions o;
  o.timeout = 1500ms;
  o.sudo = true;
  ExecResult r = Must(s->Exec("trap '' TERM HUP; sleep 4324 & sleep 4325; echo never", o));
  EXPECT_EQ(r.end, ExecEnd::kTimedOut);
  EXPECT_TRUE(r.remote_stopped);
  ExecResult left = Must(s->Exec("ps -eo args | grep -c '^sleep 432[45]' || true", {}));
  EXPECT_EQ(left.out, "0\n") << "the timed-out sudo command still runs on the node";
}

TEST_F(SshE2e, OutputOverTheCapStopsTheCommand) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  ExecOptions o;
  o.output_cap = 64 << 10;
  ExecResult r = Must(s->Exec("yes gpuforge", o));
  EXPECT_EQ(r.end, ExecEnd::kOutputCap);
  EXPECT_EQ(r.out.size(), o.output_cap);
  EXPECT_TRUE(r.remote_stopped);
  EXPECT_EQ(DescribeEnd(r, o), "stopped: output over the cap of 65536 bytes");
  ExecResult left = Must(s->Exec("ps -eo args | grep -c '^yes gpuforge' || true", {}));
  EXPECT_EQ(left.out, "0\n");
}

TEST_F(SshE2e, CancelStopsARunningCommand) {
  if (!Bring(1)) return;
  auto s = Connect(0);
  ASSERT_TRUE(s);
  std::atomic<bool> cancel{false};
  ExecOptions o;
  o.cancel = &cancel;
  std::thread ctrl_c([&] {
    std::this_thread::sleep_for(500ms);
    cancel = true;
  });
  ExecResult r = Must(s->Exec("sleep 4323", o));
  ctrl_c.join();
  EXPECT_EQ(r.end, ExecEnd::kCancelled);
  EXPECT_TRUE(r.remote_stopped);
}

// Every fault ends in a clear per-host error within its timeout while the other hosts
// complete: host down, a host that accepts TCP and never answers, a command that never ends.
TEST_F(SshE2e, FaultsStayWithTheirHost) {
  if (!Bring(4)) return;
  ASSERT_TRUE(tb_->StopHost(1).ok());
  ASSERT_TRUE(tb_->HangHost(2).ok());
  std::vector<Target> targets;
  for (std::size_t i = 0; i < 4; ++i) targets.push_back(TargetOf(i));
  auto ssh = MakeSshConnector(Options());
  Fleet fleet(*ssh, targets, {});
  std::vector<std::optional<ExecResult>> results(4);
  ExecOptions o;
  o.timeout = 2s;
  auto start = Clock::now();
  fleet.Each([&](std::size_t i, Session& s) {
    Result<ExecResult> r = s.Exec(i == 3 ? "sleep 999" : "hostname", o);
    if (r.ok()) results[i] = *r;
    return r.ok() && r->Succeeded();
  });
  auto took = Clock::now() - start;
  // Connect timeout 3 s and command timeout 2 s run side by side, plus the stop; the bound is
  // generous (a loaded CI machine) and only catches a fault that blocks the run.
  EXPECT_LT(took, 30s);
  ASSERT_TRUE(results[0].has_value());
  EXPECT_TRUE(results[0]->Succeeded());
  ASSERT_TRUE(fleet.lost(1).has_value());
  EXPECT_EQ(fleet.lost(1)->message, fmt::format("node {}: cannot connect to root@{}:{}: Connection refused",
                                                targets[1].node, targets[1].endpoint.host, targets[1].endpoint.port));
  ASSERT_TRUE(fleet.lost(2).has_value());
  EXPECT_TRUE(fleet.lost(2)->message.starts_with(fmt::format("node {}: cannot connect to root@{}:{}: ", targets[2].node,
                                                             targets[2].endpoint.host, targets[2].endpoint.port)))
      << fleet.lost(2)->message;
  EXPECT_NE(fleet.lost(2)->message.find("imeout"), std::string::npos) << fleet.lost(2)->message;
  ASSERT_TRUE(results[3].has_value());
  EXPECT_EQ(results[3]->end, ExecEnd::kTimedOut);
  EXPECT_FALSE(fleet.lost(3).has_value()) << "a timed-out command must not cost the connection";
}

// The link of one host goes down while its command runs (its veth is set down, so packets
// vanish and nothing answers): that host ends at its timeout with the process unconfirmed,
// the others finish.
TEST_F(SshE2e, ALinkCutMidCommandEndsAtTheTimeout) {
  if (!Bring(3, /*netns=*/true)) return;
  std::vector<Target> targets;
  for (std::size_t i = 0; i < 3; ++i) targets.push_back(TargetOf(i));
  auto ssh = MakeSshConnector(Options());
  Fleet fleet(*ssh, targets, {});
  fleet.Each([&](std::size_t, Session& s) { return Must(s.Exec("true", {})).Succeeded(); });
  ExecOptions o;
  o.timeout = 3s;
  std::thread cutter([&] {
    std::this_thread::sleep_for(700ms);
    EXPECT_TRUE(tb_->CutLink(0).ok());
  });
  auto start = Clock::now();
  fleet.Each([&](std::size_t, Session& s) {
    Result<ExecResult> r = s.Exec("sleep 1.5; echo done", o);
    if (!r.ok()) return false;
    return r->Succeeded() && r->out == "done\n";
  });
  auto took = Clock::now() - start;
  cutter.join();
  EXPECT_LT(took, 40s);  // only catches a hang: timeout 3 s plus a bounded stop attempt
  EXPECT_TRUE(fleet.lost(0).has_value()) << "the cut host should be out of the run";
  EXPECT_FALSE(fleet.lost(1).has_value());
  EXPECT_FALSE(fleet.lost(2).has_value());
  ASSERT_TRUE(tb_->RestoreLink(0).ok());
}

// What the inventory leaves unset comes from the ssh config's Host block for the node's name.
TEST_F(SshE2e, SshConfigFillsWhatTheInventoryLeavesUnset) {
  if (!Bring(1)) return;
  const testbed::Host& h = tb_->hosts()[0];
  std::string config = tb_->paths().dir + "/alias_config";
  std::ofstream(config) << fmt::format("Host alias-node\n  HostName {}\n  Port {}\n  User gpuforge\n  IdentityFile {}\n",
                                       h.address, h.port, tb_->paths().identity);
  Target t;
  t.node = "alias-node";
  t.endpoint = {"alias-node", 22, "root"};
  t.host_stated = t.user_stated = t.port_stated = false;
  t.sudo_wanted = true;  // the inventory's default; as root, no sudo yet
  SshOptions o = Options();
  o.config_file = config;
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(t);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Must((*s)->Exec("id -un", {})).out, "gpuforge\n");
  EXPECT_EQ((*s)->target().endpoint.host, h.address);
  // The config's user is not root, so privileged steps go through sudo (issue #12, item 10):
  // before, sudo was settled for "root" before the config was read, and uploads to /etc failed.
  EXPECT_TRUE((*s)->target().sudo);
  ExecOptions as_root;
  as_root.sudo = true;
  EXPECT_EQ(Must((*s)->Exec("id -un", as_root)).out, "root\n");

  // A user the inventory states wins over the config's.
  t.user_stated = true;
  Result<std::unique_ptr<Session>> root = MakeSshConnector(o)->Connect(t);
  ASSERT_TRUE(root.ok()) << root.error().message;
  EXPECT_EQ(Must((*root)->Exec("id -un", {})).out, "root\n");
  EXPECT_FALSE((*root)->target().sudo);
}

TEST_F(SshE2e, TheKeyCanComeFromSshAgent) {
  if (!Bring(1)) return;
  std::string sock = tb_->paths().dir + "/agent.sock";
  auto agent = testbed::RunCommand({"ssh-agent", "-a", sock, "-s"});
  ASSERT_TRUE(agent.ok() && agent->exit_code == 0);
  std::string out = agent->output;
  std::string pid = out.substr(out.find("SSH_AGENT_PID=") + 14);
  pid = pid.substr(0, pid.find(';'));
  ::setenv("SSH_AUTH_SOCK", sock.c_str(), 1);
  auto add = testbed::RunCommand({"ssh-add", tb_->paths().identity});
  EXPECT_TRUE(add.ok() && add->exit_code == 0) << (add.ok() ? add->output : add.error().message);
  // No identity file and a HOME without keys: only the agent can authenticate.
  std::string home = tb_->paths().dir + "/agent-home";
  fs::create_directories(home);
  const char* old_home = std::getenv("HOME");
  std::string saved_home = old_home != nullptr ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  Target t = TargetOf(0);
  t.identity_file.clear();
  Result<std::unique_ptr<Session>> s = MakeSshConnector(Options())->Connect(t);
  ::setenv("HOME", saved_home.c_str(), 1);
  ::unsetenv("SSH_AUTH_SOCK");
  testbed::RunCommand({"kill", pid});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Must((*s)->Exec("echo via-agent", {})).out, "via-agent\n");
}

// The jump host carries the connection (OpenSSH's ssh -W on this machine); a jump host that
// does not answer makes the node unreachable, which shows the jump is really used.
TEST_F(SshE2e, AJumpHostCarriesTheConnection) {
  if (!Bring(2)) return;
  Target t = TargetOf(1);
  const testbed::Host& j = tb_->hosts()[0];
  t.jump = Endpoint{j.address, j.port, "root"};
  SshOptions o = Options();
  o.config_file = tb_->paths().ssh_config;  // the jump's ssh -W needs the identity too
  Result<std::unique_ptr<Session>> s = MakeSshConnector(o)->Connect(t);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Must((*s)->Exec("hostname", {})).out, tb_->hosts()[1].name + "\n");
  ASSERT_TRUE(tb_->StopHost(0).ok());
  Result<std::unique_ptr<Session>> none = MakeSshConnector(o)->Connect(t);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.error().message.starts_with(fmt::format("node {}: cannot connect to root@{}:{} via root@{}:{}: ",
                                                           t.node, t.endpoint.host, t.endpoint.port, j.address, j.port)))
      << none.error().message;
}

// gpuforge run and facts as a user runs them, on the testbed's own inventory.
TEST_F(SshE2e, RunFoldsIdenticalOutputAndReportsFailures) {
  if (!Bring(3)) return;
  ASSERT_TRUE(tb_->StopHost(2).ok());
  testbed::CommandOutput r = Gpuforge("run " + tb_->paths().inventory, "-- 'echo same; hostname >&2'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto& h = tb_->hosts();
  EXPECT_NE(r.output.find(fmt::format("---------------\n{} (1)\n---------------\nsame\nstderr:\n{}\n", h[0].name, h[0].name)),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(fmt::format("{} (1)\n---------------\nunreachable: cannot connect to root@{}:{}: Connection refused\n",
                                       h[2].name, h[2].address, h[2].port)),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("run: 2 ok, 0 failed, 1 unreachable, 3 nodes in "), std::string::npos) << r.output;

  testbed::CommandOutput folded =
      Gpuforge(fmt::format("run {} --nodes {}", tb_->paths().inventory, h[0].name + "," + h[1].name), "-- echo same");
  EXPECT_EQ(folded.exit_code, 0) << folded.output;
  EXPECT_NE(folded.output.find("tb[01-02] (2)\n---------------\nsame\n"), std::string::npos) << folded.output;
}

TEST_F(SshE2e, FactsCheckGathersTheStandInGpuAndReportsDrift) {
  // STAND-IN: the hosts' nvidia-smi prints outputs recorded on one real H200 machine.
  if (!Bring(testbed::WithStandInGpu(2))) return;
  // The inventory says two GPUs per node; the stand-in shows one: drift every machine has.
  std::string inventory = Inventory();
  const std::string one = "gpus: {model: H200, count: 1}";
  ASSERT_NE(inventory.find(one), std::string::npos) << inventory;
  inventory.replace(inventory.find(one), one.size(), "gpus: {model: H200, count: 2}");
  const std::string two = WriteFile("two-gpus.yaml", inventory);
  testbed::CommandOutput r = Gpuforge("facts " + two + " --check --format json", "", testbed::Stderr::kDropped);
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  ASSERT_EQ(j["nodes"].size(), 2u);
  for (const auto& n : j["nodes"]) {
    ASSERT_EQ(n["gpus"].size(), 1u) << n.dump();
    EXPECT_EQ(n["gpus"][0]["name"], "NVIDIA H200");
    EXPECT_EQ(n["gpus"][0]["pci_bus_id"], "0000:00:06.0");
    EXPECT_EQ(n["driver_cuda_version"], "13.0");
  }
  EXPECT_EQ(r.exit_code, 1);
  int count_drift = 0;
  for (const auto& d : j["drift"]) {
    if (d["code"] == "gpu.count") {
      ++count_drift;
      EXPECT_EQ(d["expected"], "2");
      EXPECT_EQ(d["actual"], "1");
    }
  }
  EXPECT_EQ(count_drift, 2) << j["drift"].dump();
}

}  // namespace
}  // namespace gpuforge::remote
