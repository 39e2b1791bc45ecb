// The local session (--local): the same semantics as SSH sessions, run on this machine.

#include "gpuforge/remote/local.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace gpuforge::remote {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Session> Local() {
  Target t;
  t.node = "gpu01";
  Result<std::unique_ptr<Session>> s = MakeLocalConnector()->Connect(t);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

ExecResult Must(Result<ExecResult> r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : ExecResult{};
}

// A local upload whose reader dies (mktemp fails, as on a full disk) used to end the whole
// controller with SIGPIPE, rc 141 and no output (issue #12, item 8). It is an error value now.
// The test would die the same way: gtest leaves SIGPIPE at its default.
TEST(LocalSession, AnUploadWhoseReaderDiesIsAnErrorNotSigpipe) {
  auto s = Local();
  Status st = s->Upload(std::string(4 << 20, 'x'), "/nonexistent-gpuforge-dir/agent", {});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.error().message.starts_with("node gpu01 (local): upload /nonexistent-gpuforge-dir/agent: mktemp"))
      << st.error().message;
  ExecOptions o;
  o.input = std::string(4 << 20, 'y');
  ExecResult r = Must(s->Exec("exit 0", o));
  EXPECT_TRUE(r.Succeeded());
}

TEST(LocalSession, RunsWithStdinQuotingAndExitStatus) {
  auto s = Local();
  EXPECT_EQ(s->target().node, "gpu01");
  ExecOptions o;
  o.input = std::string("line 'one'\n$(nothing)\n") + std::string(200000, 'x');
  ExecResult r = Must(s->Exec("wc -c; printf '%s\\n' \"it's\" '$HOME'; echo err >&2; exit 3", o));
  EXPECT_EQ(r.end, ExecEnd::kExited);
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.out, fmt::format("{}\nit's\n$HOME\n", o.input.size()));
  EXPECT_EQ(r.err, "err\n");
}

TEST(LocalSession, ATimeoutStopsTheWholeProcessGroup) {
  auto s = Local();
  const fs::path mark = fs::temp_directory_path() / fmt::format("gpuforge-local-{}", ::getpid());
  fs::remove(mark);
  ExecOptions o;
  o.timeout = std::chrono::milliseconds(300);
  // The grandchild would write the mark after 2 s if the group survived the timeout.
  ExecResult r = Must(s->Exec(fmt::format("(sleep 2; touch {}) & sleep 30", mark.string()), o));
  EXPECT_EQ(r.end, ExecEnd::kTimedOut);
  EXPECT_EQ(DescribeEnd(r, o), "timed out after 0.3 s");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(fs::exists(mark));
}

TEST(LocalSession, OutputCapSignalAndCancel) {
  auto s = Local();
  ExecOptions capped;
  capped.output_cap = 1000;
  ExecResult r = Must(s->Exec("yes", capped));
  EXPECT_EQ(r.end, ExecEnd::kOutputCap);
  EXPECT_EQ(r.out.size(), 1000u);

  r = Must(s->Exec("kill -KILL $$", ExecOptions{}));
  EXPECT_EQ(r.end, ExecEnd::kSignalled);
  EXPECT_EQ(r.signal, "KILL");

  std::atomic<bool> cancel{false};
  ExecOptions co;
  co.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  r = Must(s->Exec("sleep 30", co));
  t.join();
  EXPECT_EQ(r.end, ExecEnd::kCancelled);
  EXPECT_LT(r.elapsed, std::chrono::seconds(20));
}

TEST(LocalSession, AConversingCommandGetsAnswersAndEofWhenClosed) {
  auto s = Local();
  ExecOptions o;
  std::vector<std::string> seen;
  o.on_line = [&](std::string_view line) -> std::optional<std::string> {
    seen.emplace_back(line);
    if (line == "first?") return std::string("one\n");
    if (line == "second?") return std::nullopt;
    return std::string();
  };
  ExecResult r = Must(s->Exec(
      "echo 'first?'; read a; echo \"got $a\"; echo 'second?'; if read b; then echo \"more $b\"; else echo eof; fi", o));
  EXPECT_TRUE(r.Succeeded()) << r.err;
  EXPECT_EQ(r.out, "first?\ngot one\nsecond?\neof\n");
  EXPECT_EQ(seen, (std::vector<std::string>{"first?", "got one", "second?", "eof"}));
}

TEST(LocalSession, UploadIsAtomicWithModeAndDownloadIsCapped) {
  auto s = Local();
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpuforge-local-up-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "f.conf").string();
  ASSERT_TRUE(s->Upload("one\n", path, UploadOptions{.mode = 0600, .owner = "", .sudo = false}).ok());
  ASSERT_TRUE(s->Upload("two\n", path, UploadOptions{.mode = 0640, .owner = "", .sudo = false}).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  Result<std::string> back = s->Download(path, 100);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "two\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);  // no temporary left
  Result<std::string> small = s->Download(path, 2);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("larger than the cap"), std::string::npos);
  Status rel = s->Upload("x", "relative/path", UploadOptions{});
  ASSERT_FALSE(rel.ok());
  EXPECT_NE(rel.error().message.find("must be absolute"), std::string::npos);
  Status missing = s->Upload("x", (dir / "no/such/dir/f").string(), UploadOptions{});
  EXPECT_FALSE(missing.ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuforge::remote
