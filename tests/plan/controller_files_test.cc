// The munge key (#14): where it comes from, the sizes munged takes, the refusal without one, and
// that its bytes never appear in what gpuforge prints or saves (offline plan text and JSON,
// online plan text, JSON and --diff, a saved plan, apply's commands and journal) while apply
// still pushes exactly those bytes, 0400 munge:munge, and restarts munged.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/base/sha256.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/plan/controller_files.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/render/render.h"
#include "gpuforge/report/plan_report.h"
#include "remote/fake_session.h"

namespace gpuforge::plan {
namespace {

// 64 bytes no other text of a plan could hold by chance; a NUL inside like a real key.
const std::string kSecret = std::string("MUNGE-SECRET-0123456789abcdef-") + '\0' + "-never-print-me-XXXXXXXXXXXXXXXXXXXXXXXXX";
const std::string kSecretText = "MUNGE-SECRET-0123456789abcdef";  // the printable part to look for

constexpr const char* kSlurm = R"(version: 1
cluster: {name: keyed}
profiles:
  head:
    cpu: {model: t, sockets: 1, cores_per_socket: 4, threads_per_core: 1}
    memory: 16GiB
  gpu:
    gpus: {model: H200, count: 8}
    cpu: {model: t, sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory: 2TB
nodes:
  - {name: head01, address: 198.18.0.10, profile: head, role: controller}
  - {name: "gpu[01-02]", address: "198.18.0.[11-12]", profile: gpu}
software:
  scheduler:
    kind: slurm
    controller: head01
    munge_key: keys/munge.key
)";

model::Cluster Load(const std::string& yaml, const std::string& path = "/srv/inv/cluster.yaml") {
  inventory::LoadOutcome loaded = inventory::LoadString(yaml, path);
  EXPECT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  return *loaded.cluster;
}

std::shared_ptr<const Blob> Key(const std::string& bytes = kSecret) {
  Result<std::shared_ptr<const Blob>> k = CheckMungeKey({"/k", "test"}, bytes);
  EXPECT_TRUE(k.ok()) << (k.ok() ? "" : k.error().message);
  return k.ok() ? *k : nullptr;
}

std::map<std::string, DesiredNode> Desired(const model::Cluster& c, const ControllerFiles& local,
                                           const Parts& parts = AllParts()) {
  Result<render::Output> out = render::Render(c, render::Options{});
  EXPECT_TRUE(out.ok());
  std::map<std::string, DesiredNode> m;
  for (const model::Node& n : c.nodes) m[n.name] = DesiredNodeState(c, n, DesiredFiles(*out, n.name), parts, nullptr, &local);
  return m;
}

bool HasSecret(std::string_view text) { return text.find(kSecretText) != std::string_view::npos; }

TEST(MungeKeySource, InventoryKeyResolvedBesideTheInventoryAndTheEnvironmentWins) {
  model::Cluster c = Load(kSlurm);
  Result<std::optional<MungeKeySource>> s = FindMungeKeySource(c, "");
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->path, "/srv/inv/keys/munge.key");
  EXPECT_EQ((*s)->named_by, "/srv/inv/cluster.yaml:18:16: software.scheduler.munge_key");
  s = FindMungeKeySource(c, "/vault/munge.key");
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->path, "/vault/munge.key");
  EXPECT_EQ((*s)->named_by, "GPUFORGE_MUNGE_KEY");
}

TEST(MungeKeySource, ASlurmClusterWithoutAKeyIsRefusedNamingTheKey) {
  std::string yaml = kSlurm;
  yaml.erase(yaml.find("    munge_key:"));
  model::Cluster c = Load(yaml);
  Result<std::optional<MungeKeySource>> s = FindMungeKeySource(c, "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "/srv/inv/cluster.yaml: a Slurm cluster (auth/munge) needs the same munge key on every node, and nothing "
            "names one: set software.scheduler.munge_key to a key file (relative to the inventory), or "
            "GPUFORGE_MUNGE_KEY=PATH in the environment. Make a key with `mungekey --create --keyfile FILE` (or "
            "`dd if=/dev/urandom bs=1024 count=1 of=FILE`); gpuforge pushes it to /etc/munge/munge.key (0400 "
            "munge:munge) and never prints it");
  // The environment is a source too.
  EXPECT_TRUE(FindMungeKeySource(c, "/vault/k").ok());
  // Not Slurm: no munge, nothing to name.
  model::Cluster none = Load("version: 1\ncluster: {name: x}\nprofiles: {p: {cpu: {model: t, sockets: 1, cores_per_socket: 1}}}\n"
                             "nodes: [{name: a, profile: p}]\n");
  Result<std::optional<MungeKeySource>> n = FindMungeKeySource(none, "");
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_value());
}

TEST(MungeKeySource, SizesMungedTakes) {
  const MungeKeySource src{"/keys/k", "inv.yaml:3:5: software.scheduler.munge_key"};
  Result<std::shared_ptr<const Blob>> short_key = CheckMungeKey(src, std::string(31, 'k'));
  ASSERT_FALSE(short_key.ok());
  EXPECT_EQ(short_key.error().message,
            "inv.yaml:3:5: software.scheduler.munge_key: munge key /keys/k holds 31 bytes; munged refuses a key shorter "
            "than 32 bytes");
  EXPECT_FALSE(CheckMungeKey(src, "").ok());
  Result<std::shared_ptr<const Blob>> big = CheckMungeKey(src, std::string(kMungeKeyMaxBytes + 1, 'k'));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message,
            "inv.yaml:3:5: software.scheduler.munge_key: munge key /keys/k is larger than 1 MiB; a munge key is 1 KiB "
            "(mungekey writes at most 1024 bytes): is this the right file?");
  Result<std::shared_ptr<const Blob>> ok = CheckMungeKey(src, std::string(32, 'k'));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->sha256, base::Sha256Hex(std::string(32, 'k')));
  EXPECT_TRUE(CheckMungeKey(src, std::string(kMungeKeyMaxBytes, 'k')).ok());
  EXPECT_FALSE(IsExampleMungeKey(**ok));
}

TEST(MungeKeySource, TheExamplesKeyIsKnownForWhatItIs) {
  Result<std::string> bytes = base::Sha256FileHex(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/munge.key.example");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, kExampleMungeKeySha256) << "the example key changed: update kExampleMungeKeySha256";
}

TEST(MungeKeyPlan, EveryNodeThatRunsMungeGetsTheKeyAsMungedWantsIt) {
  model::Cluster c = Load(kSlurm);
  ControllerFiles local;
  local.munge_key = Key();
  std::map<std::string, DesiredNode> d = Desired(c, local);
  for (const model::Node& n : c.nodes) {
    auto it = std::find_if(d[n.name].files.begin(), d[n.name].files.end(),
                           [](const DesiredFile& f) { return f.path == kMungeKeyPath; });
    ASSERT_NE(it, d[n.name].files.end()) << n.name;
    EXPECT_EQ(it->mode, 0400u);
    EXPECT_EQ(it->owner, "munge:munge");
    EXPECT_TRUE(it->secret);
    EXPECT_EQ(it->Content(), kSecret);
    EXPECT_TRUE(std::is_sorted(d[n.name].files.begin(), d[n.name].files.end(),
                               [](const DesiredFile& a, const DesiredFile& b) { return a.path < b.path; }));
    // munge is installed, enabled and started, before slurmd.
    const std::vector<std::string>& sv = d[n.name].services;
    auto munge = std::find(sv.begin(), sv.end(), "munge");
    ASSERT_NE(munge, sv.end()) << n.name;
    auto slurmd = std::find(sv.begin(), sv.end(), "slurmd");
    if (slurmd != sv.end()) {
      EXPECT_LT(munge, slurmd);
    }
  }
  // --only packages: no files, no key wanted.
  Parts packages = {Part::kPackages};
  EXPECT_TRUE(Desired(c, local, packages)["gpu01"].files.empty());
  // A changed key is a changed plan: a saved plan made with the old one is stale at apply.
  ControllerFiles other;
  other.munge_key = Key(kSecret + "!");
  EXPECT_NE(DesiredDigest(Desired(c, local)["gpu01"]), DesiredDigest(Desired(c, other)["gpu01"]));
}

TEST(MungeKeyPlan, OfflinePlanTextAndJsonShowTheKeyButNeverItsBytes) {
  model::Cluster c = Load(kSlurm);
  ControllerFiles local;
  local.munge_key = Key();
  std::map<std::string, DesiredNode> d = Desired(c, local);
  std::vector<NodeClass> classes = FoldDesiredState(c, d, true);
  const lint::LintResult lint = lint::Lint(c);
  const estimate::Estimates est = estimate::Estimate(c);
  const std::string text = report::PlanOfflineText(c, lint, est, classes, report::Style{});
  const std::string json = report::PlanOfflineJson(c, lint, est, classes).dump();
  EXPECT_FALSE(HasSecret(text));
  EXPECT_FALSE(HasSecret(json));
  EXPECT_NE(text.find("/etc/munge/munge.key"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("munge key, {} bytes (secret: never shown) (0400 munge:munge)", kSecret.size())),
            std::string::npos)
      << text;
  EXPECT_NE(json.find("\"owner\":\"munge:munge\""), std::string::npos);
}

using remote::testing::FakeConnector;

remote::ExecResult Exited(int status, std::string out = "") {
  remote::ExecResult r;
  r.exit_status = status;
  r.out = std::move(out);
  return r;
}

// A node that holds every desired file already but an old munge key (owned by root): the
// state script's answer, and `cat` answering with the file's content for a diff.
std::string StateWithOldKey(const DesiredNode& d, const std::string& old_key) {
  std::string s = "os debian\nlike \narch x86_64\n";
  for (const DesiredFile& f : d.files) {
    if (f.path == kMungeKeyPath) {
      s += fmt::format("F 400 root {} {}\n", old_key.size(), base::Sha256Hex(old_key));
    } else {
      s += fmt::format("F {:o} root {} {}\n", f.mode, f.Content().size(), f.Sha256());
    }
  }
  for (std::size_t i = 0; i < d.packages.size(); ++i) s += "P 1.0\n";
  for (std::size_t i = 0; i < d.modules.size(); ++i) s += "M 1\n";
  for (const DesiredSysctl& k : d.sysctls) s += "S " + k.value + "\n";
  for (std::size_t i = 0; i < d.services.size(); ++i) s += "U enabled active\n";
  return s + "end\n";
}

TEST(MungeKeyPlan, OnlinePlanDiffSavedPlanAndApplyNeverCarryTheBytes) {
  model::Cluster c = Load(kSlurm);
  ControllerFiles local;
  local.munge_key = Key();
  std::map<std::string, DesiredNode> desired = Desired(c, local, [] {
    Parts p = AllParts();
    p.erase(Part::kAgent);
    return p;
  }());
  const DesiredNode& d = desired["gpu01"];
  const std::string old_key = "OLD-MUNGE-KEY-abcdefghijklmnopqrstuvwxyz-0123456789";
  FakeConnector fake;
  fake.nodes["gpu01"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd == "sh -s") return Exited(0, StateWithOldKey(d, old_key));
    if (cmd.starts_with("cat -- ")) return Exited(0, cmd.find("munge") != std::string::npos ? old_key : "");
    return Exited(0);
  };
  remote::Target t;
  t.node = "gpu01";
  std::vector<remote::Target> targets = {t};
  apply::ReadPlansOptions ro;
  ro.diffs = true;
  std::vector<apply::NodePlanRead> reads = apply::ReadPlans(fake, targets, desired, ro);
  ASSERT_EQ(reads.size(), 1u);
  ASSERT_TRUE(reads[0].plan) << reads[0].error;
  const FileChange* key = nullptr;
  for (const FileChange& f : reads[0].plan->files) {
    if (f.path == kMungeKeyPath) key = &f;
  }
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->action, Action::kChange);
  EXPECT_TRUE(key->content);
  EXPECT_TRUE(key->owner) << "root is not munge";
  EXPECT_EQ(key->owner_to, "munge");
  EXPECT_EQ(key->handler, "systemctl restart munge.service");
  EXPECT_EQ(reads[0].diffs.at(std::string(kMungeKeyPath)), "(secret: content not shown)");
  for (const std::string& line : fake.log["gpu01"]) {
    EXPECT_EQ(line.find("cat -- '/etc/munge/munge.key'"), std::string::npos) << "the node's key was read: " << line;
  }
  const std::string text = report::PlanOnlineText(c.name, reads, "", true, "", report::Style{});
  const std::string json = report::PlanOnlineJson(c.name, reads, true).dump();
  for (const std::string& out : {text, json}) {
    EXPECT_FALSE(HasSecret(out)) << out;
    EXPECT_EQ(out.find("OLD-MUNGE-KEY"), std::string::npos) << out;
  }
  EXPECT_NE(text.find("/etc/munge/munge.key (content, owner root -> munge)"), std::string::npos) << text;
  const std::string saved = ToJson(apply::SavedPlanFrom(reads, desired, "2026-12-02T00:00:00Z", "/srv/inv/cluster.yaml",
                                                        std::string(64, 'a'), ""));
  EXPECT_FALSE(HasSecret(saved)) << saved;
  EXPECT_EQ(saved.find(base::Sha256Hex(kSecret)), std::string::npos) << "not even the key's own digest";

  // apply: the bytes go up once, as munged wants them; no command or journal line holds them.
  const apply::ApplyOptions opts{"20261202T000000Z-0000abcd", "run by t", "t", false, "", std::chrono::seconds(60)};
  auto session = fake.Connect(t);
  ASSERT_TRUE(session.ok());
  const apply::NodeApply done = apply::ApplyNode(**session, d, opts);
  ASSERT_EQ(done.state, apply::NodeApply::State::kApplied) << done.step << ": " << done.detail;
  EXPECT_EQ(fake.nodes["gpu01"].files.at(std::string(kMungeKeyPath)), kSecret);
  EXPECT_EQ(fake.nodes["gpu01"].owners.at(std::string(kMungeKeyPath)), "munge:munge");
  EXPECT_NE(std::find(fake.log["gpu01"].begin(), fake.log["gpu01"].end(), "upload: /etc/munge/munge.key (400)"),
            fake.log["gpu01"].end());
  EXPECT_NE(std::find(fake.log["gpu01"].begin(), fake.log["gpu01"].end(), "exec: systemctl restart munge.service"),
            fake.log["gpu01"].end());
  for (const std::string& line : fake.log["gpu01"]) EXPECT_FALSE(HasSecret(line)) << line;
  for (const auto& [path, content] : fake.nodes["gpu01"].files) {
    if (path != kMungeKeyPath) {
      EXPECT_FALSE(HasSecret(content)) << path;
    }
  }
}

TEST(MungeKeyPlan, AKeyNoLongerWantedIsRemovedWithoutShowingIt) {
  // An inventory that moved off Slurm: the node's key is a managed file to remove, and its
  // diff would print the old key as removed lines; it is never read.
  model::Cluster c = Load("version: 1\ncluster: {name: x}\nprofiles: {p: {cpu: {model: t, sockets: 1, cores_per_socket: 1}}}\n"
                          "nodes: [{name: a, profile: p}]\n");
  std::map<std::string, DesiredNode> desired = Desired(c, ControllerFiles{});
  const std::string old_key(64, 'Q');
  FakeConnector fake;
  fake.nodes["a"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
    if (cmd == "sh -s") {
      std::string s = "os debian\nlike \narch x86_64\n";
      for (std::size_t i = 0; i < desired["a"].files.size(); ++i) s += "N\n";
      for (std::size_t i = 0; i < desired["a"].packages.size(); ++i) s += "P -\n";
      for (std::size_t i = 0; i < desired["a"].modules.size(); ++i) s += "M 0\n";
      for (std::size_t i = 0; i < desired["a"].sysctls.size(); ++i) s += "S 1\n";
      for (std::size_t i = 0; i < desired["a"].services.size(); ++i) s += "U disabled inactive\n";
      s += fmt::format("G /etc/munge/munge.key\nF 400 munge 64 {}\n", base::Sha256Hex(old_key));
      return Exited(0, s + "end\n");
    }
    return Exited(0, old_key);
  };
  remote::Target t;
  t.node = "a";
  std::vector<remote::Target> targets = {t};
  apply::ReadPlansOptions ro;
  ro.diffs = true;
  std::vector<apply::NodePlanRead> reads = apply::ReadPlans(fake, targets, desired, ro);
  ASSERT_TRUE(reads[0].plan) << reads[0].error;
  bool removed = false;
  for (const FileChange& f : reads[0].plan->files) removed = removed || (f.path == kMungeKeyPath && f.action == Action::kRemove);
  EXPECT_TRUE(removed);
  EXPECT_EQ(reads[0].diffs.at(std::string(kMungeKeyPath)), "(secret: content not shown)");
}

}  // namespace
}  // namespace gpuforge::plan
