// The local SSH test hosts themselves: real sshd, real OpenSSH client, real namespaces. Every
// test here SKIPs with the reason where the machine cannot run a testbed (not root, no
// overlayfs, namespaces forbidden).

#include "testbed/testbed.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace gpuforge::testbed {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The recorded nvidia-smi outputs the stand-in prints: the copy in the test data, else the
// shared fixtures it was copied from.
std::string FixtureDir() {
  for (const std::string& d :
       {std::string(GPUFORGE_TEST_DATA_DIR) + "/facts/nvidia-h200-1gpu",
        std::string(GPUFORGE_SOURCE_DIR) + "/../shared/fixtures/nvidia-h200-1gpu"}) {
    if (fs::exists(d + "/nvidia-smi.txt")) return d;
  }
  return "";
}

// Every process whose command line mentions `needle`.
std::vector<int> ProcessesMentioning(const std::string& needle) {
  std::vector<int> pids;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path().string() + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(needle) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// Alive and not a zombie (this machine's init reaps the hosts' pid 1 in its own time).
bool Running(int pid) {
  std::string stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Runs ssh and returns what it printed; the exit code goes to *code.
std::string Ssh(const Testbed& tb, std::size_t i, std::string_view user, std::string_view cmd,
                int* code = nullptr) {
  Result<CommandOutput> out = RunCommand(tb.SshArgv(i, user, cmd), seconds(30));
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  if (!out.ok()) return "";
  if (code != nullptr) *code = out->exit_code;
  return out->output;
}

// ssh with a short connect timeout, for hosts that are expected not to answer.
Result<CommandOutput> SshQuick(const Testbed& tb, std::size_t i) {
  return RunCommand(
      {"ssh", "-F", tb.paths().ssh_config, "-o", "ConnectTimeout=2", tb.hosts()[i].name, "true"},
      seconds(20));
}

// One testbed per suite and process (ctest runs each test in a process of its own).
void BringUp(std::unique_ptr<Testbed>* tb, std::string* skip, const Options& o) {
  if (!Available(skip)) return;
  Result<Testbed> started = Testbed::Start(o);
  ASSERT_TRUE(started.ok()) << started.error().message;
  *tb = std::make_unique<Testbed>(std::move(started).value());
}

class LoopbackTestbed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Options o;
    o.hosts = 3;
    o.stand_in_gpu_dir = FixtureDir();
    BringUp(&tb_, &skip_, o);
  }
  static void TearDownTestSuite() { tb_.reset(); }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(tb_, nullptr) << "the testbed did not come up";
  }
  static inline std::unique_ptr<Testbed> tb_;
  static inline std::string skip_;
};

TEST_F(LoopbackTestbed, HostsHaveLoopbackAddressesAndOutputs) {
  ASSERT_EQ(tb_->hosts().size(), 3u);
  std::set<std::string> addresses;
  for (const Host& h : tb_->hosts()) {
    EXPECT_EQ(h.address.rfind("127.", 0), 0u) << h.address;
    EXPECT_EQ(h.port, 22);
    EXPECT_GT(h.pid, 1);
    EXPECT_TRUE(h.link.empty());
    addresses.insert(h.address);
  }
  EXPECT_EQ(addresses.size(), 3u);
  EXPECT_EQ(tb_->hosts()[0].name, "tb01");
  for (const std::string& f :
       {tb_->paths().identity, tb_->paths().identity + ".pub", tb_->paths().known_hosts,
        tb_->paths().ssh_config, tb_->paths().inventory, tb_->paths().hosts_tsv}) {
    EXPECT_TRUE(fs::exists(f)) << f;
  }
}

TEST_F(LoopbackTestbed, RootAndGpuforgeLogInWithTheKey) {
  int code = -1;
  EXPECT_EQ(Ssh(*tb_, 0, "root", "id -un", &code), "root\n");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(Ssh(*tb_, 1, "gpuforge", "id -un", &code), "gpuforge\n");
  EXPECT_EQ(code, 0);
  Ssh(*tb_, 1, "gpuforge", "sudo -n true", &code);
  EXPECT_EQ(code, 0) << "gpuforge has passwordless sudo inside the host";
  EXPECT_EQ(Ssh(*tb_, 2, "root", "hostname", &code), "tb03\n");
}

TEST_F(LoopbackTestbed, PasswordsAreNotOffered) {
  Result<CommandOutput> out =
      RunCommand({"ssh", "-F", tb_->paths().ssh_config, "-o", "PubkeyAuthentication=no", "-o",
                  "PreferredAuthentications=password,keyboard-interactive", "tb01", "true"},
                 seconds(20));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->exit_code, 255);
  EXPECT_NE(out->output.find("Permission denied (publickey)"), std::string::npos) << out->output;
}

TEST_F(LoopbackTestbed, WritesStayInsideTheirHost) {
  const std::string probe = fmt::format("probe-{}", ::getpid());
  int code = -1;
  Ssh(*tb_, 0, "root", fmt::format("echo {} > /etc/gpuforge-probe", probe), &code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(Ssh(*tb_, 0, "root", "cat /etc/gpuforge-probe"), probe + "\n");
  Ssh(*tb_, 1, "root", "test ! -e /etc/gpuforge-probe", &code);
  EXPECT_EQ(code, 0) << "host 2 sees host 1's /etc/gpuforge-probe";
  EXPECT_EQ(ReadFile("/etc/gpuforge-probe").find(probe), std::string::npos)
      << "the write reached this machine's /etc";
  // The gpuforge user exists only inside the hosts.
  EXPECT_EQ(ReadFile("/etc/passwd").find("gpuforge testbed user"), std::string::npos);
}

TEST_F(LoopbackTestbed, EachHostHasItsOwnProc) {
  std::string init = ReadFile("/proc/1/cmdline");
  std::string seen = Ssh(*tb_, 0, "root", "tr '\\0' ' ' < /proc/1/cmdline");
  EXPECT_NE(seen.find("__init"), std::string::npos) << "pid 1 there is " << seen;
  std::string own;
  for (char c : init) own += c == '\0' ? ' ' : c;
  EXPECT_NE(seen, own) << "the host sees this machine's init as its pid 1";
  // Only its own processes: pid 1, sshd, the session, ps.
  std::string ps = Ssh(*tb_, 0, "root", "ls -d /proc/[0-9]* | wc -l");
  EXPECT_LT(std::stoi(ps), 20) << ps;
}

TEST_F(LoopbackTestbed, UnknownHostKeyIsRefused) {
  const std::string empty = tb_->paths().dir + "/empty_known_hosts";
  std::ofstream(empty).flush();
  Result<CommandOutput> out = RunCommand(
      {"ssh", "-F", tb_->paths().ssh_config, "-o", "UserKnownHostsFile=" + empty, "tb01", "true"},
      seconds(20));
  fs::remove(empty);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->exit_code, 255);
  EXPECT_NE(out->output.find("Host key verification failed"), std::string::npos) << out->output;
}

TEST_F(LoopbackTestbed, StoppedHostRefusesAndComesBack) {
  ASSERT_TRUE(tb_->StopHost(2).ok());
  Result<CommandOutput> out = SshQuick(*tb_, 2);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->exit_code, 255);
  EXPECT_NE(out->output.find("Connection refused"), std::string::npos) << out->output;
  ASSERT_TRUE(tb_->StartHost(2).ok());
  int code = -1;
  EXPECT_EQ(Ssh(*tb_, 2, "root", "echo back", &code), "back\n");
  EXPECT_EQ(code, 0);
}

TEST_F(LoopbackTestbed, HungHostTimesOut) {
  ASSERT_TRUE(tb_->HangHost(2).ok());
  Result<CommandOutput> out = SshQuick(*tb_, 2);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->exit_code, 255);
  EXPECT_NE(out->output.find("timed out"), std::string::npos) << out->output;
  ASSERT_TRUE(tb_->StartHost(2).ok());
  EXPECT_EQ(Ssh(*tb_, 2, "root", "echo back"), "back\n");
}

TEST_F(LoopbackTestbed, DelayNeedsNetns) {
  bool unsupported = false;
  Status s = tb_->Delay(0, std::chrono::milliseconds(10), &unsupported);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(unsupported) << s.error().message;
}

TEST_F(LoopbackTestbed, StandInNvidiaSmiPrintsTheFixture) {
  const std::string fixtures = FixtureDir();
  if (fixtures.empty()) GTEST_SKIP() << "no recorded nvidia-smi outputs in the test data";
  // A stand-in, not NVIDIA's program: it prints what a real H200 machine printed.
  EXPECT_EQ(Ssh(*tb_, 0, "root", "nvidia-smi"), ReadFile(fixtures + "/nvidia-smi.txt"));
  EXPECT_EQ(Ssh(*tb_, 0, "root", "nvidia-smi -q -x"), ReadFile(fixtures + "/nvidia-smi-q.xml"));
  EXPECT_EQ(Ssh(*tb_, 1, "gpuforge", "nvidia-smi topo -m"), ReadFile(fixtures + "/topo-m.txt"));
  EXPECT_EQ(Ssh(*tb_, 0, "root", "nvidia-smi --query-gpu=index,name --format=csv"),
            ReadFile(fixtures + "/query-gpu.csv"));
  int code = -1;
  std::string refused = Ssh(*tb_, 0, "root", "nvidia-smi --no-such-flag", &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(refused.find("stand-in"), std::string::npos) << refused;
  EXPECT_NE(Ssh(*tb_, 0, "root", "cat /usr/bin/nvidia-smi").find("STAND-IN"), std::string::npos);
  EXPECT_FALSE(fs::exists("/usr/share/gpuforge-testbed")) << "the stand-in reached this machine";
}

TEST_F(LoopbackTestbed, InventoryLoadsAndLintsClean) {
  Result<CommandOutput> show =
      RunCommand({GPUFORGE_BINARY, "inventory", "show", tb_->paths().inventory}, seconds(60));
  ASSERT_TRUE(show.ok()) << show.error().message;
  ASSERT_EQ(show->exit_code, 0) << show->output;
  for (const Host& h : tb_->hosts()) {
    EXPECT_NE(show->output.find("name: " + h.name), std::string::npos) << show->output;
    EXPECT_NE(show->output.find("address: " + h.address), std::string::npos) << show->output;
  }
  EXPECT_NE(show->output.find("identity_file: " + tb_->paths().identity), std::string::npos);
  Result<CommandOutput> lint =
      RunCommand({GPUFORGE_BINARY, "lint", tb_->paths().inventory}, seconds(60));
  ASSERT_TRUE(lint.ok()) << lint.error().message;
  EXPECT_EQ(lint->exit_code, 0) << lint->output;
}

TEST_F(LoopbackTestbed, PdshReachesEveryHost) {
  if (::access("/usr/bin/pdsh", X_OK) != 0) GTEST_SKIP() << "pdsh is not installed";
  // pdsh runs ssh with PDSH_SSH_ARGS_APPEND added to its arguments.
  ::setenv("PDSH_SSH_ARGS_APPEND", fmt::format("-F {}", tb_->paths().ssh_config).c_str(), 1);
  Result<CommandOutput> out =
      RunCommand({"pdsh", "-R", "ssh", "-w", "tb[01-03]", "hostname"}, seconds(30));
  ::unsetenv("PDSH_SSH_ARGS_APPEND");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->exit_code, 0) << out->output;
  for (const char* name : {"tb01: tb01", "tb02: tb02", "tb03: tb03"}) {
    EXPECT_NE(out->output.find(name), std::string::npos) << out->output;
  }
}

class NetnsTestbed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Options o;
    o.hosts = 2;
    o.netns = true;
    BringUp(&tb_, &skip_, o);
  }
  static void TearDownTestSuite() { tb_.reset(); }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(tb_, nullptr) << "the testbed did not come up";
  }
  static inline std::unique_ptr<Testbed> tb_;
  static inline std::string skip_;
};

TEST_F(NetnsTestbed, HostsSitBehindTheirOwnVeth) {
  for (const Host& h : tb_->hosts()) {
    EXPECT_EQ(h.address.rfind("198.1", 0), 0u) << h.address;
    EXPECT_TRUE(fs::exists("/sys/class/net/" + h.link)) << h.link;
  }
  EXPECT_EQ(Ssh(*tb_, 0, "root", "ls /sys/class/net | tr '\\n' ' '"), "eth0 lo ");
}

TEST_F(NetnsTestbed, CutLinkTimesOutAndRestoreLinkBringsItBack) {
  ASSERT_TRUE(tb_->CutLink(1).ok());
  Result<CommandOutput> out = SshQuick(*tb_, 1);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->exit_code, 255);
  EXPECT_NE(out->output.find("timed out"), std::string::npos) << out->output;
  // The other host is not affected.
  EXPECT_EQ(Ssh(*tb_, 0, "root", "echo up"), "up\n");
  ASSERT_TRUE(tb_->RestoreLink(1).ok());
  EXPECT_EQ(Ssh(*tb_, 1, "root", "echo back"), "back\n");
}

TEST_F(NetnsTestbed, StoppedHostRefuses) {
  ASSERT_TRUE(tb_->StopHost(0).ok());
  Result<CommandOutput> out = SshQuick(*tb_, 0);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_NE(out->output.find("Connection refused"), std::string::npos) << out->output;
  ASSERT_TRUE(tb_->StartHost(0).ok());
  EXPECT_EQ(Ssh(*tb_, 0, "root", "echo back"), "back\n");
}

TEST_F(NetnsTestbed, DelaySlowsTheLinkWhereNetemExists) {
  bool unsupported = false;
  Status s = tb_->Delay(0, std::chrono::milliseconds(200), &unsupported);
  if (unsupported) GTEST_SKIP() << s.error().message;
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Ssh(*tb_, 0, "root", "true"), "");
  EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(400));
  EXPECT_TRUE(tb_->Delay(0, std::chrono::milliseconds(0)).ok());
}

TEST(TestbedTeardown, LeavesNoMountsProcessesOrVeths) {
  std::string why;
  if (!Available(&why)) GTEST_SKIP() << why;
  Options o;
  o.hosts = 2;
  o.netns = true;
  std::string dir;
  std::vector<Host> hosts;
  {
    Result<Testbed> tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.error().message;
    dir = tb->paths().dir;
    hosts = tb->hosts();
    EXPECT_FALSE(ProcessesMentioning(dir).empty());
    // The hosts' mounts live in their own namespaces: none ever shows here.
    EXPECT_EQ(ReadFile("/proc/self/mountinfo").find(dir), std::string::npos);
  }
  EXPECT_EQ(ReadFile("/proc/self/mountinfo").find(dir), std::string::npos);
  EXPECT_TRUE(ProcessesMentioning(dir).empty());
  for (const Host& h : hosts) {
    EXPECT_FALSE(Running(h.pid)) << h.name << "'s pid 1 survived";
    EXPECT_FALSE(fs::exists("/sys/class/net/" + h.link)) << h.link;
  }
  EXPECT_FALSE(fs::exists(dir));
}

TEST(TestbedTeardown, LifelineTakesTheTestbedDownWhenItsOwnerDies) {
  std::string why;
  if (!Available(&why)) GTEST_SKIP() << why;
  // A child process owns the testbed and dies without tearing it down.
  char dir_template[] = "/tmp/gpuforge-testbed-orphan-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Options o;
    o.hosts = 1;
    o.dir = dir;
    Result<Testbed> tb = Testbed::Start(o);
    ::_exit(tb.ok() ? 0 : 1);  // no destructor runs
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The watcher runs `down` in the background; on a loaded machine that takes a while, so
  // wait (up to a minute) for the directory and the last process to go. Not a speed check.
  for (int t = 0; t < 600 && (fs::exists(dir) || !ProcessesMentioning(dir).empty()); ++t) {
    ::usleep(100 * 1000);
  }
  EXPECT_FALSE(fs::exists(dir)) << "the orphaned testbed is still there";
  EXPECT_TRUE(ProcessesMentioning(dir).empty());
  if (fs::exists(dir))
    RunCommand({std::string(GPUFORGE_SOURCE_DIR) + "/tests/testbed/testbed.sh", "down", "--dir", dir});
}

}  // namespace
}  // namespace gpuforge::testbed
