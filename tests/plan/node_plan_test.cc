#include "gpuforge/plan/node_plan.h"

#include <gtest/gtest.h>

#include "gpuforge/base/sha256.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/render/render.h"

namespace gpuforge::plan {
namespace {

model::Cluster Example(const std::string& name) {
  inventory::LoadOutcome out = inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/" + name);
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

model::Cluster Inline(const std::string& yaml) {
  inventory::LoadOutcome out = inventory::LoadString(yaml, "inline.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

ActualFile Regular(std::string_view content, unsigned mode = 0644) {
  return {ActualFile::Kind::kRegular, base::Sha256Hex(content), mode, "root", content.size()};
}

DesiredPackage Pkg(std::string name, std::string version) {
  DesiredPackage p;
  p.name = std::move(name);
  p.version = std::move(version);
  return p;
}

TEST(PlanVersions, PinMatching) {
  EXPECT_TRUE(VersionMatches("2.28.9-1+cuda13.0", "2.28.9"));
  EXPECT_TRUE(VersionMatches("2.28.9", "2.28.9"));
  EXPECT_TRUE(VersionMatches("1:2.28.9-1", "2.28.9"));  // an unstated epoch does not count
  EXPECT_TRUE(VersionMatches("580.159.04-1", "580.159.04"));
  EXPECT_FALSE(VersionMatches("2.28.90-1", "2.28.9"));
  EXPECT_FALSE(VersionMatches("2.27.7-1+cuda13.0", "2.28.9"));
  EXPECT_FALSE(VersionMatches("1:2.28.9-1", "2:2.28.9"));
  EXPECT_TRUE(VersionMatches("anything", ""));
  EXPECT_FALSE(VersionMatches("", ""));  // not installed meets no pin
  EXPECT_EQ(InstallSpec(OsFamily::kDebian, Pkg("libnccl2", "2.28.9")), "libnccl2=2.28.9-*");
  EXPECT_EQ(InstallSpec(OsFamily::kDebian, Pkg("libnccl2", "2.28.9-1+cuda13.0")), "libnccl2=2.28.9-1+cuda13.0");
  EXPECT_EQ(InstallSpec(OsFamily::kDebian, Pkg("perftest", "")), "perftest");
  EXPECT_EQ(InstallSpec(OsFamily::kRhel, Pkg("libnccl", "2.28.9")), "libnccl-2.28.9");
}

TEST(PlanParts, ParseAndRefuseUnknown) {
  Result<Parts> p = ParseParts("files,packages");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (Parts{Part::kFiles, Part::kPackages}));
  EXPECT_EQ(ParseParts("files,pkgs").error().message,
            "'pkgs' is not a part gpuforge manages; use files, packages, modules, sysctl, services, agent");
  EXPECT_FALSE(ParseParts("").ok());
}

// The H200 example: Ubuntu 24.04, driver branch 580 (open modules), CUDA 12.6, NCCL 2.21.5,
// DOCA OFED (its package, so no rdma-core), NVSwitch (NSCQ with DCGM), GPUDirect over DMA-BUF
// (no nvidia-peermem), Slurm with head01 as the controller (#14 OS).
TEST(PlanDesired, PackagesForTheH200Example) {
  model::Cluster c = Example("h200-ib-32gpu.yaml");
  const model::Node* gpu = c.FindNode("gpu001");
  ASSERT_NE(gpu, nullptr);
  std::vector<std::string> names;
  for (const DesiredPackage& p : DesiredPackages(c, *gpu, OsFamily::kDebian)) names.push_back(p.name + "=" + p.version);
  EXPECT_EQ(names, (std::vector<std::string>{"nvidia-open-580=580.95.05", "nvidia-fabricmanager=580.95.05",
                                             "cuda-toolkit-12-6=", "libnccl2=2.21.5", "libnccl-dev=2.21.5",
                                             "datacenter-gpu-manager-4-cuda12=", "libnvidia-nscq=580.95.05",
                                             "datacenter-gpu-manager-exporter=4.8.2", "doca-ofed=2.9.1", "munge=", "slurmd=", "slurm-client="}));
  DesiredNode d = DesiredNodeState(c, *gpu, {}, AllParts());
  EXPECT_TRUE(d.modules.empty()) << "DMA-BUF: no nvidia-peermem";
  ASSERT_EQ(d.sysctls.size(), 1u);
  EXPECT_EQ(d.sysctls[0].key, "kernel.numa_balancing");
  EXPECT_EQ(d.services,
            (std::vector<std::string>{"nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm", "nvidia-dcgm-exporter",
                                      "munge", "slurmd"}));
  // The driver needs a reboot; the plan says so.
  EXPECT_EQ(DesiredPackages(c, *gpu, OsFamily::kDebian)[0].impact, Impact::kReboot);
  // RHEL names.
  std::vector<std::string> rhel;
  for (const DesiredPackage& p : DesiredPackages(c, *gpu, OsFamily::kRhel)) rhel.push_back(p.name);
  EXPECT_NE(std::find(rhel.begin(), rhel.end(), "libnccl-devel"), rhel.end());
  EXPECT_NE(std::find(rhel.begin(), rhel.end(), "slurm-slurmd"), rhel.end());
  // --only narrows what is managed, and removals go with files.
  DesiredNode only = DesiredNodeState(c, *gpu, {{"/etc/x", "x", 0644}}, {Part::kPackages});
  EXPECT_TRUE(only.files.empty());
  EXPECT_FALSE(only.manage_removals);
  EXPECT_TRUE(only.modules.empty());
  EXPECT_EQ(only.packages.size(), 12u);  // the list above
}

// gres_autodetect: nvml (#14, gres.conf): slurmd's gpu_nvml.so is a package of its own on Debian
// and Ubuntu, planned beside slurmd on the GPU nodes only; RHEL has none to plan.
TEST(PlanDesired, AutodetectNvmlPlansSlurmdsNvmlPluginOnGpuSlurmdNodes) {
  auto has_plugin = [](const model::Cluster& c, const std::string& node, OsFamily f) {
    for (const DesiredPackage& p : DesiredPackages(c, *c.FindNode(node), f)) {
      if (p.name == "slurm-wlm-nvml-plugin") return true;
    }
    return false;
  };
  model::Cluster c = Example("h200-ib-32gpu.yaml");
  EXPECT_FALSE(has_plugin(c, "gpu001", OsFamily::kDebian)) << "File= lines need no plugin";
  c.software.scheduler.gres_autodetect_nvml = true;
  EXPECT_TRUE(has_plugin(c, "gpu001", OsFamily::kDebian));
  EXPECT_FALSE(has_plugin(c, "gpu001", OsFamily::kRhel));
  EXPECT_FALSE(has_plugin(c, "head01", OsFamily::kDebian)) << "the controller runs no slurmd";
  EXPECT_FALSE(has_plugin(c, "login01", OsFamily::kDebian)) << "a login node runs no slurmd";
}

// software.monitoring.dcgm_exporter and software.packages over the derived exporter (#14).
TEST(PlanDesired, TheExporterChoiceAndAnOperatorsPinOfADerivedPackage) {
  auto exporter_of = [](const model::Cluster& c, const std::string& node) {
    std::vector<std::string> out;
    for (const DesiredPackage& p : DesiredPackages(c, *c.FindNode(node), OsFamily::kDebian)) {
      if (p.name == "datacenter-gpu-manager-exporter") out.push_back(p.version);
    }
    return out;
  };
  model::Cluster slurm = Example("h200-ib-32gpu.yaml");
  EXPECT_EQ(exporter_of(slurm, "gpu001"), (std::vector<std::string>{"4.8.2"}));
  // The operator's pin replaces the derived one, once, and its service is listed once.
  slurm.software.packages.push_back({"datacenter-gpu-manager-exporter", "4.8.3", "nvidia-dcgm-exporter", {}});
  EXPECT_EQ(exporter_of(slurm, "gpu001"), (std::vector<std::string>{"4.8.3"}));
  DesiredNode d = DesiredNodeState(slurm, *slurm.FindNode("gpu001"), {}, AllParts());
  EXPECT_EQ(std::count(d.services.begin(), d.services.end(), "nvidia-dcgm-exporter"), 1);
  // external: the site runs it; host: on Kubernetes too.
  slurm.software.packages.clear();
  slurm.software.dcgm_exporter = "external";
  EXPECT_TRUE(exporter_of(slurm, "gpu001").empty());
  model::Cluster k8s = Example("a100-roce-k8s.yaml");
  const std::string k8s_gpu = k8s.nodes.back().name;
  EXPECT_TRUE(exporter_of(k8s, k8s_gpu).empty());
  k8s.software.dcgm_exporter = "host";
  EXPECT_EQ(exporter_of(k8s, k8s_gpu), (std::vector<std::string>{"4.8.2"}));

  const std::string yaml = R"Y(version: 1
cluster: {name: t}
profiles:
  p: {gpus: {model: H200, count: 8}, cpu: {sockets: 1, cores_per_socket: 4}}
nodes:
  - {name: n01, profile: p, address: 127.0.0.1}
software:
  monitoring: {dcgm_exporter: host}
)Y";
  inventory::LoadOutcome no_cuda = inventory::LoadString(yaml, "m.yaml");
  ASSERT_FALSE(no_cuda.ok());
  EXPECT_NE(no_cuda.FormatDiagnostics().find("m.yaml:8:31: error: dcgm_exporter: host needs software.cuda"), std::string::npos)
      << no_cuda.FormatDiagnostics();
  std::string typo = yaml;
  typo.replace(typo.find("host"), 4, "hots");
  inventory::LoadOutcome bad = inventory::LoadString(typo, "m.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.FormatDiagnostics().find("m.yaml:8:"), std::string::npos) << bad.FormatDiagnostics();
  EXPECT_NE(bad.FormatDiagnostics().find("hots"), std::string::npos) << bad.FormatDiagnostics();
  std::string with_cuda = yaml + "  cuda: \"12.6\"\n";
  EXPECT_TRUE(inventory::LoadString(with_cuda, "m.yaml").ok());
}

DesiredNode Sample() {
  DesiredNode d;
  d.files = {{"/etc/nccl.conf", "N\n", 0644}};
  d.packages = {{"libnccl2", "2.28.9", Impact::kLive, "next job", "software.nccl"},
                {"cuda-drivers-580", "580.159.04", Impact::kReboot, "reboot", "software.driver"}};
  d.modules = {"nvidia-peermem"};
  d.sysctls = {{"kernel.numa_balancing", "0"}};
  d.services = {"slurmd", "nvidia-dcgm"};
  return d;
}

ActualNode Converged() {
  ActualNode a;
  a.os_id = "ubuntu";
  a.os_like = "debian";
  a.arch = "x86_64";
  a.files = {Regular("N\n")};
  a.packages = {"2.28.9-1+cuda13.0", "580.159.04-1"};
  a.modules = {true};
  a.sysctls = {"0"};
  a.services = {{"enabled", "active"}, {"enabled", "active"}};
  return a;
}

TEST(PlanDesired, ExtraPackagesFromTheInventoryWithTheirServices) {
  std::string yaml = R"Y(version: 1
cluster: {name: t}
profiles:
  p: {gpus: {model: H200, count: 8}, cpu: {sockets: 1, cores_per_socket: 4}}
nodes:
  - {name: n01, profile: p, address: 127.0.0.1}
software:
  os: {distro: debian}
  packages:
    - {name: datacenter-gpu-manager-exporter, version: "4.5.2", service: nvidia-dcgm-exporter}
)Y";
  model::Cluster c = Inline(yaml);
  DesiredNode d = DesiredNodeState(c, *c.FindNode("n01"), {}, AllParts());
  ASSERT_FALSE(d.packages.empty());
  EXPECT_EQ(d.packages.back().name, "datacenter-gpu-manager-exporter");
  EXPECT_EQ(InstallSpec(OsFamily::kDebian, d.packages.back()), "datacenter-gpu-manager-exporter=4.5.2-*");
  EXPECT_EQ(d.services.back(), "nvidia-dcgm-exporter");
  std::string bad = yaml;
  bad.replace(bad.find("datacenter-gpu-manager-exporter"), 31, "Bad;Name");
  inventory::LoadOutcome out = inventory::LoadString(bad, "bad.yaml");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.FormatDiagnostics().find("bad.yaml:10:14: error: package name 'Bad;Name' must be [a-z0-9.+-]"),
            std::string::npos)
      << out.FormatDiagnostics();
}

TEST(PlanNodeState, ConvergedNodeHasNoChanges) {
  Result<NodePlan> p = PlanNodeState("gpu01", Sample(), Converged());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_FALSE(p->HasChanges());
  EXPECT_EQ(p->items.size(), 6u);
}

TEST(PlanNodeState, EachKindOfDifference) {
  ActualNode a = Converged();
  a.packages = {"2.27.7-1+cuda13.0", ""};
  a.modules = {false};
  a.sysctls = {"1"};
  a.services = {{"not-found", "inactive"}, {"disabled", "active"}};
  a.managed = {"/etc/nccl.conf", "/etc/old.conf", "/etc/gone.conf"};
  a.managed_files = {Regular("N\n"), Regular("old\n"), {}};
  Result<NodePlan> p = PlanNodeState("gpu01", Sample(), a);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->items.size(), 6u);
  const auto& it = p->items;
  EXPECT_EQ(it[0].action, Action::kChange);
  EXPECT_EQ(it[0].from, "2.27.7-1+cuda13.0");
  EXPECT_EQ(it[0].want, "libnccl2=2.28.9-*");
  EXPECT_EQ(it[1].action, Action::kCreate);
  EXPECT_EQ(it[1].impact, Impact::kReboot);
  EXPECT_EQ(it[2].action, Action::kCreate);  // module
  EXPECT_EQ(it[3].action, Action::kChange);  // sysctl 1 -> 0
  EXPECT_EQ(it[3].from, "1");
  EXPECT_EQ(it[4].action, Action::kCreate);  // unit comes with its package
  EXPECT_EQ(it[4].want, "enable start");
  EXPECT_EQ(it[5].action, Action::kChange);
  EXPECT_EQ(it[5].want, "enable");
  // /etc/old.conf was written by an earlier apply and is no longer rendered; gone.conf is
  // already gone, so there is nothing to remove.
  ASSERT_EQ(p->files.size(), 2u);
  EXPECT_EQ(p->files[1].path, "/etc/old.conf");
  EXPECT_EQ(p->files[1].action, Action::kRemove);
  EXPECT_EQ(p->Count(Action::kCreate), 3u);
  EXPECT_EQ(p->Count(Action::kChange), 3u);
  EXPECT_EQ(p->Count(Action::kRemove), 1u);
  EXPECT_EQ(p->WorstImpact(), Impact::kReboot);
}

TEST(PlanNodeState, SysctlVectorsCompareOnWordsAndUnknownKeysShow) {
  DesiredNode d;
  d.sysctls = {{"net.ipv4.tcp_rmem", "4096 87380 16777216"}, {"kernel.nope", "1"}};
  ActualNode a = Converged();
  a.files.clear();
  a.packages.clear();
  a.modules.clear();
  a.services.clear();
  a.sysctls = {"4096\t87380   16777216", std::nullopt};
  Result<NodePlan> p = PlanNodeState("gpu01", d, a);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->items[0].action, Action::kNone);
  EXPECT_EQ(p->items[1].action, Action::kChange);
  EXPECT_EQ(p->items[1].from, "(no such key)");
}

TEST(PlanNodeState, RefusesWhatItShouldNotTouch) {
  ActualNode a = Converged();
  a.services[0] = {"masked", "inactive"};
  EXPECT_EQ(PlanNodeState("gpu01", Sample(), a).error().message,
            "node gpu01: service slurmd is masked; gpuforge does not unmask what someone masked on purpose");
  ActualNode rhel = Converged();
  rhel.os_id = "rocky";
  rhel.os_like = "rhel centos fedora";
  EXPECT_EQ(PlanNodeState("gpu01", Sample(), rhel).error().message,
            "node gpu01: the inventory says a debian family OS (software.os.distro) but the node runs 'rocky'");
  ActualNode other = Converged();
  other.os_id = "alpine";
  other.os_like = "";
  EXPECT_NE(PlanNodeState("gpu01", Sample(), other).error().message.find("neither Debian- nor RHEL-like"),
            std::string::npos);
  ActualNode short_answer = Converged();
  short_answer.packages.pop_back();
  EXPECT_FALSE(PlanNodeState("gpu01", Sample(), short_answer).ok());
}

TEST(PlanNodeState, TheAgentGoesOnlyToNodesOfTheBuildsArchitecture) {
  AgentBinary agent{std::make_shared<Blob>(Blob{"\x7f" "ELF...", base::Sha256Hex("\x7f" "ELF...")}), "x86_64"};
  model::Cluster c = Example("h200-ib-32gpu.yaml");
  DesiredNode d = DesiredNodeState(c, *c.FindNode("gpu001"), {{"/etc/a", "a", 0644}, {"/var/z", "z", 0644}},
                                   {Part::kFiles, Part::kAgent}, &agent);
  ASSERT_EQ(d.files.size(), 3u);
  EXPECT_EQ(d.files[1].path, kAgentPath);  // in path order
  EXPECT_EQ(d.files[1].mode, 0755u);
  EXPECT_EQ(d.files[1].Sha256(), agent.blob->sha256);
  ActualNode a;
  a.os_id = "ubuntu";
  a.arch = "x86_64";
  a.files = {Regular("a"), {}, Regular("z")};
  Result<NodePlan> same = PlanNodeState("gpu001", d, a);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->files[1].action, Action::kCreate);
  a.arch = "aarch64";
  Result<NodePlan> other = PlanNodeState("gpu001", d, a);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->files[1].action, Action::kNone);
  EXPECT_EQ(other->files[1].note, "not pushed: the node is aarch64, this build x86_64");
  // A run without the agent part never removes an agent an earlier run pushed.
  DesiredNode files_only = DesiredNodeState(c, *c.FindNode("gpu001"), {{"/etc/a", "a", 0644}}, {Part::kFiles}, &agent);
  ActualNode b;
  b.os_id = "ubuntu";
  b.files = {Regular("a")};
  b.managed = {"/etc/a", std::string(kAgentPath)};
  b.managed_files = {Regular("a"), Regular("\x7f" "ELF...", 0755)};
  Result<NodePlan> kept = PlanNodeState("gpu001", files_only, b);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->HasChanges());
}

TEST(PlanManifest, NextAfterSuccessAndFailure) {
  DesiredNode d = Sample();
  std::vector<std::string> old = {"/etc/nccl.conf", "/etc/old.conf", "/etc/older.conf"};
  EXPECT_EQ(NextManifest(d, old, {}, {}, true), std::vector<std::string>{"/etc/nccl.conf"});
  // Failed after removing old.conf and writing new.conf: older.conf stays listed for next time.
  EXPECT_EQ(NextManifest(d, old, std::vector<std::string>{"/etc/new.conf"}, std::vector<std::string>{"/etc/old.conf"},
                         false),
            (std::vector<std::string>{"/etc/nccl.conf", "/etc/new.conf", "/etc/older.conf"}));
}

TEST(PlanSavedPlan, RoundTripAndStrictParse) {
  SavedPlan p;
  p.created = "2026-11-30T08:00:00Z";
  p.inventory = "/srv/inv.yaml";
  p.inventory_sha256 = base::Sha256Hex("inv");
  p.parts = "files";
  p.nodes = {{"gpu01", DesiredDigest(Sample()), base::Sha256Hex("state"), 1, 2, 0}};
  std::string text = ToJson(p);
  EXPECT_TRUE(LooksLikeSavedPlan(text));
  EXPECT_FALSE(LooksLikeSavedPlan("version: 1\ncluster: {name: x}\n"));
  Result<SavedPlan> back = ParseSavedPlan("p.json", text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->nodes[0].desired_sha256, p.nodes[0].desired_sha256);
  EXPECT_EQ(back->nodes[0].change, 2u);
  std::string evil = text;
  evil.replace(evil.find("gpu01"), 5, "gpu01;reboot");
  EXPECT_EQ(ParseSavedPlan("p.json", evil).error().message,
            "p.json: not a usable saved plan: node name 'gpu01;reboot' is not a host name");
  EXPECT_EQ(ParseSavedPlan("p.json", "{\"schema\": \"gpuforge.saved-plan/v2\"}").error().message,
            "p.json: not a usable saved plan: schema is not gpuforge.saved-plan/v1");
  EXPECT_FALSE(ParseSavedPlan("p.json", "{").ok());
}

TEST(PlanSavedPlan, DigestSeesEveryPart) {
  const std::string base = DesiredDigest(Sample());
  DesiredNode d = Sample();
  d.files[0].content = "N2\n";
  EXPECT_NE(DesiredDigest(d), base);
  d = Sample();
  d.files[0].mode = 0600;
  EXPECT_NE(DesiredDigest(d), base);
  d = Sample();
  d.packages[0].version = "2.28.8";
  EXPECT_NE(DesiredDigest(d), base);
  d = Sample();
  d.services.pop_back();
  EXPECT_NE(DesiredDigest(d), base);
  d = Sample();
  d.sysctls[0].value = "1";
  EXPECT_NE(DesiredDigest(d), base);
  EXPECT_EQ(DesiredDigest(Sample()), base);
}

TEST(PlanRepositories, RenderedAsTheFamilyReadsThem) {
  const std::string yaml = R"Y(version: 1
cluster: {name: t}
profiles:
  p: {cpu: {sockets: 1, cores_per_socket: 4}}
nodes:
  - {name: n01, profile: p, address: 127.0.0.1}
software:
  os: {distro: debian}
  repositories:
    - {name: local, url: "file:/srv/gpuforge-repo", trusted: true}
    - {name: cuda, url: "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/", signed_by: /usr/share/keyrings/cuda.gpg}
)Y";
  model::Cluster c = Inline(yaml);
  ASSERT_EQ(c.software.repositories.size(), 2u);
  EXPECT_EQ(c.software.repositories[0].suite, "./");
  auto body = [](const render::Output& out, const std::string& path) {
    for (const render::RenderedFile& f : out.files) {
      if (f.node == "n01" && f.path == path) return f.content.substr(f.content.find('\n') + 1);  // after the header
    }
    return std::string("(missing)");
  };
  Result<render::Output> apt = render::Render(c, {});
  ASSERT_TRUE(apt.ok()) << apt.error().message;
  EXPECT_NE(body(*apt, "/etc/apt/sources.list.d/gpuforge-local.list").find("\ndeb [trusted=yes] file:/srv/gpuforge-repo ./\n"),
            std::string::npos)
      << body(*apt, "/etc/apt/sources.list.d/gpuforge-local.list");
  EXPECT_NE(body(*apt, "/etc/apt/sources.list.d/gpuforge-cuda.list")
                .find("\ndeb [signed-by=/usr/share/keyrings/cuda.gpg] "
                      "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ ./\n"),
            std::string::npos)
      << body(*apt, "/etc/apt/sources.list.d/gpuforge-cuda.list");
  std::string rocky = yaml;
  rocky.replace(rocky.find("distro: debian"), 14, "distro: rocky");
  Result<render::Output> dnf = render::Render(Inline(rocky), {});
  ASSERT_TRUE(dnf.ok());
  const std::string repo = body(*dnf, "/etc/yum.repos.d/gpuforge-cuda.repo");
  EXPECT_NE(repo.find("[gpuforge-cuda]\nname=gpuforge cuda\nbaseurl=https://developer.download.nvidia.com/compute/cuda/"
                      "repos/debian12/x86_64/\nenabled=1\ngpgcheck=1\ngpgkey=file:///usr/share/keyrings/cuda.gpg\n"),
            std::string::npos)
      << repo;
  EXPECT_NE(body(*dnf, "/etc/yum.repos.d/gpuforge-local.repo").find("gpgcheck=0\n"), std::string::npos);
  inventory::LoadOutcome bad = inventory::LoadString(
      R"Y(version: 1
cluster: {name: t}
profiles:
  p: {cpu: {sockets: 1, cores_per_socket: 4}}
nodes:
  - {name: n01, profile: p, address: 127.0.0.1}
software:
  repositories:
    - {name: x, url: "http://h/$(reboot)"}
    - {name: y, url: "ftp://h/"}
    - {name: z, url: "file:/r", trusted: true, signed_by: /k}
)Y",
      "bad.yaml");
  ASSERT_FALSE(bad.ok());
  const std::string diags = bad.FormatDiagnostics();
  EXPECT_NE(diags.find("bad.yaml:9:"), std::string::npos) << diags;
  EXPECT_NE(diags.find("URL"), std::string::npos) << diags;
  EXPECT_NE(diags.find("bad.yaml:10:"), std::string::npos) << diags;
  EXPECT_NE(diags.find("both trusted"), std::string::npos) << diags;
}

}  // namespace
}  // namespace gpuforge::plan
