// The node state script and the commands apply and rollback send: run by a real /bin/sh here,
// with hostile values, and their output parsed strictly.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpuforge/apply/apply.h"
#include "gpuforge/base/sha256.h"
#include "remote/command.h"
#include "remote/fake_session.h"
#include "testbed/testbed.h"

namespace gpuforge::apply {
namespace {

namespace fs = std::filesystem;

// A scratch directory removed at the end of the test.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / fmt::format("gpuforge-state-{}-{}", ::getpid(), counter++);
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  inline static int counter = 0;
};

// What a hostile value tries: run a command that leaves a mark.
std::string Evil(const fs::path& dir) {
  return fmt::format("x'y $(touch {0}/PWNED);`touch {0}/PWNED`;\"$(touch {0}/PWNED)\"\nz", dir.string());
}

// Runs `script` with `stubs` (names of commands) on PATH first: each stub prints its
// arguments, one per line between [ and ], and exits 0.
testbed::CommandOutput RunWithStubs(const Scratch& s, const std::string& script, const std::vector<std::string>& stubs) {
  fs::path bin = s.dir / "bin";
  fs::create_directories(bin);
  for (const std::string& name : stubs) {
    std::ofstream(bin / name) << "#!/bin/sh\necho \"" << name << "\"\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n";
    ::chmod((bin / name).c_str(), 0755);
  }
  auto r = testbed::RunCommand({"/usr/bin/env", "PATH=" + bin.string() + ":/usr/bin:/bin", "/bin/sh", "-c", script});
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : testbed::CommandOutput{-1, ""};
}

TEST(ApplyNodeState, ScriptRunsOnThisMachineAndParses) {
  Scratch s;
  std::ofstream(s.dir / "present") << "hello\n";
  DesiredNode d;
  d.files = {{(s.dir / "present").string(), "hello\n", 0644}, {(s.dir / "missing").string(), "", 0644}};
  d.packages = {{"dpkg", "", plan::Impact::kLive, "", ""}, {"no-such-package-gpuforge", "1", plan::Impact::kLive, "", ""}};
  d.modules = {"no-such-module-gpuforge"};
  d.sysctls = {{"kernel.ostype", "Linux"}, {"kernel.no_such_key_gpuforge", "1"}};
  auto r = testbed::RunCommand({"/bin/sh", "-c", NodeStateScript(d)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->exit_code, 0) << r->output;
  Result<ActualNode> a = ParseNodeState("local", r->output, d);
  ASSERT_TRUE(a.ok()) << a.error().message << "\n" << r->output;
  EXPECT_EQ(a->os_id, "debian");
  EXPECT_FALSE(a->arch.empty());
  EXPECT_EQ(a->files[0].sha256, base::Sha256Hex("hello\n"));
  EXPECT_EQ(a->files[1].kind, ActualFile::Kind::kAbsent);
  EXPECT_FALSE(a->packages[0].empty());  // dpkg is installed on Debian
  EXPECT_TRUE(a->packages[1].empty());
  EXPECT_FALSE(a->modules[0]);
  EXPECT_EQ(a->sysctls[0], std::optional<std::string>("Linux"));
  EXPECT_EQ(a->sysctls[1], std::nullopt);
}

TEST(ApplyNodeState, HostileNamesAreNeverExecuted) {
  Scratch s;
  const std::string evil = Evil(s.dir);
  DesiredNode d;
  d.files = {{(s.dir / evil).string(), "x", 0644}};
  d.packages = {{evil, "", plan::Impact::kLive, "", ""}};
  d.modules = {evil};
  d.sysctls = {{evil, "1"}};
  d.services = {evil};
  auto r = testbed::RunCommand({"/bin/sh", "-c", NodeStateScript(d)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(fs::exists(s.dir / "PWNED")) << r->output;
}

TEST(ApplyNodeState, ParseIsStrict) {
  DesiredNode d;
  d.packages = {{"libnccl2", "2.28.9", plan::Impact::kLive, "", ""}};
  d.services = {"slurmd"};
  const std::string head = "os debian\nlike \narch x86_64\n";
  ASSERT_TRUE(ParseNodeState("n1", head + "P 2.28.9-1\nU enabled active\nend\n", d).ok());
  struct Case {
    std::string output, message;
  };
  const std::vector<Case> cases = {
      {head + "P 2.28.9-1\nU enabled active\n", "line 6 (expected 'end'): '(end of output)'"},
      {head + "P 2.28.9-1\nU enabled active\nend\nmore\n", "line 7 (output after 'end'): 'more'"},
      {head + "P 2.28.9;reboot\nU enabled active\nend\n", "line 4 (unexpected characters): 'P 2.28.9;reboot'"},
      {head + "P 2.28.9\nU enabled\nend\n", "line 5 (expected 'U ENABLED ACTIVE'): 'U enabled'"},
      {head + "P 2.28.9\nU enabled active\nG ../../etc/shadow\nN\nend\n",
       "line 6 (/var/lib/gpuforge/managed-files lists a path gpuforge would not have written): 'G ../../etc/shadow'"},
      {head + "P 2.28.9\nU enabled active\nG /etc/x\nF 644 root 1 nothex\nend\n",
       "line 7 (not a file state (N, O or F MODE OWNER SIZE SHA256)): 'F 644 root 1 nothex'"},
      {"os debian\x1b]0;owned\x07\nlike \narch x86_64\n", "line 1 (unexpected characters): 'os debian?]0;owned?'"},
  };
  for (const Case& c : cases) {
    Result<ActualNode> a = ParseNodeState("n1", c.output, d);
    ASSERT_FALSE(a.ok()) << c.output;
    EXPECT_EQ(a.error().message, "node n1: unexpected output from the node state script, " + c.message);
  }
  EXPECT_EQ(ParseNodeState("n1", head + "P ?\nU enabled active\nend\n", d).error().message,
            "node n1: neither dpkg-query nor rpm is there, so gpuforge cannot manage packages (leave them out with --only)");
  EXPECT_EQ(ParseNodeState("n1", head + "P -\nU ? ?\nend\n", d).error().message,
            "node n1: systemctl is not there, so gpuforge cannot manage services (leave them out with --only)");
}

// A controller killed between the SFTP write and the rename leaves ".NAME.gpuforge-SUFFIX"
// beside the file (#12 item 13): the state script lists it, only it, and the plan removes it.
TEST(ApplyNodeState, LeftoverTemporariesAreListedAndNothingElse) {
  Scratch s;
  fs::create_directories(s.dir / "etc");
  fs::create_directories(s.dir / "old");
  std::ofstream(s.dir / "etc" / "nccl.conf") << "x\n";
  std::ofstream(s.dir / "etc" / ".nccl.conf.gpuforge-0123456789ab") << "half\n";   // SFTP TemporarySibling
  std::ofstream(s.dir / "etc" / ".sysctl.conf.gpuforge-Ab12Cd") << "half\n";       // mktemp XXXXXX
  std::ofstream(s.dir / "etc" / "slurm.conf.gpuforge-rollback.Zz9Yy8") << "half\n";
  std::ofstream(s.dir / "etc" / ".keep.gpuforge-x") << "not ours: suffix too short\n";
  std::ofstream(s.dir / "etc" / "nccl.conf.bak") << "not ours\n";
  fs::create_directories(s.dir / "etc" / ".dir.gpuforge-abcdef");                  // a directory: left alone
  fs::create_symlink("/etc/passwd", s.dir / "etc" / ".link.gpuforge-abcdef");        // a link: left alone
  std::ofstream(s.dir / "elsewhere.gpuforge-rollback.abcdef") << "no managed file here\n";
  DesiredNode d;
  d.files = {{(s.dir / "etc" / "nccl.conf").string(), "x\n", 0644}};
  auto r = testbed::RunCommand({"/bin/sh", "-c", NodeStateScript(d)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->exit_code, 0) << r->output;
  Result<ActualNode> a = ParseNodeState("local", r->output, d);
  ASSERT_TRUE(a.ok()) << a.error().message << "\n" << r->output;
  const std::string e = (s.dir / "etc").string();
  EXPECT_EQ(a->leftovers, (std::vector<std::string>{e + "/.nccl.conf.gpuforge-0123456789ab", e + "/.sysctl.conf.gpuforge-Ab12Cd",
                                                     e + "/slurm.conf.gpuforge-rollback.Zz9Yy8"}))
      << r->output;
  Result<plan::NodePlan> p = plan::PlanNodeState("local", d, *a);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->leftovers, a->leftovers);
  EXPECT_TRUE(p->HasChanges());  // --detailed-exitcode sees them

  // A parse of a T line that is not a gpuforge temporary beside a managed file is refused.
  const std::string head = "os debian\nlike \narch x86_64\nF 644 root 2 " + base::Sha256Hex("x\n") + "\n";
  for (const std::string& t : {std::string("/etc/shadow"), std::string("/tmp/.x.gpuforge-abcdef"), std::string("x.gpuforge-abcdef"),
                               e + "/../.x.gpuforge-abcdef"}) {
    Result<ActualNode> bad = ParseNodeState("n1", head + "T " + t + "\nend\n", d);
    ASSERT_FALSE(bad.ok()) << t;
    EXPECT_NE(bad.error().message.find("not a gpuforge temporary beside a managed file"), std::string::npos)
        << bad.error().message;
  }
  // Names in a managed directory that are not gpuforge's are passed over, never listed.
  for (const std::string& t : {e + "/nccl.conf.bak", e + "/.x.gpuforge-abc;rm", e + "/.keep.gpuforge-x"}) {
    Result<ActualNode> other = ParseNodeState("n1", head + "T " + t + "\nend\n", d);
    ASSERT_TRUE(other.ok()) << t << ": " << other.error().message;
    EXPECT_TRUE(other->leftovers.empty()) << t;
  }
  // Files the manifest names count as managed: their directory is searched too.
  ASSERT_TRUE(ParseNodeState("n1", head + "G /etc/old.conf\nN\nT /etc/.old.conf.gpuforge-abcdef\nend\n", d).ok());
}

TEST(ApplyNodeState, LeftoverNamesFollowTheUploadPatternsOnly) {
  EXPECT_TRUE(plan::IsLeftoverTemporary("/etc/.nccl.conf.gpuforge-0123456789ab"));
  EXPECT_TRUE(plan::IsLeftoverTemporary("/etc/slurm/slurm.conf.gpuforge-rollback.AbC123"));
  EXPECT_FALSE(plan::IsLeftoverTemporary("/etc/nccl.conf.gpuforge-abcdef"));  // no leading dot
  EXPECT_FALSE(plan::IsLeftoverTemporary("/etc/.gpuforge-abcdef"));           // no NAME
  EXPECT_FALSE(plan::IsLeftoverTemporary("/etc/.x.gpuforge-abc"));            // suffix too short
  EXPECT_FALSE(plan::IsLeftoverTemporary("/etc/.x.gpuforge-abcdef0123456789x"));  // too long
  EXPECT_FALSE(plan::IsLeftoverTemporary("/etc/.x.gpuforge-abc-de"));
  // The temporaries the upload code really makes match.
  EXPECT_TRUE(plan::IsLeftoverTemporary(remote::TemporarySibling("/etc/nccl.conf", "0123456789ab")));
}

// Every command apply and rollback build, fed hostile values and run with stub commands: each
// value arrives as one argument, byte for byte, and nothing in it runs.
TEST(ApplyCommands, HostileValuesArriveAsSingleArguments) {
  Scratch s;
  const std::string evil = Evil(s.dir);
  auto expect_args = [&](const testbed::CommandOutput& out, const std::string& arg) {
    EXPECT_NE(out.output.find("[" + arg + "]"), std::string::npos) << out.output;
    EXPECT_FALSE(fs::exists(s.dir / "PWNED")) << out.output;
  };
  std::vector<std::string> repos = {"/etc/apt/sources.list.d/" + evil};
  std::vector<std::string> specs = {evil + "=1-*"};
  testbed::CommandOutput apt = RunWithStubs(s, PackagesScript(plan::OsFamily::kDebian, repos, specs), {"apt-get"});
  EXPECT_EQ(apt.exit_code, 0) << apt.output;
  expect_args(apt, "Dir::Etc::sourcelist=/etc/apt/sources.list.d/" + evil);
  expect_args(apt, evil + "=1-*");
  testbed::CommandOutput dnf = RunWithStubs(s, PackagesScript(plan::OsFamily::kRhel, {}, specs), {"dnf"});
  expect_args(dnf, evil + "=1-*");
  using K = plan::ItemChange::Kind;
  plan::ItemChange module{K::kModule, evil, plan::Action::kCreate, "", "loaded", evil, plan::Impact::kLive, ""};
  expect_args(RunWithStubs(s, ItemScript(module), {"modprobe"}), evil);
  plan::ItemChange sysctl{K::kSysctl, evil, plan::Action::kChange, "1", evil, evil, plan::Impact::kLive, ""};
  expect_args(RunWithStubs(s, ItemScript(sysctl), {"sysctl"}), evil + "=" + evil);
  plan::ItemChange service{K::kService, evil, plan::Action::kChange, "", "", "enable start", plan::Impact::kLive, ""};
  testbed::CommandOutput svc = RunWithStubs(s, ItemScript(service), {"systemctl"});
  expect_args(svc, evil);
  EXPECT_NE(svc.output.find("[enable]\n[" + evil + "]\nsystemctl\n[start]\n[" + evil + "]"), std::string::npos)
      << svc.output;
  // Rollback's journal read: the run id is checked before, but the script quotes it anyway.
  testbed::CommandOutput grep = RunWithStubs(s, JournalReadScript(evil), {"grep", "["});
  EXPECT_FALSE(fs::exists(s.dir / "PWNED"));
}

TEST(ApplyCommands, RemoveAndRestoreTouchOnlyTheirPaths) {
  Scratch s;
  const std::string evil = (s.dir / Evil(s.dir)).string();
  const std::string backup = (s.dir / "backup").string();
  std::ofstream(evil) << "new\n";
  std::ofstream(backup) << "old bytes\n";
  ::chmod(backup.c_str(), 0600);
  auto r = testbed::RunCommand({"/bin/sh", "-c", RestoreScript(backup, evil)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->output;
  std::ifstream in(evil);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "old bytes\n");
  EXPECT_EQ(fs::status(evil).permissions() & fs::perms::mask, fs::perms::owner_read | fs::perms::owner_write);
  // No temporary file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(s.dir)) ++entries;
  EXPECT_EQ(entries, 2u);
  auto missing = testbed::RunCommand({"/bin/sh", "-c", RestoreScript((s.dir / "nope").string(), evil)});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->exit_code, 1);
  EXPECT_NE(missing->output.find("is missing"), std::string::npos) << missing->output;
  std::vector<std::string> gone = {evil};
  auto rm = testbed::RunCommand({"/bin/sh", "-c", RemoveScript(gone)});
  ASSERT_TRUE(rm.ok());
  EXPECT_FALSE(fs::exists(evil));
  EXPECT_TRUE(fs::exists(backup));
  EXPECT_FALSE(fs::exists(s.dir / "PWNED"));
}

TEST(ApplyJournal, ParseTakesOnlyThisRunsFilesAndRefusesForeignPaths) {
  const std::string run = "20261130T064252Z-0000abcd";
  const std::string bk = "/var/lib/gpuforge/backups/" + run;
  const std::string sha(64, 'a');
  const std::string line =
      fmt::format(R"({{"run":"{0}","node":"n","files":[{{"path":"/etc/a","action":"change","backup":"{1}/etc/a","sha256":"{2}"}},)"
                  R"({{"path":"/etc/b","action":"create","backup":"","sha256":"{2}"}},)"
                  R"({{"path":"/etc/c","action":"remove","backup":"{1}/etc/c"}}]}})",
                  run, bk, sha);
  const std::string other = R"({"run":"20261130T000000Z-00000001","note":"\"run\":\")" + run + R"(\"","files":[]})";
  const std::string rollback = R"({"run":")" + run + R"(","rollback_of":"x","files":[]})";
  Result<JournalRun> r = ParseJournal("n", line + "\n" + other + "\n" + rollback + "\n", run);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::vector<JournalFile>* f = &r->files;
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[0].backup, bk + "/etc/a");
  EXPECT_EQ((*f)[1].action, "create");
  EXPECT_EQ((*f)[2].action, "remove");
  EXPECT_EQ(r->rolled_back_by, "");
  // A finished rollback of the run: it is undone here already.
  const std::string done = R"({"run":"20261130T070000Z-00000002","rollback_of":")" + run + R"(","result":"applied"})";
  EXPECT_EQ(ParseJournal("n", line + "\n" + done + "\n", run)->rolled_back_by, "20261130T070000Z-00000002");
  std::string foreign = line;
  foreign.replace(foreign.find(bk + "/etc/a"), bk.size() + 6, "/etc/shadow");
  EXPECT_NE(ParseJournal("n", foreign, run).error().message.find("backup is not this run's"), std::string::npos);
  std::string traversal = line;
  traversal.replace(traversal.find("\"/etc/b\""), 8, "\"/etc/../x\"");
  EXPECT_NE(ParseJournal("n", traversal, run).error().message.find("a path gpuforge would not have written"),
            std::string::npos);
  EXPECT_NE(ParseJournal("n", "garbage\n", run).error().message.find("not JSON"), std::string::npos);
  Result<JournalRun> none = ParseJournal("n", "", run);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->files.empty());
}

// The journal names its schema (base/schemas.h); a line of another major version is not read
// as this one, and a line from before the schema was written (no field) still is.
TEST(ApplyJournal, ALineOfAnotherSchemaIsRefusedAndOneWithoutIsRead) {
  const std::string run = "20261130T064252Z-0000abcd";
  const std::string body = fmt::format(R"("run":"{}","node":"n","files":[{{"path":"/etc/b","action":"create","backup":"","sha256":"{}"}}]}})",
                                       run, std::string(64, 'b'));
  Result<JournalRun> v1 = ParseJournal("n", R"({"schema":"gpuforge.journal/v1",)" + body + "\n", run);
  ASSERT_TRUE(v1.ok()) << v1.error().message;
  EXPECT_EQ(v1->files.size(), 1u);
  Result<JournalRun> old = ParseJournal("n", "{" + body + "\n", run);
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->files.size(), 1u);
  Result<JournalRun> v2 = ParseJournal("n", R"({"schema":"gpuforge.journal/v2",)" + body + "\n", run);
  ASSERT_FALSE(v2.ok());
  EXPECT_NE(v2.error().message.find("schema is not gpuforge.journal/v1"), std::string::npos) << v2.error().message;
}

using remote::testing::FakeConnector;

// A file edited after the run is someone's work: rollback refuses the node, touching nothing.
TEST(ApplyRollback, RefusesFilesChangedSinceTheRunUnlessForced) {
  const std::string run = "20261130T064252Z-0000abcd";
  const std::string journal = fmt::format(
      R"({{"run":"{}","files":[{{"path":"/etc/nccl.conf","action":"change","backup":"/var/lib/gpuforge/backups/{}/etc/nccl.conf","sha256":"{}"}}]}})",
      run, run, base::Sha256Hex("written\n"));
  for (bool force : {false, true}) {
    FakeConnector c;
    c.nodes["gpu01"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
      remote::ExecResult r;
      r.exit_status = 0;
      if (cmd.find("grep -F") != std::string::npos) r.out = journal + "\n";
      if (cmd.starts_with("for p in")) {
        r.out = fmt::format("F 644 root 7 {}\n", base::Sha256Hex("edited\n"));
      }
      return r;
    };
    remote::Target t;
    t.node = "gpu01";
    auto s = std::move(c.Connect(t)).value();
    RollbackOptions o;
    o.apply.run_id = "20261130T070000Z-00000002";
    o.apply.holder = "rollback";
    o.target_run = run;
    o.force = force;
    NodeApply a = RollbackNode(*s, o);
    const auto& log = c.log["gpu01"];
    bool restored = std::any_of(log.begin(), log.end(), [](const std::string& l) { return l.find("mv -fT --") != std::string::npos; });
    if (!force) {
      EXPECT_EQ(a.state, NodeApply::State::kFailed);
      EXPECT_EQ(a.step, "check");
      EXPECT_EQ(a.detail, "changed since run " + run + ": /etc/nccl.conf; nothing was rolled back here (--force restores "
                                                      "them anyway)");
      EXPECT_FALSE(restored);
    } else {
      EXPECT_EQ(a.state, NodeApply::State::kApplied) << a.step << ": " << a.detail;
      EXPECT_EQ(a.written, std::vector<std::string>{"/etc/nccl.conf"});
      EXPECT_TRUE(restored);
    }
    EXPECT_EQ(log.back(), "exec: " + UnlockScript("rollback"));
  }
}

}  // namespace
}  // namespace gpuforge::apply
