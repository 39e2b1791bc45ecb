#include "gpuforge/apply/apply.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpuforge/base/sha256.h"
#include "remote/command.h"
#include "remote/fake_session.h"
#include "testbed/testbed.h"

namespace gpuforge::apply {
using namespace plan;  // the file plan this stage carries out
namespace {

using remote::testing::FakeConnector;

const ApplyOptions kOpts{"20261130T064252Z-0000abcd", "run 20261130T064252Z-0000abcd by ops@admin at t", "t", false, "",
                         std::chrono::seconds(1800)};

remote::ExecResult Exited(int status, std::string out = "", std::string err = "") {
  remote::ExecResult r;
  r.exit_status = status;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

std::string StateLine(std::string_view content, unsigned mode = 0644) {
  return fmt::format("F {:o} root {} {}\n", mode, content.size(), base::Sha256Hex(content));
}

// The node state script's answer for a Debian node with `files` (file state lines) and `rest`
// (package, module, sysctl, service and manifest lines).
std::string NodeState(const std::string& files, const std::string& rest = "") {
  return "os debian\nlike \narch x86_64\n" + files + rest + "end\n";
}

// A node whose lock is free and whose state script answers `state` (file lines; see
// NodeState); other commands succeed unless `failing` (a command prefix) matches.
void Script(FakeConnector& c, std::string state, std::string failing = "", std::string rest = "") {
  c.nodes["gpu01"].exec = [state, failing, rest](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd == "sh -s") return Exited(0, NodeState(state, rest));
    if (!failing.empty() && cmd.starts_with(failing)) return Exited(1, "", "boom\n");
    return Exited(0);
  };
}

DesiredNode Files(std::vector<DesiredFile> files) {
  DesiredNode d;
  d.files = std::move(files);
  return d;
}

std::unique_ptr<remote::Session> Connect(FakeConnector& c) {
  remote::Target t;
  t.node = "gpu01";
  Result<std::unique_ptr<remote::Session>> s = c.Connect(t);
  return std::move(s).value();
}

TEST(PlanRunId, ShapeAndCheck) {
  std::string id = MakeRunId(std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + std::chrono::hours{6} +
                                 std::chrono::minutes{42} + std::chrono::seconds{52},
                             0xabcd);
  EXPECT_EQ(id, "20261130T064252Z-0000abcd");
  EXPECT_TRUE(IsRunId(id));
  EXPECT_FALSE(IsRunId("20261130T064252Z-0000abcd/../x"));
  EXPECT_FALSE(IsRunId("../../etc/passwd"));
  EXPECT_EQ(BackupPath(id, "/etc/nccl.conf"), "/var/lib/gpuforge/backups/20261130T064252Z-0000abcd/etc/nccl.conf");
}

TEST(PlanParseState, StrictAboutEveryField) {
  std::string good = "N\nO\n" + StateLine("x", 0600);
  Result<std::vector<ActualFile>> r = ParseState("gpu01", good, 3);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].kind, ActualFile::Kind::kAbsent);
  EXPECT_EQ((*r)[1].kind, ActualFile::Kind::kOther);
  EXPECT_EQ((*r)[2].mode, 0600u);
  EXPECT_EQ((*r)[2].size, 1u);
  EXPECT_EQ(ParseState("gpu01", "N\n", 2).error().message, "node gpu01: the file state script answered 1 of 2 paths");
  EXPECT_EQ(ParseState("gpu01", "N\nN\n", 1).error().message,
            "node gpu01: unexpected output from the file state script, line 2 (more than the 1 lines expected): 'N'");
  EXPECT_EQ(ParseState("gpu01", "N", 1).error().message,
            "node gpu01: unexpected output from the file state script, line 1 (no end of line): 'N'");
  EXPECT_EQ(ParseState("gpu01", "F 644 root;rm 1 " + base::Sha256Hex("") + "\n", 1).error().message,
            fmt::format("node gpu01: unexpected output from the file state script, line 1 (owner is not a user name): "
                        "'F 644 root;rm 1 {}'",
                        base::Sha256Hex("")));
  EXPECT_NE(ParseState("gpu01", "F 9z4 root 1 " + base::Sha256Hex("") + "\n", 1).error().message.find("mode is not octal"),
            std::string::npos);
  EXPECT_NE(ParseState("gpu01", "F 644 root 1 XYZ\n", 1).error().message.find("not a SHA-256"), std::string::npos);
  // Control characters from the node never reach the terminal.
  std::string hostile = ParseState("gpu01", "\x1b]0;owned\x07\n", 1).error().message;
  EXPECT_EQ(hostile.find('\x1b'), std::string::npos) << hostile;
  EXPECT_NE(hostile.find("'?]0;owned?'"), std::string::npos) << hostile;
}

// Every command builder quotes what it is given: hostile paths and values stay one word.
TEST(PlanCommands, HostileValuesStayQuoted) {
  const std::string evil = "/etc/a'b $(touch /tmp/pwned);`id`\nx";
  const std::string q = remote::ShellQuote(evil);
  std::vector<std::string> paths = {evil};
  EXPECT_NE(StateScript(paths).find("for p in " + q + "; do"), std::string::npos);
  EXPECT_NE(LockScript(evil).find("printf '%s\\n' " + q + " > "), std::string::npos);
  std::string prep = PrepareScript(kOpts.run_id, paths, paths);
  EXPECT_NE(prep.find("cp -p -- " + q + " " + remote::ShellQuote(BackupPath(kOpts.run_id, evil))), std::string::npos)
      << prep;
  EXPECT_NE(JournalScript(evil).find("printf '%s\\n' " + q + " >> '/var/lib/gpuforge/journal.jsonl'"),
            std::string::npos);
  EXPECT_TRUE(JournalScript(evil).starts_with("umask 077\n")) << JournalScript(evil);
  EXPECT_NE(JournalScript(evil).find("&& chmod 0600 '/var/lib/gpuforge/journal.jsonl'"), std::string::npos);
}

// The state script run by a real /bin/sh on hostile file names: one answer per path, in order,
// and nothing in a name is executed.
TEST(PlanCommands, StateScriptRunsOnHostileNames) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("gpuforge-plan-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Anything executed would print EXECUTED into the output, which then would not parse.
  std::string evil = (dir / "a'b $(echo EXECUTED);`echo EXECUTED`\nz \"$HOME\"").string();
  std::ofstream(evil) << "hello\n";
  ASSERT_TRUE(fs::exists(evil));
  fs::create_directory(dir / "sub");
  fs::create_symlink(evil, dir / "link");
  std::vector<std::string> paths = {evil, (dir / "missing").string(), (dir / "sub").string(), (dir / "link").string()};
  auto r = testbed::RunCommand({"/bin/sh", "-c", StateScript(paths)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->exit_code, 0) << r->output;
  Result<std::vector<ActualFile>> s = ParseState("local", r->output, paths.size());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)[0].sha256, base::Sha256Hex("hello\n"));
  EXPECT_EQ((*s)[0].size, 6u);
  EXPECT_EQ((*s)[1].kind, ActualFile::Kind::kAbsent);
  EXPECT_EQ((*s)[2].kind, ActualFile::Kind::kOther);
  EXPECT_EQ((*s)[3].kind, ActualFile::Kind::kOther);
  EXPECT_EQ(r->output.find("EXECUTED"), std::string::npos);
  fs::remove_all(dir);
}

TEST(PlanApply, CreatesWithLockBackupJournalInOrder) {
  std::vector<DesiredFile> d = {{"/etc/gpuforge/x.conf", "X\n", 0644}, {"/etc/nccl.conf", "N\n", 0644},
                                {"/etc/sysctl.d/90.conf", "S\n", 0644}};
  FakeConnector c;
  Script(c, "N\n" + StateLine("old\n") + StateLine("S\n"));
  auto s = Connect(c);
  NodeApply a = ApplyNode(*s, Files(d), kOpts);
  EXPECT_EQ(a.state, NodeApply::State::kApplied) << a.step << ": " << a.detail;
  EXPECT_EQ(a.written, (std::vector<std::string>{"/etc/gpuforge/x.conf", "/etc/nccl.conf"}));
  EXPECT_TRUE(a.handlers.empty());  // the sysctl file did not change
  const auto& log = c.log["gpu01"];
  std::vector<std::string> paths = {"/etc/gpuforge/x.conf", "/etc/nccl.conf"};
  std::vector<std::string> backups = {"/etc/nccl.conf"};
  ASSERT_EQ(log.size(), 8u);
  EXPECT_EQ(log[0], "exec: " + LockScript(kOpts.holder));
  EXPECT_EQ(log[1], "exec: sh -s");  // the node state script, on stdin
  // The backups, then in the same command, before the first write, the intent record: what the
  // run is about to change, so a run killed from here on can still be rolled back.
  const std::string intent =
      "{\"schema\":\"gpuforge.journal/v1\",\"run\":\"20261130T064252Z-0000abcd\",\"time\":\"t\",\"node\":\"gpu01\","
      "\"result\":\"started\",\"files\":["
      "{\"path\":\"/etc/gpuforge/x.conf\",\"action\":\"create\",\"backup\":\"\",\"sha256\":\"" + base::Sha256Hex("X\n") +
      "\"},{\"path\":\"/etc/nccl.conf\",\"action\":\"change\",\"backup\":\"/var/lib/gpuforge/backups/"
      "20261130T064252Z-0000abcd/etc/nccl.conf\",\"sha256\":\"" + base::Sha256Hex("N\n") + "\"}]}";
  EXPECT_EQ(log[2], "exec: " + PrepareScript(kOpts.run_id, paths, backups) + JournalScript(intent));
  EXPECT_EQ(log[3], "upload: /etc/gpuforge/x.conf (644)");
  EXPECT_EQ(log[4], "upload: /etc/nccl.conf (644)");
  // The manifest: every file gpuforge manages here, for later removals.
  EXPECT_EQ(log[5], "upload: /var/lib/gpuforge/managed-files (644)");
  EXPECT_EQ(c.nodes["gpu01"].files["/var/lib/gpuforge/managed-files"],
            "/etc/gpuforge/x.conf\n/etc/nccl.conf\n/etc/sysctl.d/90.conf\n");
  EXPECT_TRUE(log[6].starts_with("exec: umask 077\nmkdir -p '/var/lib/gpuforge' && printf '%s\\n' '{\"schema\":\"gpuforge.journal/v1\",\"run\":\"20261130T064252Z-0000abcd\""))
      << log[6];
  EXPECT_NE(log[6].find("\"result\":\"applied\""), std::string::npos);
  EXPECT_NE(log[6].find("\"backup\":\"/var/lib/gpuforge/backups/20261130T064252Z-0000abcd/etc/nccl.conf\""),
            std::string::npos);
  EXPECT_EQ(log[7], "exec: " + UnlockScript(kOpts.holder));
  EXPECT_EQ(PrepareScript(kOpts.run_id, paths, backups),
            "set -e\numask 022\nmkdir -p -- '/etc'\nmkdir -p -- '/etc/gpuforge'\n"
            "mkdir -p -- '/var/lib/gpuforge/backups'\nchmod 0700 '/var/lib/gpuforge/backups'\n"
            "mkdir -p -- '/var/lib/gpuforge/backups/20261130T064252Z-0000abcd/etc'\n"
            "cp -p -- '/etc/nccl.conf' '/var/lib/gpuforge/backups/20261130T064252Z-0000abcd/etc/nccl.conf'\n");
}

TEST(PlanApply, HandlerRunsOnlyWhenItsInputChanged) {
  std::vector<DesiredFile> d = {{"/etc/nccl.conf", "N\n", 0644}, {"/etc/sysctl.d/90.conf", "S\n", 0644}};
  FakeConnector same;
  Script(same, StateLine("old\n") + StateLine("S\n"));
  NodeApply a = ApplyNode(*Connect(same), Files(d), kOpts);
  for (const std::string& l : same.log["gpu01"]) EXPECT_NE(l, "exec: sysctl --system");
  FakeConnector changed;
  Script(changed, StateLine("N\n") + StateLine("S old\n"));
  NodeApply b = ApplyNode(*Connect(changed), Files(d), kOpts);
  EXPECT_EQ(b.handlers, std::vector<std::string>{"sysctl --system"});
  EXPECT_EQ(b.written, std::vector<std::string>{"/etc/sysctl.d/90.conf"});
  EXPECT_EQ(std::count(changed.log["gpu01"].begin(), changed.log["gpu01"].end(), "exec: sysctl --system"), 1);
}

TEST(PlanApply, UnchangedNodeWritesNothing) {
  std::vector<DesiredFile> d = {{"/etc/nccl.conf", "N\n", 0644}};
  FakeConnector c;
  // The manifest already lists the file: a node an earlier apply converged.
  Script(c, StateLine("N\n"), "", "G /etc/nccl.conf\n" + StateLine("N\n"));
  NodeApply a = ApplyNode(*Connect(c), Files(d), kOpts);
  EXPECT_EQ(a.state, NodeApply::State::kUnchanged);
  for (const std::string& l : c.log["gpu01"]) {
    EXPECT_FALSE(l.starts_with("upload:")) << l;
    EXPECT_FALSE(l.starts_with("exec: set -e")) << l;
  }
  EXPECT_EQ(c.log["gpu01"].back(), "exec: " + UnlockScript(kOpts.holder));
}

TEST(PlanApply, HeldLockRefusesWithTheHolder) {
  std::vector<DesiredFile> d = {{"/etc/nccl.conf", "N\n", 0644}};
  FakeConnector c;
  c.nodes["gpu01"].exec = [](const std::string&) -> Result<remote::ExecResult> {
    return Exited(kLockHeldExit, "run 20261130T060000Z-00000001 by ops@admin at 2026-11-30T06:00:00Z\n");
  };
  NodeApply a = ApplyNode(*Connect(c), Files(d), kOpts);
  EXPECT_EQ(a.state, NodeApply::State::kLocked);
  EXPECT_EQ(a.detail,
            "/var/lib/gpuforge/lock is held: run 20261130T060000Z-00000001 by ops@admin at 2026-11-30T06:00:00Z; if "
            "that run is gone, `gpuforge unlock INVENTORY --run ID` removes its lock");
  // Nothing else was sent: no state read, no upload, and the other run's lock is not released.
  EXPECT_EQ(c.log["gpu01"].size(), 1u);
}

TEST(PlanApply, FailedUploadLeavesEachFileOldOrNewAndIsJournalled) {
  std::vector<DesiredFile> d = {{"/etc/a", "A new\n", 0644}, {"/etc/b", "B new\n", 0644},
                                {"/etc/sysctl.d/c", "C new\n", 0644}};
  FakeConnector c;
  Script(c, StateLine("A\n") + StateLine("B\n") + StateLine("C\n"));
  c.nodes["gpu01"].files = {{"/etc/a", "A\n"}, {"/etc/b", "B\n"}, {"/etc/sysctl.d/c", "C\n"}};
  c.nodes["gpu01"].upload_errors["/etc/b"] = "No space left on device";
  NodeApply a = ApplyNode(*Connect(c), Files(d), kOpts);
  EXPECT_EQ(a.state, NodeApply::State::kFailed);
  EXPECT_EQ(a.step, "upload /etc/b");
  EXPECT_EQ(a.detail, "node gpu01: upload /etc/b: No space left on device");
  EXPECT_EQ(a.written, std::vector<std::string>{"/etc/a"});
  const auto& files = c.nodes["gpu01"].files;
  EXPECT_EQ(files.at("/etc/a"), "A new\n");
  EXPECT_EQ(files.at("/etc/b"), "B\n");
  EXPECT_EQ(files.at("/etc/sysctl.d/c"), "C\n");
  const auto& log = c.log["gpu01"];
  // No handler after a failure; the journal records it; the lock is released.
  for (const std::string& l : log) EXPECT_NE(l, "exec: sysctl --system");
  ASSERT_GE(log.size(), 2u);
  EXPECT_NE(log[log.size() - 2].find("\"result\":\"failed\""), std::string::npos) << log[log.size() - 2];
  EXPECT_NE(log[log.size() - 2].find("\"failed_step\":\"upload /etc/b\""), std::string::npos);
  // Each journal line names its schema (base/schemas.h), the intent line too.
  EXPECT_NE(log[log.size() - 2].find("{\"schema\":\"gpuforge.journal/v1\",\"run\":"), std::string::npos)
      << log[log.size() - 2];
  std::size_t journal_lines = 0;
  for (const std::string& l : log) {
    if (l.find("journal.jsonl") == std::string::npos || l.find("\"run\":") == std::string::npos) continue;
    ++journal_lines;
    EXPECT_NE(l.find("\"schema\":\"gpuforge.journal/v1\""), std::string::npos) << l;
  }
  EXPECT_GE(journal_lines, 2u);
  EXPECT_EQ(log.back(), "exec: " + UnlockScript(kOpts.holder));
}

TEST(PlanApply, FailedHandlerIsReportedWithItsOutput) {
  std::vector<DesiredFile> d = {{"/etc/sysctl.d/90.conf", "S\n", 0644}};
  FakeConnector c;
  Script(c, "N\n", "sysctl --system");
  NodeApply a = ApplyNode(*Connect(c), Files(d), kOpts);
  EXPECT_EQ(a.state, NodeApply::State::kFailed);
  EXPECT_EQ(a.step, "handler sysctl --system");
  EXPECT_EQ(a.detail, "exit 1: boom");
  EXPECT_EQ(a.written, std::vector<std::string>{"/etc/sysctl.d/90.conf"});
  EXPECT_FALSE(a.lock_left);
}

TEST(PlanApply, HostileStateOutputIsAClearError) {
  std::vector<DesiredFile> d = {{"/etc/nccl.conf", "N\n", 0644}};
  FakeConnector c;
  Script(c, "F 644 root 2 $(reboot)\n");
  NodeApply a = ApplyNode(*Connect(c), Files(d), kOpts);
  EXPECT_EQ(a.state, NodeApply::State::kFailed);
  EXPECT_EQ(a.step, "read state");
  EXPECT_EQ(a.detail,
            "node gpu01: unexpected output from the node state script, line 4 (not a file state (N, O or F MODE OWNER "
            "SIZE SHA256)): 'F 644 root 2 $(reboot)'");
  EXPECT_EQ(c.log["gpu01"].back(), "exec: " + UnlockScript(kOpts.holder));
}

}  // namespace
}  // namespace gpuforge::apply
