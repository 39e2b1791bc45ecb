// Slurm accounting (software.scheduler.accounting, #14): what the inventory key gets from the
// loader, render (slurm.conf lines, slurmdbd.conf, the MariaDB settings) and plan (packages,
// services in start order, the password file as a secret, the restarts). The real slurmdbd,
// MariaDB and slurmctld read these files in slurm_daemons_test.cc (RenderSlurmDaemonsAccounting).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/plan/controller_files.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

// A controller, a login node, a separate database node, and GPU nodes of two generations.
constexpr const char* kCluster = R"(version: 1
cluster: {name: Acct}
profiles:
  h100: {gpus: {model: H100, count: 8}, cpu: {model: x, sockets: 2, cores_per_socket: 48, threads_per_core: 2}, memory: 2TiB}
  h200: {gpus: {model: H200, count: 8}, cpu: {model: x, sockets: 2, cores_per_socket: 48, threads_per_core: 2}, memory: 2TiB}
  head: {cpu: {model: x, sockets: 1, cores_per_socket: 16, threads_per_core: 2}, memory: 256GB}
nodes:
  - {name: ctl1, address: 10.0.0.2, profile: head, role: controller}
  - {name: login1, address: 10.0.0.3, profile: head, role: login}
  - {name: db1, address: 10.0.0.4, profile: head, role: storage}
  - {name: "h1-[01-02]", address: "10.0.1.[1-2]", profile: h100}
  - {name: "h2-[01-02]", address: "10.0.2.[1-2]", profile: h200}
software:
  scheduler:
    kind: slurm
    controller: ctl1
)";

render::Options TestOptions() {
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = "slurm_accounting_test.yaml";
  return o;
}

inventory::LoadOutcome Load(const std::string& accounting) {
  return inventory::LoadString(std::string(kCluster) + accounting, "/inv/slurm_accounting_test.yaml");
}

model::Cluster LoadOk(const std::string& accounting) {
  inventory::LoadOutcome out = Load(accounting);
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

render::Output RenderOk(const model::Cluster& c) {
  Result<render::Output> out = render::Render(c, TestOptions());
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? std::move(*out) : render::Output{};
}

const render::RenderedFile* Find(const render::Output& out, const std::string& node, std::string_view path) {
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

// The non-comment lines of a file that start with `prefix`.
std::vector<std::string> Lines(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(RenderSlurmAccounting, NothingWithoutTheKey) {
  render::Output out = RenderOk(LoadOk(""));
  const render::RenderedFile* conf = Find(out, "", "/etc/slurm/slurm.conf");
  ASSERT_NE(conf, nullptr);
  EXPECT_TRUE(Lines(conf->content, "AccountingStorage").empty()) << conf->content;
  EXPECT_TRUE(Lines(conf->content, "JobAcctGather").empty()) << conf->content;
  for (const render::RenderedFile& f : out.files) {
    EXPECT_NE(f.path, model::kSlurmdbdConfPath) << f.node;
    EXPECT_NE(f.path, model::kMariadbConfDebian) << f.node;
  }
}

TEST(RenderSlurmAccounting, SlurmConfSendsJobsWithTheirGpusToSlurmdbd) {
  model::Cluster c = LoadOk("    accounting: {host: db1, storage_pass_file: secrets/dbd.pass}\n");
  ASSERT_TRUE(c.software.scheduler.accounting.has_value());
  EXPECT_EQ(c.software.scheduler.accounting->storage_pass_file, "/inv/secrets/dbd.pass") << "relative to the inventory";
  render::Output out = RenderOk(c);
  for (const std::string node : {"", "ctl1", "login1", "db1", "h1-01", "h2-02"}) {
    const render::RenderedFile* conf = Find(out, node, "/etc/slurm/slurm.conf");
    ASSERT_NE(conf, nullptr) << node << ": sacctmgr on the database node reads slurm.conf too";
    EXPECT_EQ(Lines(conf->content, "Accounting"),
              (std::vector<std::string>{"AccountingStorageType=accounting_storage/slurmdbd",
                                        "AccountingStorageHost=10.0.0.4", "AccountingStoragePort=6819",
                                        "AccountingStorageTRES=gres/gpu,gres/gpu:h100,gres/gpu:h200"}))
        << node;
    EXPECT_EQ(Lines(conf->content, "JobAcctGather"),
              (std::vector<std::string>{"JobAcctGatherType=jobacct_gather/cgroup", "JobAcctGatherFrequency=task=30"}));
  }
  // slurmdbd.conf on db1 only, 0600 slurm:slurm (slurmdbd refuses anything else), naming the
  // password file it Includes and never a password.
  for (const render::RenderedFile& f : out.files) {
    if (f.path == model::kSlurmdbdConfPath) {
      EXPECT_EQ(f.node, "db1");
    }
  }
  const render::RenderedFile* dbd = Find(out, "db1", model::kSlurmdbdConfPath);
  ASSERT_NE(dbd, nullptr);
  EXPECT_EQ(dbd->mode, "0600");
  EXPECT_EQ(dbd->owner, "slurm:slurm");
  EXPECT_EQ(Lines(dbd->content, "DbdHost="), std::vector<std::string>{"DbdHost=db1"});
  EXPECT_EQ(Lines(dbd->content, "Storage"),
            (std::vector<std::string>{"StorageType=accounting_storage/mysql", "StorageHost=localhost", "StoragePort=3306",
                                      "StorageUser=slurm", "StorageLoc=slurm_acct_db"}));
  EXPECT_EQ(Lines(dbd->content, "Include "), std::vector<std::string>{"Include /etc/slurm/slurmdbd-storage-pass.conf"});
  EXPECT_EQ(dbd->content.find("StoragePass"), dbd->content.find("StoragePass) is in its own file")) << dbd->content;
  // The local database's server settings, as SchedMD recommends them.
  const render::RenderedFile* cnf = Find(out, "db1", model::kMariadbConfDebian);
  ASSERT_NE(cnf, nullptr);
  EXPECT_EQ(cnf->owner, "root:root");
  EXPECT_EQ(Lines(cnf->content, "innodb_"),
            (std::vector<std::string>{"innodb_buffer_pool_size=4096M", "innodb_log_file_size=64M",
                                      "innodb_lock_wait_timeout=900"}));
}

TEST(RenderSlurmAccounting, TheControllerByDefaultAndARemoteDatabaseIsTheSites) {
  model::Cluster c = LoadOk(
      "    accounting: {storage_host: db.example.org, storage_port: 3307, storage_user: acct, database: gpu_acct,\n"
      "                 storage_pass_file: /vault/dbd.pass}\n");
  render::Output out = RenderOk(c);
  const render::RenderedFile* dbd = Find(out, "ctl1", model::kSlurmdbdConfPath);
  ASSERT_NE(dbd, nullptr) << "slurmdbd runs on the controller when no host is named";
  EXPECT_EQ(Lines(dbd->content, "Storage"),
            (std::vector<std::string>{"StorageType=accounting_storage/mysql", "StorageHost=db.example.org",
                                      "StoragePort=3307", "StorageUser=acct", "StorageLoc=gpu_acct"}));
  EXPECT_EQ(Find(out, "ctl1", model::kMariadbConfDebian), nullptr) << "a remote database's server is not gpuforge's";
  EXPECT_EQ(Lines(Find(out, "", "/etc/slurm/slurm.conf")->content, "AccountingStorageHost="),
            std::vector<std::string>{"AccountingStorageHost=10.0.0.2"});
  const model::SlurmRole role = model::SlurmRoleOf(c, *c.FindNode("ctl1"));
  EXPECT_TRUE(role.slurmdbd);
  EXPECT_FALSE(role.database);
}

TEST(RenderSlurmAccounting, BadValuesAreRefusedWithTheirPlace) {
  for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
           {"{host: db1}", "missing"},
           {"{host: nosuch, storage_pass_file: p}", "accounting host 'nosuch' is not a node in the inventory"},
           {"{storage_pass_file: p, storage_port: 0}", "storage_port"},
           {"{storage_pass_file: p, storage_port: 70000}", "storage_port"},
           {"{storage_pass_file: p, database: \"acct;drop\"}", "'database' in software.scheduler.accounting must be 1 to 32 of"},
           {"{storage_pass_file: p, storage_user: \"a b\"}", "'storage_user' in software.scheduler.accounting must be"},
           {"{storage_pass_file: p, storage_host: \"db;rm\"}", "accounting storage_host"},
           {"{storage_pass_file: \"\"}", "'storage_pass_file' in software.scheduler.accounting must name a file"},
           {"{storage_pass_file: p, password: x}", "password"},
       }) {
    inventory::LoadOutcome out = Load("    accounting: " + value + "\n");
    EXPECT_FALSE(out.ok()) << value;
    const std::string diags = out.FormatDiagnostics();
    EXPECT_NE(diags.find(why), std::string::npos) << value << "\n" << diags;
    EXPECT_NE(diags.find("slurm_accounting_test.yaml:"), std::string::npos) << diags;
  }
  // Kubernetes has no slurmdbd.
  std::string k8s = kCluster;
  k8s.replace(k8s.find("kind: slurm"), 11, "kind: kubernetes");
  inventory::LoadOutcome out = inventory::LoadString(k8s + "    accounting: {storage_pass_file: p}\n", "k.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_NE(out.FormatDiagnostics().find("'accounting' in software.scheduler is Slurm's"), std::string::npos)
      << out.FormatDiagnostics();
}

TEST(SlurmdbdPassFile, OneLineThatSlurmdbdConfCanCarryAndNeverQuoted) {
  model::Cluster c = LoadOk("    accounting: {host: db1, storage_pass_file: dbd.pass}\n");
  const model::Scheduler::Accounting& a = *c.software.scheduler.accounting;
  for (const std::string ok : {"s3cret-Pass_42", "s3cret-Pass_42\n", "s3cret-Pass_42\r\n"}) {
    Result<std::shared_ptr<const plan::Blob>> pass = plan::SlurmdbdPassFile(a, ok);
    ASSERT_TRUE(pass.ok()) << pass.error().message;
    EXPECT_EQ((*pass)->bytes, "StoragePass=s3cret-Pass_42\n");
  }
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"", "is empty"},
           {"\n", "is empty"},
           {"pw1\npw2\n", "more than one line"},
           {"has space", "holds a space"},
           {"hash#tag", "holds a space, '#'"},
           {"quo\"te", "holds a space"},
           {"tab\there", "holds a space"},
           {std::string(5000, 'x'), "is larger than"},
       }) {
    Result<std::shared_ptr<const plan::Blob>> pass = plan::SlurmdbdPassFile(a, bad);
    ASSERT_FALSE(pass.ok()) << bad;
    EXPECT_NE(pass.error().message.find(why), std::string::npos) << pass.error().message;
    EXPECT_NE(pass.error().message.find("slurm_accounting_test.yaml:"), std::string::npos) << pass.error().message;
    if (bad.size() > 3 && bad.size() < 100) {
      EXPECT_EQ(pass.error().message.find(bad.substr(0, 4)), std::string::npos) << "quotes the password: " << pass.error().message;
    }
  }
}

const plan::DesiredFile* FileAt(const plan::DesiredNode& d, std::string_view path) {
  for (const plan::DesiredFile& f : d.files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<std::string> PackageNames(const plan::DesiredNode& d) {
  std::vector<std::string> out;
  for (const plan::DesiredPackage& p : d.packages) out.push_back(p.name);
  return out;
}

TEST(PlanSlurmAccounting, TheDatabaseNodeGetsItsPackagesServicesAndSecret) {
  model::Cluster c = LoadOk("    accounting: {host: db1, storage_pass_file: dbd.pass}\n");
  render::Output out = RenderOk(c);
  plan::ControllerFiles local;
  auto pass = plan::SlurmdbdPassFile(*c.software.scheduler.accounting, "s3cret-Pass_42\n");
  ASSERT_TRUE(pass.ok());
  local.slurmdbd_pass = *pass;
  auto desired = [&](const std::string& node) {
    return plan::DesiredNodeState(c, *c.FindNode(node), plan::DesiredFiles(out, node), plan::AllParts(), nullptr, &local);
  };
  plan::DesiredNode db = desired("db1");
  std::vector<std::string> pkgs = PackageNames(db);
  for (const char* want : {"munge", "slurm-client", "slurmdbd", "mariadb-server"}) {
    EXPECT_NE(std::find(pkgs.begin(), pkgs.end(), want), pkgs.end()) << want;
  }
  EXPECT_EQ(std::find(pkgs.begin(), pkgs.end(), "slurmd"), pkgs.end());
  // Start order: munge, the database, slurmdbd.
  EXPECT_EQ(db.services, (std::vector<std::string>{"munge", "mariadb", "slurmdbd"}));
  const plan::DesiredFile* secret = FileAt(db, model::kSlurmdbdPassPath);
  ASSERT_NE(secret, nullptr);
  EXPECT_TRUE(secret->secret);
  EXPECT_EQ(secret->mode, 0600u);
  EXPECT_EQ(secret->owner, "slurm:slurm");
  EXPECT_EQ(secret->Content(), "StoragePass=s3cret-Pass_42\n");
  EXPECT_TRUE(plan::IsSecretPath(model::kSlurmdbdPassPath));
  const plan::DesiredFile* conf = FileAt(db, model::kSlurmdbdConfPath);
  ASSERT_NE(conf, nullptr);
  EXPECT_EQ(conf->owner, "slurm:slurm") << "render's owner reaches what apply uploads";
  EXPECT_EQ(conf->mode, 0600u);
  // A changed file restarts its daemon, the database's settings before slurmdbd's.
  EXPECT_EQ(plan::ImpactFor(model::kSlurmdbdConfPath).handler, "systemctl restart slurmdbd.service");
  EXPECT_EQ(plan::ImpactFor(model::kSlurmdbdPassPath).handler, "systemctl restart slurmdbd.service");
  EXPECT_EQ(plan::ImpactFor(model::kMariadbConfDebian).handler, "systemctl restart mariadb.service");
  // The controller: slurmctld after nothing of the database's; a GPU node: no slurmdbd.
  EXPECT_EQ(desired("ctl1").services, (std::vector<std::string>{"munge", "slurmctld"}));
  plan::DesiredNode gpu = desired("h1-01");
  EXPECT_EQ(FileAt(gpu, model::kSlurmdbdPassPath), nullptr);
  pkgs = PackageNames(gpu);
  EXPECT_EQ(std::find(pkgs.begin(), pkgs.end(), "slurmdbd"), pkgs.end());

  // The offline plan lists the secret by size only.
  std::vector<plan::Resource> listed = plan::DesiredState(c, *c.FindNode("db1"), db);
  bool found = false;
  for (const plan::Resource& r : listed) {
    if (r.id != model::kSlurmdbdPassPath) continue;
    found = true;
    EXPECT_EQ(r.summary.find("s3cret"), std::string::npos) << r.summary;
    EXPECT_NE(r.summary.find("secret: never shown"), std::string::npos) << r.summary;
  }
  EXPECT_TRUE(found);
}

// slurmctld loads its accounting plugin only at start (RenderSlurmDaemonsAccounting.
// TurningAccountingOnNeedsASlurmctldRestart): with accounting, a changed slurm.conf restarts
// slurmctld on the controller, after slurmdbd's restart; everywhere else it stays the one
// cluster-wide `scontrol reconfigure`. Without accounting the controller reconfigures too.
TEST(PlanSlurmAccounting, AChangedSlurmConfRestartsSlurmctldOnTheController) {
  auto slurm_conf_handler = [](const model::Cluster& c, const std::string& node) {
    render::Output out = RenderOk(c);
    plan::DesiredNode d = plan::DesiredNodeState(c, *c.FindNode(node), plan::DesiredFiles(out, node), plan::AllParts());
    std::vector<plan::ActualFile> absent(d.files.size());
    Result<plan::NodePlan> p = plan::PlanNode(node, d.files, absent);
    EXPECT_TRUE(p.ok());
    std::string handler;
    for (const plan::FileChange& f : p->files) {
      if (f.path == "/etc/slurm/slurm.conf") handler = f.handler;
    }
    return std::make_pair(handler, p->Handlers());
  };
  model::Cluster acct = LoadOk("    accounting: {storage_pass_file: dbd.pass}\n");  // slurmdbd on the controller
  auto [ctl, ctl_all] = slurm_conf_handler(acct, "ctl1");
  EXPECT_EQ(ctl, "systemctl restart slurmctld");
  // slurmdbd first: the restarted slurmctld finds it with its new settings.
  auto dbd = std::find(ctl_all.begin(), ctl_all.end(), "systemctl restart slurmdbd.service");
  auto ctld = std::find(ctl_all.begin(), ctl_all.end(), "systemctl restart slurmctld");
  ASSERT_NE(dbd, ctl_all.end());
  ASSERT_NE(ctld, ctl_all.end());
  EXPECT_LT(dbd, ctld);
  EXPECT_TRUE(plan::IsHandler("systemctl restart slurmctld")) << "a pending restart left by a failed run runs again";
  EXPECT_EQ(slurm_conf_handler(acct, "h1-01").first, "scontrol reconfigure");
  EXPECT_EQ(slurm_conf_handler(acct, "login1").first, "scontrol reconfigure");
  EXPECT_EQ(slurm_conf_handler(LoadOk(""), "ctl1").first, "scontrol reconfigure");
  // No path picks the row by itself.
  EXPECT_EQ(plan::ImpactFor("/etc/slurm/slurm.conf").handler, "scontrol reconfigure");
}

}  // namespace
}  // namespace gpuforge
