#include "remote/command.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpuforge::remote {
namespace {

// Runs `script` with the real /bin/sh, as sshd hands a command to a login shell.
std::string Sh(const std::string& script, int* status = nullptr, const std::string& input = "") {
  // One file per process and call: CTest runs these tests in parallel processes, which shared
  // one name and truncated each other's input.
  static int calls = 0;
  std::string in_file = ::testing::TempDir() + "/command_test_stdin." + std::to_string(::getpid()) + "." +
                        std::to_string(++calls);
  std::ofstream(in_file) << input;
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove_after{in_file};
  std::string cmd = "/bin/sh -c " + ShellQuote(script) + " < " + in_file + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  int st = ::pclose(p);
  if (status != nullptr) *status = WEXITSTATUS(st);
  return out;
}

TEST(RemoteCommand, ShellQuoteSurvivesEveryHostileCharacter) {
  for (std::string s : {"plain", "it's", "a'b'c", "$(touch /tmp/pwned)", "`id`", "; rm -rf /", "a\nb",
                        "\"double\"", "back\\slash", "", "*"}) {
    EXPECT_EQ(Sh("printf '%s' " + ShellQuote(s)), s) << s;
  }
}

TEST(RemoteCommand, WrapperPrintsThePidFirstThenRunsTheCommand) {
  int status = -1;
  std::string out = Sh(WrapCommand("echo \"it's $((1+2))\"; exit 7", false), &status);
  EXPECT_EQ(status, 7);
  ASSERT_TRUE(out.starts_with(kPidMarker)) << out;
  std::size_t nl = out.find('\n');
  EXPECT_TRUE(ParsePidMarker(out.substr(0, nl)).has_value()) << out;
  EXPECT_EQ(out.substr(nl + 1), "it's 3\n");
}

TEST(RemoteCommand, ParsePidMarkerIsStrict) {
  EXPECT_EQ(ParsePidMarker("@@gpuforge-pid 4242"), 4242);
  EXPECT_FALSE(ParsePidMarker("@@gpuforge-pid 1"));  // never signal init's group
  EXPECT_FALSE(ParsePidMarker("@@gpuforge-pid "));
  EXPECT_FALSE(ParsePidMarker("@@gpuforge-pid 12x"));
  EXPECT_FALSE(ParsePidMarker("@@gpuforge-pid -5"));
  EXPECT_FALSE(ParsePidMarker("some error 12"));
}

TEST(RemoteCommand, StopGroupScriptKillsAGroupThatIgnoresTerm) {
  // kill -0 answers for zombies too, and this machine's pid 1 may not reap orphans: like an
  // init, the test reaps its group's members itself (a subreaper), so only a live member
  // could keep the script from confirming.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  // A group leader that ignores TERM, with a child that inherits that.
  FILE* p = ::popen("setsid /bin/sh -c 'trap \"\" TERM; sleep 60 & echo $$; wait' 2>/dev/null", "r");
  ASSERT_NE(p, nullptr);
  long pgid = 0;
  ASSERT_EQ(std::fscanf(p, "%ld", &pgid), 1);
  std::atomic<bool> done{false};
  std::thread reaper([&] {
    while (!done) {
      while (::waitpid(static_cast<pid_t>(-pgid), nullptr, WNOHANG) > 0) {
      }
      ::usleep(5000);
    }
  });
  int status = -1;
  Sh(StopGroupScript(pgid, false), &status);
  done = true;
  reaper.join();
  ::pclose(p);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  EXPECT_EQ(status, 0);
  EXPECT_NE(::kill(static_cast<pid_t>(-pgid), 0), 0) << "group " << pgid << " still has members";
}

TEST(RemoteCommand, StopGroupScriptOnAGoneGroupSucceeds) {
  int status = -1;
  Sh(StopGroupScript(999999, false), &status);
  EXPECT_EQ(status, 0);
}

TEST(RemoteCommand, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "atomic-write";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path target = dir / "nccl.conf";
  std::ofstream(target) << "old\n";
  int status = -1;
  Sh(AtomicWriteScript(target.string(), 0640, "", UploadDigest::Of("new 'quoted' $(x)\n")), &status, "new 'quoted' $(x)\n");
  EXPECT_EQ(status, 0);
  std::ifstream in(target);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "new 'quoted' $(x)\n");
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(RemoteCommand, AtomicWriteFailureKeepsTheOldFile) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "atomic-write-fail";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path target = dir / "limits.conf";
  std::ofstream(target) << "old\n";
  int status = -1;
  // chown to a user that does not exist fails after the temporary file was written.
  Sh(AtomicWriteScript(target.string(), 0644, "no-such-user-gpuforge", UploadDigest::Of("new\n")), &status, "new\n");
  EXPECT_NE(status, 0);
  std::ifstream in(target);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "old\n");
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "the temporary file was left behind";
}

// `cat > "$t"` takes an early EOF for success: a controller or jump host killed mid-upload left a
// 5 MB agent installed at ~1 MB, mode 0755 (issue #12, item 2). Now the size and the SHA-256
// are checked before anything moves into place.
TEST(RemoteCommand, AtomicWriteInstallsNothingThatArrivedShortOrChanged) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "atomic-write-short";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path target = dir / "gpuforge-agent";
  std::ofstream(target) << "old\n";
  const std::string sent(5000, 'a');
  auto files = [&] {
    int n = 0;
    for (auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
    return n;
  };
  auto content = [&] {
    std::ifstream in(target);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  int status = -1;
  std::string out = Sh(AtomicWriteScript(target.string(), 0755, "", UploadDigest::Of(sent)), &status, sent.substr(0, 1200));
  EXPECT_EQ(status, 1);
  EXPECT_EQ(out, "1200 of 5000 bytes arrived; nothing was installed\n");
  EXPECT_EQ(content(), "old\n");
  EXPECT_EQ(files(), 1) << "the temporary file was left behind";

  std::string changed = sent;
  changed[4999] = 'b';
  out = Sh(AtomicWriteScript(target.string(), 0755, "", UploadDigest::Of(sent)), &status, changed);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(out, "what arrived is not what was sent (SHA-256 " + UploadDigest::Of(changed).sha256 + ", want " +
                     UploadDigest::Of(sent).sha256 + "); nothing was installed\n");
  EXPECT_EQ(content(), "old\n");
  EXPECT_EQ(files(), 1);

  Sh(AtomicWriteScript(target.string(), 0755, "", UploadDigest::Of(sent)), &status, sent);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(content(), sent);
}

TEST(RemoteCommand, VerifyUploadChecksAQuotedPath) {
  namespace fs = std::filesystem;
  fs::path f = fs::path(::testing::TempDir()) / "it's uploaded";
  std::ofstream(f) << "abc";
  int status = -1;
  Sh(VerifyUploadScript(ShellQuote(f.string()), UploadDigest::Of("abc")), &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(Sh(VerifyUploadScript(ShellQuote(f.string()), UploadDigest::Of("abcd")), &status),
            "3 of 4 bytes arrived; nothing was installed\n");
  EXPECT_EQ(status, 1);
}

TEST(RemoteCommand, TemporarySiblingStaysInTheSameDirectory) {
  EXPECT_EQ(TemporarySibling("/etc/nccl.conf", "abc"), "/etc/.nccl.conf.gpuforge-abc");
  EXPECT_EQ(TemporarySibling("relative", "x"), ".relative.gpuforge-x");
}

}  // namespace
}  // namespace gpuforge::remote
