// The Kubernetes family: every YAML file is parsed back and held field by field against the
// inventory, the launch script is checked by bash and run against a fake torchrun, the worst
// values the loader allows come back as the same strings, and the example's files match their
// golden copies (GPUFORGE_UPDATE_GOLDEN=1 rewrites them).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJob = "/etc/gpuforge/k8s/volcano-job.yaml";
constexpr const char* kQueue = "/etc/gpuforge/k8s/volcano-queue.yaml";
constexpr const char* kKubelet = "/etc/kubernetes/kubelet.conf.d/90-gpuforge.conf";
constexpr const char* kKubeletUnit = "/etc/systemd/system/kubelet.service.d/20-gpuforge.conf";
constexpr const char* kLaunch = "/usr/local/bin/gpuforge-launch-fsdp.sh";
constexpr const char* kExample = "a100-roce-k8s";

model::Cluster LoadExample(const std::string& name) {
  inventory::LoadOutcome out =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/" + name + ".yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

model::Cluster LoadYaml(std::string_view text) {
  inventory::LoadOutcome out = inventory::LoadString(text, "test.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

render::Output RenderCluster(const model::Cluster& c, render::Options o = {}) {
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  if (o.inventory_label.empty()) o.inventory_label = "test.yaml";
  Result<render::Output> out = render::Render(c, o);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? std::move(*out) : render::Output{};
}

bool IsMine(const render::RenderedFile& f) {
  return f.template_name.starts_with("k8s-") || f.template_name == "launch-fsdp.sh.mustache";
}

const render::RenderedFile* Find(const render::Output& out, const std::string& node, const std::string& path) {
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

YAML::Node Parse(const render::Output& out, const std::string& node, const std::string& path) {
  const render::RenderedFile* f = Find(out, node, path);
  EXPECT_NE(f, nullptr) << "no " << (node.empty() ? "_cluster" : node) << ":" << path;
  if (f == nullptr) return YAML::Node();
  try {
    return YAML::Load(f->content);
  } catch (const YAML::Exception& e) {
    ADD_FAILURE() << path << " is not YAML: " << e.what() << "\n" << f->content;
    return YAML::Node();
  }
}

// A double-quoted scalar carries yaml-cpp's non-specific tag "!"; a plain one "?".
bool Quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

// Every plain scalar in a rendered file must be a number or a bool; anything else would be a
// string that a YAML reader may turn into something else.
void ExpectOnlyQuotedStrings(const YAML::Node& n, const std::string& where) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) ExpectOnlyQuotedStrings(it->second, where + "." + it->first.Scalar());
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) ExpectOnlyQuotedStrings(n[i], fmt::format("{}[{}]", where, i));
  } else if (n.IsScalar() && !Quoted(n)) {
    const std::string& s = n.Scalar();
    bool number = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    EXPECT_TRUE(number || s == "true" || s == "false") << where << ": '" << s << "' is an unquoted string";
  }
}

std::string Str(const YAML::Node& n) {
  EXPECT_TRUE(Quoted(n)) << "not a quoted string: " << (n.IsScalar() ? n.Scalar() : "(not a scalar)");
  return n.IsScalar() ? n.Scalar() : "";
}

int Int(const YAML::Node& n) {
  EXPECT_TRUE(n.IsScalar() && !Quoted(n)) << "not a plain number";
  return n.IsScalar() ? n.as<int>() : -1;
}

std::vector<const model::Node*> GpuComputeNodes(const model::Cluster& c) {
  std::vector<const model::Node*> out;
  for (const model::Node* n : c.ComputeNodes()) {
    if (c.ProfileOf(*n).gpu_count() > 0) out.push_back(n);
  }
  return out;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const fs::path& p, const std::string& text, fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  fs::permissions(p, perms);
}

fs::path ScratchDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("gpuforge-k8s-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs `command` through the shell; its exit status, and its stdout and stderr together.
std::pair<int, std::string> RunShell(const std::string& command, const fs::path& dir) {
  fs::path out = dir / "output.txt";
  int rc = std::system(fmt::format("{} >'{}' 2>&1", command, out.string()).c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ReadFile(out)};
}

// Runs the rendered launch script as an executable with a torchrun on PATH that prints what
// it was given: one "arg=" line per argument, then the NCCL environment, sorted.
std::string RunLaunchScript(const render::RenderedFile& script, const std::string& name) {
  fs::path dir = ScratchDir(name);
  WriteFile(dir / "bin" / "torchrun",
            "#!/bin/bash\nfor a in \"$@\"; do printf 'arg=%s\\n' \"$a\"; done\nenv | grep '^NCCL_' | LC_ALL=C sort\n",
            fs::perms::owner_all);
  EXPECT_EQ(script.mode, "0755");
  WriteFile(dir / "launch.sh", script.content, fs::perms::owner_all);
  auto [rc, output] = RunShell(fmt::format("env -i PATH='{}':/usr/bin:/bin '{}' --extra", (dir / "bin").string(),
                                      (dir / "launch.sh").string()),
                          dir);
  EXPECT_EQ(rc, 0) << output;
  fs::remove_all(dir);
  return output;
}

class RenderK8sExample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new model::Cluster(LoadExample(kExample));
    render::Options o;
    o.inventory_label = fmt::format("inventories/examples/{}.yaml", kExample);
    out_ = new render::Output(RenderCluster(*cluster_, o));
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete out_;
  }
  const model::Cluster& c() { return *cluster_; }
  const render::Output& out() { return *out_; }
  static model::Cluster* cluster_;
  static render::Output* out_;
};
model::Cluster* RenderK8sExample::cluster_ = nullptr;
render::Output* RenderK8sExample::out_ = nullptr;

TEST_F(RenderK8sExample, ExampleIsKubernetesWithVolcano) {
  ASSERT_EQ(c().software.scheduler.kind, model::SchedulerKind::kKubernetes);
  ASSERT_TRUE(c().software.scheduler.volcano);
  EXPECT_TRUE(out().skipped.empty() || std::none_of(out().skipped.begin(), out().skipped.end(),
                                                    [](const render::Skip& s) { return s.path == kJob; }));
}

TEST_F(RenderK8sExample, EveryYamlFileHoldsOnlyQuotedStrings) {
  for (const render::RenderedFile& f : out().files) {
    if (!IsMine(f) || f.path == kLaunch || f.path == kKubeletUnit) continue;
    ExpectOnlyQuotedStrings(Parse(out(), f.node, f.path), f.node + ":" + f.path);
  }
}

TEST_F(RenderK8sExample, VolcanoJobMatchesInventory) {
  YAML::Node job = Parse(out(), "", kJob);
  ASSERT_TRUE(job.IsMap());
  std::vector<const model::Node*> nodes = GpuComputeNodes(c());
  ASSERT_EQ(nodes.size(), 4u);
  int gpus = c().ProfileOf(*nodes.front()).gpu_count();
  ASSERT_EQ(gpus, 4);

  EXPECT_EQ(Str(job["apiVersion"]), "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(Str(job["kind"]), "Job");
  EXPECT_EQ(Str(job["metadata"]["name"]), "sivaro-a100-roce-fsdp");
  EXPECT_EQ(Str(job["spec"]["schedulerName"]), "volcano");
  EXPECT_EQ(Str(job["spec"]["queue"]), "sivaro-a100-roce");
  EXPECT_EQ(Int(job["spec"]["minAvailable"]), static_cast<int>(nodes.size()));
  ASSERT_EQ(job["spec"]["tasks"].size(), 1u);
  YAML::Node task = job["spec"]["tasks"][0];
  EXPECT_EQ(Str(task["name"]), "worker");
  EXPECT_EQ(Int(task["replicas"]), static_cast<int>(nodes.size()));

  // One failed pod leaves its peers hung in a collective: any pod or task failure restarts
  // the whole Job, and the kubelet restarts nothing by itself (#14). Event and action names
  // are Volcano's (pkg/apis/bus/v1alpha1 events.go, actions.go; the CRD's event enum).
  EXPECT_EQ(Int(job["spec"]["maxRetry"]), 3);
  std::vector<std::pair<std::string, std::string>> policies;
  for (const YAML::Node& p : job["spec"]["policies"]) policies.emplace_back(Str(p["event"]), Str(p["action"]));
  EXPECT_EQ(policies, (std::vector<std::pair<std::string, std::string>>{
                          {"PodEvicted", "RestartJob"}, {"PodFailed", "RestartJob"}, {"TaskFailed", "RestartJob"}}));

  YAML::Node pod = task["template"]["spec"];
  EXPECT_EQ(Str(pod["restartPolicy"]), "Never");
  EXPECT_TRUE(pod["hostNetwork"].as<bool>());
  YAML::Node hosts = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                        ["matchExpressions"][0];
  EXPECT_EQ(Str(hosts["key"]), "kubernetes.io/hostname");
  ASSERT_EQ(hosts["values"].size(), nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) EXPECT_EQ(Str(hosts["values"][i]), nodes[i]->name);

  ASSERT_EQ(pod["containers"].size(), 1u);
  YAML::Node ctr = pod["containers"][0];
  EXPECT_EQ(Str(ctr["image"]), "registry.invalid/gpuforge/set-defaults-vars-train-image:unset");
  std::vector<std::string> cmd;
  for (const YAML::Node& a : ctr["command"]) cmd.push_back(Str(a));
  ASSERT_GE(cmd.size(), 7u);
  EXPECT_EQ(cmd[0], "torchrun");
  EXPECT_EQ(cmd[1], fmt::format("--nnodes={}", nodes.size()));
  EXPECT_EQ(cmd[2], fmt::format("--nproc_per_node={}", gpus));
  EXPECT_EQ(cmd[3], "--rdzv_backend=c10d");
  EXPECT_EQ(cmd[4], fmt::format("--rdzv_endpoint={}:29400", nodes.front()->address));
  EXPECT_EQ(cmd[5], "--rdzv_id=sivaro-a100-roce-fsdp");
  EXPECT_EQ(cmd[6], "train.py");
  auto arg_after = [&](const std::string& flag) {
    auto it = std::find(cmd.begin(), cmd.end(), flag);
    return it != cmd.end() && it + 1 != cmd.end() ? *(it + 1) : std::string("(missing)");
  };
  EXPECT_EQ(arg_after("--model_size"), "13b");
  EXPECT_EQ(arg_after("--mixed_precision"), c().workload.precision);
  EXPECT_EQ(arg_after("--sharding_strategy"), "FULL_SHARD");

  // Guaranteed QoS: requests == limits for every resource. 2 x 96 cores x 2 threads less 4
  // reserved and 2 for DaemonSets; 1 TB less 5% headroom less 16Gi reserved, in whole Gi.
  YAML::Node limits = ctr["resources"]["limits"];
  YAML::Node requests = ctr["resources"]["requests"];
  EXPECT_EQ(Int(limits["nvidia.com/gpu"]), gpus);
  EXPECT_EQ(Int(limits["rdma/rdma_shared_device_a"]), 1) << "defaults.vars.k8s_rdma_resource";
  EXPECT_EQ(Str(limits["cpu"]), "378");
  EXPECT_EQ(Str(limits["memory"]), "868Gi");
  EXPECT_EQ(limits.size(), 4u);
  ASSERT_EQ(requests.size(), limits.size());
  for (auto it = limits.begin(); it != limits.end(); ++it) {
    EXPECT_EQ(requests[it->first.Scalar()].Scalar(), it->second.Scalar()) << it->first.Scalar();
  }
  EXPECT_EQ(Str(ctr["securityContext"]["capabilities"]["add"][0]), "IPC_LOCK");

  // The inventory's NCCL environment in written order; no topology file, which the NCCL family
  // renders only from measured PCI trees (none in this render).
  // NCCL_IB_HCA as an exact match: the job's environment wins over nccl.conf (#13 part 4).
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& [k, v] : c().software.nccl_env) want.emplace_back(k, k == "NCCL_IB_HCA" ? "=" + v : v);
  want.emplace_back("NCCL_NET", "IB");  // RoCE: IB verbs or fail, never a silent fall back to sockets
  std::vector<std::pair<std::string, std::string>> got;
  for (const YAML::Node& e : ctr["env"]) got.emplace_back(Str(e["name"]), Str(e["value"]));
  EXPECT_EQ(got, want);

  std::map<std::string, std::string> host_paths;
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["hostPath"]) host_paths[Str(v["name"])] = Str(v["hostPath"]["path"]);
  }
  EXPECT_EQ(host_paths, (std::map<std::string, std::string>{{"nccl-conf", "/etc/nccl.conf"}}));
  std::set<std::string> mounts;
  for (const YAML::Node& m : ctr["volumeMounts"]) mounts.insert(Str(m["mountPath"]));
  EXPECT_EQ(mounts, (std::set<std::string>{"/dev/shm", "/etc/nccl.conf"}));
  // /dev/shm is a memory-backed emptyDir of a quarter of the pod's memory.
  bool shm = false;
  for (const YAML::Node& v : pod["volumes"]) {
    if (Str(v["name"]) != "dshm") continue;
    shm = true;
    EXPECT_EQ(Str(v["emptyDir"]["medium"]), "Memory");
    EXPECT_EQ(Str(v["emptyDir"]["sizeLimit"]), "217Gi");
  }
  EXPECT_TRUE(shm);
}

TEST_F(RenderK8sExample, VolcanoQueueCapsTheClustersGpus) {
  YAML::Node q = Parse(out(), "", kQueue);
  ASSERT_TRUE(q.IsMap());
  EXPECT_EQ(Str(q["apiVersion"]), "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(Str(q["kind"]), "Queue");
  EXPECT_EQ(Str(q["metadata"]["name"]), "sivaro-a100-roce");
  EXPECT_EQ(Int(q["spec"]["capability"]["nvidia.com/gpu"]), c().TotalGpus());
  EXPECT_EQ(c().TotalGpus(), 16);
}

TEST_F(RenderK8sExample, KubeletConfigOnEveryGpuNodeOnly) {
  for (const model::Node& n : c().nodes) {
    const render::RenderedFile* f = Find(out(), n.name, kKubelet);
    if (c().ProfileOf(n).gpu_count() == 0) {
      EXPECT_EQ(f, nullptr) << n.name << " has no GPUs";
      continue;
    }
    YAML::Node k = Parse(out(), n.name, kKubelet);
    ASSERT_TRUE(k.IsMap()) << n.name;
    EXPECT_EQ(Str(k["apiVersion"]), "kubelet.config.k8s.io/v1beta1");
    EXPECT_EQ(Str(k["kind"]), "KubeletConfiguration");
    EXPECT_EQ(Str(k["topologyManagerPolicy"]), c().software.scheduler.topology_manager_policy);
    EXPECT_EQ(Str(k["topologyManagerScope"]), "pod");
    EXPECT_FALSE(k["cpuManagerPolicy"]) << "the inventory sets none";
    EXPECT_EQ(Str(k["systemReserved"]["cpu"]), std::to_string(*c().software.scheduler.reserved_cpus));
    EXPECT_EQ(Str(k["systemReserved"]["memory"]), "16Gi");
    EXPECT_EQ(*c().software.scheduler.reserved_memory_bytes, 16.0 * 1024 * 1024 * 1024);
    EXPECT_FALSE(k["memoryManagerPolicy"]) << "best-effort without static CPUs asks for no alignment";
    EXPECT_FALSE(k["reservedSystemCPUs"]);
  }
  EXPECT_EQ(c().software.scheduler.topology_manager_policy, "best-effort");
}

// The kubelet reads the drop-in only with --config-dir naming its directory, and only files
// ending in .conf there (cmd/kubelet/app/server.go mergeKubeletConfigurations); kubeadm's
// unit does not pass the flag, so the systemd drop-in restates its ExecStart with it.
TEST_F(RenderK8sExample, KubeletUnitDropInAddsConfigDir) {
  for (const model::Node* n : GpuComputeNodes(c())) {
    const render::RenderedFile* f = Find(out(), n->name, kKubeletUnit);
    ASSERT_NE(f, nullptr) << n->name;
    EXPECT_EQ(f->mode, "0644");
    std::vector<std::string> exec;
    std::istringstream lines(f->content);
    bool service = false;
    for (std::string line; std::getline(lines, line);) {
      if (line == "[Service]") service = true;
      if (line.starts_with("ExecStart=")) exec.push_back(line);
    }
    EXPECT_TRUE(service);
    ASSERT_EQ(exec.size(), 2u) << f->content;
    EXPECT_EQ(exec[0], "ExecStart=") << "an empty ExecStart= first, or systemd refuses a second command";
    EXPECT_EQ(exec[1],
              "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS "
              "$KUBELET_EXTRA_ARGS --config-dir=" + fs::path(kKubelet).parent_path().string());
    EXPECT_EQ(fs::path(kKubelet).extension(), ".conf");
  }
  EXPECT_EQ(Find(out(), "k8s-cp01", kKubeletUnit), nullptr) << "no GPUs";
}

// systemd itself reads the unit drop-in over a kubeadm-shaped kubelet.service (the kubelet
// path swapped for /bin/true, which exists here): `systemd-analyze verify` accepts it, and
// refuses it without the ExecStart= reset, which would leave two commands.
TEST_F(RenderK8sExample, SystemdAcceptsTheKubeletUnitDropIn) {
  if (!fs::exists("/usr/bin/systemd-analyze")) GTEST_SKIP() << "no systemd-analyze";
  const render::RenderedFile* f = Find(out(), "gpu01", kKubeletUnit);
  ASSERT_NE(f, nullptr);
  std::string dropin = f->content;
  for (std::size_t at; (at = dropin.find("/usr/bin/kubelet")) != std::string::npos;) dropin.replace(at, 16, "/bin/true");
  auto verify = [&](const std::string& text, const std::string& name) {
    fs::path dir = ScratchDir(name);
    WriteFile(dir / "kubelet.service", "[Unit]\nDescription=kubelet\n[Service]\nExecStart=/bin/true\nRestart=always\n");
    // The shape of kubeadm's 10-kubeadm.conf (kubernetes/release cmd/krel/templates/latest/kubeadm).
    WriteFile(dir / "kubelet.service.d" / "10-kubeadm.conf",
              "[Service]\nEnvironment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n"
              "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\nEnvironmentFile=-/etc/default/kubelet\nExecStart=\n"
              "ExecStart=/bin/true $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n");
    WriteFile(dir / "kubelet.service.d" / "20-gpuforge.conf", text);
    auto result = RunShell(fmt::format("SYSTEMD_UNIT_PATH='{}': timeout 30 systemd-analyze verify '{}'", dir.string(),
                                       (dir / "kubelet.service").string()),
                           dir);
    fs::remove_all(dir);
    return result;
  };
  auto [rc, output] = verify(dropin, "unit-ok");
  EXPECT_EQ(rc, 0) << output;
  std::string no_reset = dropin;
  no_reset.erase(no_reset.find("ExecStart=\n"), 11);
  auto [bad_rc, bad_output] = verify(no_reset, "unit-bad");
  EXPECT_NE(bad_rc, 0) << bad_output;
  EXPECT_NE(bad_output.find("more than one ExecStart="), std::string::npos) << bad_output;
}

// Both kubelet files take one handler, once, that restarts the kubelet; it clears the CPU and
// memory manager state files, which a kubelet refuses after a policy change.
TEST(RenderK8s, KubeletFilesShareOneRestartHandler) {
  const plan::ImpactRule& config = plan::ImpactFor(kKubelet);
  const plan::ImpactRule& unit = plan::ImpactFor(kKubeletUnit);
  EXPECT_EQ(config.impact, plan::Impact::kRestart);
  EXPECT_EQ(unit.impact, plan::Impact::kRestart);
  EXPECT_EQ(config.handler, unit.handler);
  EXPECT_TRUE(plan::IsHandler(config.handler));
  EXPECT_EQ(config.handler,
            "systemctl daemon-reload && systemctl stop kubelet && rm -f /var/lib/kubelet/cpu_manager_state "
            "/var/lib/kubelet/memory_manager_state && systemctl start kubelet");
  plan::NodePlan p;
  {
    plan::FileChange f;
    f.path = kKubelet;
    f.action = plan::Action::kChange;
    f.content = true;
    f.mode_from = 0644;
    f.mode_to = 0644;
    f.impact = config.impact;
    f.handler = std::string(config.handler);
    p.files.push_back(std::move(f));
  }
  {
    plan::FileChange f;
    f.path = kKubeletUnit;
    f.action = plan::Action::kCreate;
    f.mode_from = 0;
    f.mode_to = 0644;
    f.impact = unit.impact;
    f.handler = std::string(unit.handler);
    p.files.push_back(std::move(f));
  }
  EXPECT_EQ(p.Handlers(), std::vector<std::string>{std::string(config.handler)});
}

TEST_F(RenderK8sExample, LaunchScriptPassesBashSyntaxCheck) {
  const render::RenderedFile* f = Find(out(), "", kLaunch);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->content.starts_with("#!/bin/bash\n")) << "the shebang must be the first line";
  EXPECT_EQ(f->mode, "0755");
  fs::path dir = ScratchDir("bash-n");
  WriteFile(dir / "launch.sh", f->content);
  auto [rc, output] = RunShell(fmt::format("bash -n '{}'", (dir / "launch.sh").string()), dir);
  EXPECT_EQ(rc, 0) << output;
  fs::remove_all(dir);
}

TEST_F(RenderK8sExample, LaunchScriptRunsTorchrunWithTheInventorysValues) {
  const render::RenderedFile* f = Find(out(), "", kLaunch);
  ASSERT_NE(f, nullptr);
  std::vector<const model::Node*> nodes = GpuComputeNodes(c());
  std::string want = fmt::format(
      "arg=--nnodes=4\narg=--nproc_per_node=4\narg=--rdzv_backend=c10d\narg=--rdzv_endpoint={}:29400\n"
      "arg=--rdzv_id=sivaro-a100-roce-fsdp\narg=train.py\narg=--model_size\narg=13b\narg=--batch_size\narg=4\n"
      "arg=--gradient_accumulation_steps\narg=8\narg=--sharding_strategy\narg=FULL_SHARD\narg=--mixed_precision\n"
      "arg=bf16\narg=--activation_checkpointing\narg=--sequence_parallel\narg=--extra\n"
      // No NCCL_TOPO_FILE: the topology file comes only from a measured PCI tree (#13).
      "NCCL_IB_GID_INDEX=3\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_RETRY_CNT=7\nNCCL_IB_TIMEOUT=22\n",
      nodes.front()->address);
  EXPECT_EQ(RunLaunchScript(*f, "example"), want);
}

TEST_F(RenderK8sExample, MatchesGoldenFiles) {
  fs::path golden = fs::path(GPUFORGE_TEST_DATA_DIR) / "render" / kExample;
  bool update = std::getenv("GPUFORGE_UPDATE_GOLDEN") != nullptr && std::string(std::getenv("GPUFORGE_UPDATE_GOLDEN")) == "1";
  std::set<std::string> produced;
  for (const render::RenderedFile& f : out().files) {
    if (!IsMine(f)) continue;
    fs::path rel = fs::path(f.node.empty() ? "_cluster" : f.node) / fs::path(f.path).relative_path();
    produced.insert(rel.string());
    if (update) {
      WriteFile(golden / rel, f.content);
      continue;
    }
    ASSERT_TRUE(fs::exists(golden / rel)) << rel << " has no golden copy; run with GPUFORGE_UPDATE_GOLDEN=1";
    EXPECT_EQ(f.content, ReadFile(golden / rel)) << rel << " differs from its golden copy; if the change is "
                                                    "intended, run with GPUFORGE_UPDATE_GOLDEN=1 and review the diff";
  }
  // A golden copy of a file this family no longer writes is stale.
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(golden)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), golden).string();
    bool ours = false;
    for (const char* p : {kJob, kQueue, kKubelet, kKubeletUnit, kLaunch}) ours = ours || rel.ends_with(p);
    if (ours) {
      EXPECT_TRUE(produced.count(rel)) << rel << " is a stale golden copy";
    }
  }
}

TEST_F(RenderK8sExample, Deterministic) {
  render::Options o;
  o.inventory_label = fmt::format("inventories/examples/{}.yaml", kExample);
  render::Output again = RenderCluster(c(), o);
  ASSERT_EQ(again.files.size(), out().files.size());
  for (std::size_t i = 0; i < again.files.size(); ++i) {
    EXPECT_EQ(again.files[i].path, out().files[i].path);
    EXPECT_EQ(again.files[i].content, out().files[i].content) << again.files[i].path;
  }
}

TEST_F(RenderK8sExample, NodeSelectionKeepsClusterFilesAndNarrowsNodeFiles) {
  render::Options o;
  o.inventory_label = fmt::format("inventories/examples/{}.yaml", kExample);
  o.nodes = {"gpu03"};
  render::Output one = RenderCluster(c(), o);
  for (const char* path : {kJob, kQueue, kLaunch}) {
    const render::RenderedFile* a = Find(one, "", path);
    const render::RenderedFile* b = Find(out(), "", path);
    ASSERT_NE(a, nullptr) << path;
    ASSERT_NE(b, nullptr) << path;
    EXPECT_EQ(a->content, b->content) << path;
  }
  EXPECT_NE(Find(one, "gpu03", kKubelet), nullptr);
  EXPECT_EQ(Find(one, "gpu01", kKubelet), nullptr);
  EXPECT_NE(Find(one, "gpu03", kKubeletUnit), nullptr);
  EXPECT_EQ(Find(one, "gpu01", kKubeletUnit), nullptr);
}

TEST(RenderK8s, NoKubernetesFilesForASlurmCluster) {
  model::Cluster c = LoadExample("h200-ib-32gpu");
  ASSERT_EQ(c.software.scheduler.kind, model::SchedulerKind::kSlurm);
  render::Output out = RenderCluster(c);
  for (const render::RenderedFile& f : out.files) EXPECT_FALSE(IsMine(f)) << f.node << ":" << f.path;
  for (const render::Skip& s : out.skipped) {
    EXPECT_TRUE(s.path != kJob && s.path != kQueue && s.path != kLaunch && s.path != kKubelet && s.path != kKubeletUnit)
        << s.path;
  }
}

// A small Kubernetes inventory; `extra` is appended to `software.scheduler`, `vars` to
// `defaults.vars`.
std::string SmallInventory(const std::string& scheduler_extra, const std::string& vars = "", int gpus2 = 8,
                           const std::string& software_extra = "") {
  return fmt::format(R"(version: 1
cluster: {{name: Small_Lab.2}}
defaults:
  vars: {{placeholder: x{}}}
profiles:
  big:
    gpus: {{model: H100, count: 8}}
    cpu: {{sockets: 2, cores_per_socket: 56, threads_per_core: 2}}
    memory: 2TiB
    nics: [{{name: ib0, kind: infiniband, rate: 400Gb/s}}]
  other:
    gpus: {{model: H100, count: {}}}
    cpu: {{sockets: 2, cores_per_socket: 56, threads_per_core: 2}}
    memory: 2TiB
nodes:
  - {{name: "n[1-2]", address: "10.0.0.[1-2]", profile: big}}
  - {{name: n3, address: 10.0.0.3, profile: other}}
software:
{}  scheduler:
    kind: kubernetes
    volcano: true
{}
)",
                     vars, gpus2, software_extra, scheduler_extra);
}

// #28 item 2: single-numa-node with pods of 8 GPUs on nodes that have 4 per NUMA node: the kubelet
// rejects every pod (TopologyAffinityError), so render writes no Volcano Job and says why, as
// lint's k8s.single_numa_gpus does; it used to write it and exit 0. Where the GPUs fit one NUMA
// node, the Job is written.
TEST(RenderK8s, NoVolcanoJobThatTheKubeletsSingleNumaPolicyWouldReject) {
  auto inventory = [](const std::string& numa) {
    std::string text = SmallInventory("    topology_manager_policy: single-numa-node\n    reserved: {cpus: 2}",
                                      ", k8s_rdma_resource: rdma/ib", 8);
    const std::string gpus = "gpus: {model: H100, count: 8}";
    for (std::size_t at = 0; (at = text.find(gpus, at)) != std::string::npos; at += gpus.size()) {
      text.replace(at, gpus.size(), "gpus: {model: H100, count: 8, numa: " + numa + "}");
    }
    return text;
  };
  render::Output split = RenderCluster(LoadYaml(inventory("[0, 0, 0, 0, 1, 1, 1, 1]")));
  EXPECT_EQ(Find(split, "", kJob), nullptr);
  bool said = false;
  for (const render::Skip& sk : split.skipped) {
    if (sk.path != kJob) continue;
    said = true;
    EXPECT_NE(sk.reason.find("a training pod takes all 8 GPUs of its node while profile 'big' has at most 4 on one NUMA "
                          "node (4 on NUMA 0, 4 on NUMA 1): the kubelet would reject every pod with "
                          "TopologyAffinityError (lint k8s.single_numa_gpus)"),
              std::string::npos)
        << sk.reason;
  }
  EXPECT_TRUE(said);
  EXPECT_NE(Find(split, "n1", kKubelet), nullptr) << "the kubelet settings are the node's, whatever the Job";
  render::Output one = RenderCluster(LoadYaml(inventory("[1, 1, 1, 1, 1, 1, 1, 1]")));
  EXPECT_NE(Find(one, "", kJob), nullptr);
}

// Kubernetes quantity text ("16484Mi", "16G", "1Ki", "42") in bytes.
double QuantityBytes(const std::string& q) {
  static const std::map<std::string, double> kSuffix = {
      {"", 1},       {"k", 1e3},          {"M", 1e6},          {"G", 1e9},           {"T", 1e12},
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
  std::size_t digits = q.find_first_not_of("0123456789");
  auto it = kSuffix.find(digits == std::string::npos ? "" : q.substr(digits));
  EXPECT_NE(it, kSuffix.end()) << q;
  return it == kSuffix.end() ? -1 : std::stod(q.substr(0, digits)) * it->second;
}

// Alignment asked for (static CPUs): the CPU manager gets its reserved CPU count and the memory
// manager Static, whose reservedMemory must add up to systemReserved + kubeReserved + the hard
// eviction threshold exactly (pkg/kubelet/cm/memorymanager/memory_manager.go
// validateReservedMemory), or the kubelet does not start.
TEST(RenderK8s, StaticCpuManagerGetsReservedCpusAndTheStaticMemoryManager) {
  render::Output out =
      RenderCluster(LoadYaml(SmallInventory("    cpu_manager_policy: static\n    reserved: {cpus: 4, memory: 16GB}")));
  YAML::Node k = Parse(out, "n1", kKubelet);
  ASSERT_TRUE(k.IsMap());
  EXPECT_EQ(Str(k["topologyManagerPolicy"]), "best-effort") << "guide 004's, when the inventory sets none";
  EXPECT_EQ(Str(k["cpuManagerPolicy"]), "static");
  EXPECT_EQ(Str(k["systemReserved"]["memory"]), "16G") << "16 GB is decimal";
  EXPECT_EQ(Str(k["systemReserved"]["cpu"]), "4");
  // #28 item 12: no CPU list assumed from the inventory (siblings 112 apart on 2 x 56 cores is a
  // guess); the kubelet takes systemReserved.cpu CPUs by the topology it reads on the node.
  EXPECT_FALSE(k["reservedSystemCPUs"]);
  EXPECT_NE(Find(out, "n1", kKubelet)->content.find("takeByTopology"), std::string::npos);
  EXPECT_EQ(Str(k["memoryManagerPolicy"]), "Static");
  ASSERT_EQ(k["reservedMemory"].size(), 1u);
  EXPECT_EQ(Int(k["reservedMemory"][0]["numaNode"]), 0);
  double kube_reserved = k["kubeReserved"] ? QuantityBytes(Str(k["kubeReserved"]["memory"])) : 0;
  EXPECT_EQ(QuantityBytes(Str(k["reservedMemory"][0]["limits"]["memory"])),
            QuantityBytes(Str(k["systemReserved"]["memory"])) + kube_reserved + 100.0 * 1024 * 1024)
      << "systemReserved + kubeReserved + evictionHard memory.available (100Mi, the kubelet's default)";
  EXPECT_NE(Find(out, "n1", kKubelet)->content.find("cpu_manager_state"), std::string::npos);
  EXPECT_NE(Find(out, "n1", kKubeletUnit), nullptr);

  // single-numa-node asks for alignment too.
  render::Output snn = RenderCluster(
      LoadYaml(SmallInventory("    topology_manager_policy: single-numa-node\n    reserved: {cpus: 3}")));
  YAML::Node k3 = Parse(snn, "n2", kKubelet);
  EXPECT_EQ(Str(k3["cpuManagerPolicy"]), "static");
  EXPECT_EQ(Str(k3["systemReserved"]["cpu"]), "3");
  EXPECT_FALSE(k3["reservedSystemCPUs"]);
  EXPECT_EQ(Str(k3["reservedMemory"][0]["limits"]["memory"]), "100Mi") << "the eviction threshold alone";

  // An explicit cpu_manager_policy: none stands, with no memory manager.
  render::Output none_cpu = RenderCluster(
      LoadYaml(SmallInventory("    topology_manager_policy: restricted\n    cpu_manager_policy: none")));
  YAML::Node k4 = Parse(none_cpu, "n1", kKubelet);
  EXPECT_EQ(Str(k4["cpuManagerPolicy"]), "none");
  EXPECT_FALSE(k4["memoryManagerPolicy"]);
}

// The static CPU manager refuses to start with no CPUs reserved ("the static policy requires
// systemreserved.cpu + kubereserved.cpu to be greater than zero"): no kubelet files, and a
// reason naming the key.
TEST(RenderK8s, StaticCpuManagerWithoutReservedCpusIsNotWritten) {
  render::Output out = RenderCluster(LoadYaml(SmallInventory("    cpu_manager_policy: static\n    reserved: {memory: 16GB}")));
  EXPECT_EQ(Find(out, "n1", kKubelet), nullptr);
  EXPECT_EQ(Find(out, "n1", kKubeletUnit), nullptr);
  int skips = 0;
  for (const render::Skip& s : out.skipped) {
    if (s.node != "n1") continue;
    ++skips;
    EXPECT_NE(s.reason.find("software.scheduler.reserved.cpus is unset"), std::string::npos) << s.reason;
  }
  EXPECT_EQ(skips, 2);
}

TEST(RenderK8s, KubeletPolicyDefaultsToTheGuidesAndAnExplicitOneStands) {
  render::Output plain = RenderCluster(LoadYaml(SmallInventory("")));
  YAML::Node k = Parse(plain, "n1", kKubelet);
  EXPECT_EQ(Str(k["topologyManagerPolicy"]), "best-effort") << "guide 004's, when the inventory sets none";
  EXPECT_FALSE(k["cpuManagerPolicy"]);
  EXPECT_FALSE(k["memoryManagerPolicy"]);

  render::Output none = RenderCluster(LoadYaml(SmallInventory("    topology_manager_policy: none")));
  YAML::Node k2 = Parse(none, "n2", kKubelet);
  EXPECT_EQ(Str(k2["topologyManagerPolicy"]), "none") << "an explicit choice stands";
  EXPECT_FALSE(k2["systemReserved"]);
}

TEST(RenderK8s, ImageAndRdmaResourceComeFromVars) {
  render::Output out = RenderCluster(LoadYaml(SmallInventory(
      "", ", train_image: nvcr.io/nvidia/pytorch:24.08-py3, k8s_rdma_resource: rdma/rdma_shared_device_a", 8)));
  YAML::Node job = Parse(out, "", kJob);
  YAML::Node ctr = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(Str(ctr["image"]), "nvcr.io/nvidia/pytorch:24.08-py3");
  EXPECT_EQ(Int(ctr["resources"]["limits"]["rdma/rdma_shared_device_a"]), 1);
  EXPECT_EQ(Int(ctr["resources"]["limits"]["nvidia.com/gpu"]), 8);
  EXPECT_EQ(Str(job["metadata"]["name"]), "small-lab-2-fsdp") << "a DNS-1123 label made of the cluster name";
  ASSERT_EQ(ctr["env"].size(), 1u) << "no NCCL environment in the inventory but NCCL_NET on InfiniBand";
  EXPECT_EQ(Str(ctr["env"][0]["name"]), "NCCL_NET");
  EXPECT_EQ(Str(ctr["env"][0]["value"]), "IB");
  // No topology file in the inventory: nccl.conf is mounted, nothing else.
  std::vector<std::string> paths;
  for (const YAML::Node& v : job["spec"]["tasks"][0]["template"]["spec"]["volumes"]) {
    if (v["hostPath"]) paths.push_back(Str(v["hostPath"]["path"]));
  }
  EXPECT_EQ(paths, std::vector<std::string>{"/etc/nccl.conf"});
}

TEST(RenderK8s, AnInventoryNcclNetStands) {
  render::Output out = RenderCluster(LoadYaml(
      SmallInventory("", ", k8s_rdma_resource: nvidia.com/hostdev", 8, "  nccl: {env: {NCCL_NET: Socket}}\n")));
  YAML::Node ctr = Parse(out, "", kJob)["spec"]["tasks"][0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(Int(ctr["resources"]["requests"]["nvidia.com/hostdev"]), 1);
  ASSERT_EQ(ctr["env"].size(), 1u);
  EXPECT_EQ(Str(ctr["env"][0]["value"]), "Socket") << "the inventory's NCCL_NET is not overridden";
}

// On InfiniBand/RoCE a Job without the RDMA device plugin's resource would run NCCL over TCP:
// it is not written, and the reason names the inventory key.
TEST(RenderK8s, RdmaFabricWithoutRdmaResourceRefusesTheJob) {
  render::Output out = RenderCluster(LoadYaml(SmallInventory("", "", 8)));
  EXPECT_EQ(Find(out, "", kJob), nullptr);
  EXPECT_NE(Find(out, "", kQueue), nullptr);
  std::vector<std::string> reasons;
  for (const render::Skip& s : out.skipped) {
    if (s.path == kJob) reasons.push_back(s.reason);
  }
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0],
            "the training nodes have InfiniBand/RoCE NICs but defaults.vars.k8s_rdma_resource is unset; name the "
            "resource the RDMA device plugin registers (rdma/ib, rdma/rdma_shared_device_a, nvidia.com/hostdev), or the "
            "pods get no RDMA device and NCCL falls back to TCP sockets");
}

// Guaranteed requests are sized from the node: a profile with no CPU or memory figures gets no Job.
TEST(RenderK8s, ProfileWithoutCpuOrMemoryRefusesTheJob) {
  render::Output out = RenderCluster(LoadYaml(R"(version: 1
cluster: {name: bare}
profiles:
  p: {gpus: {model: H100, count: 8}, memory: 1TB}
nodes:
  - {name: "b[1-2]", address: "10.0.0.[1-2]", profile: p}
software:
  scheduler: {kind: kubernetes, volcano: true}
)"));
  EXPECT_EQ(Find(out, "", kJob), nullptr);
  bool said = false;
  for (const render::Skip& s : out.skipped) {
    if (s.path != kJob) continue;
    said = true;
    EXPECT_NE(s.reason.find("profile 'p' of b1 states no CPU count"), std::string::npos) << s.reason;
  }
  EXPECT_TRUE(said);
}

// A resource name the API server would refuse is not written either; the reason says why.
TEST(RenderK8s, BadRdmaResourceRefusesTheJob) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ib", "it needs a domain prefix, DOMAIN/NAME (rdma/ib, nvidia.com/hostdev)"},
      {"RDMA/ib", "the prefix 'RDMA' is not a lower-case DNS subdomain"},
      {"kubernetes.io/rdma", "the kubernetes.io domain is reserved for native resources"},
      {"rdma/-ib", "the name '-ib' must be 1-63 characters of [A-Za-z0-9._-], alphanumeric at both ends"},
  };
  for (const auto& [value, why] : cases) {
    render::Output out = RenderCluster(LoadYaml(SmallInventory("", ", k8s_rdma_resource: \"" + value + "\"")));
    EXPECT_EQ(Find(out, "", kJob), nullptr) << value;
    std::vector<std::string> reasons;
    for (const render::Skip& s : out.skipped) {
      if (s.path == kJob) reasons.push_back(s.reason);
    }
    EXPECT_EQ(reasons, std::vector<std::string>{fmt::format("defaults.vars.k8s_rdma_resource '{}' is not a Kubernetes "
                                                            "extended resource name: {}; the API server would refuse the Job",
                                                            value, why)});
  }
}

TEST(RenderK8s, MixedGpuCountsSkipTheJobWithAReason) {
  render::Output out = RenderCluster(LoadYaml(SmallInventory("", "", 4)));
  EXPECT_EQ(Find(out, "", kJob), nullptr);
  EXPECT_EQ(Find(out, "", kQueue), nullptr);
  EXPECT_EQ(Find(out, "", kLaunch), nullptr);
  std::set<std::string> skipped;
  for (const render::Skip& s : out.skipped) {
    if (s.node.empty()) {
      skipped.insert(s.path);
      EXPECT_NE(s.reason.find("n3 (4 GPUs)"), std::string::npos) << s.reason;
    }
  }
  EXPECT_EQ(skipped, (std::set<std::string>{kJob, kQueue, kLaunch}));
  EXPECT_NE(Find(out, "n3", kKubelet), nullptr) << "kubelet settings do not depend on the job";
}

TEST(RenderK8s, WithoutVolcanoNoJobOrQueueButTheLaunchScript) {
  std::string text = SmallInventory("");
  text.replace(text.find("volcano: true"), 13, "volcano: false");
  render::Output out = RenderCluster(LoadYaml(text));
  EXPECT_EQ(Find(out, "", kJob), nullptr);
  EXPECT_EQ(Find(out, "", kQueue), nullptr);
  EXPECT_NE(Find(out, "", kLaunch), nullptr);
  int skips = 0;
  for (const render::Skip& s : out.skipped) {
    if (s.path == kJob || s.path == kQueue) {
      ++skips;
      EXPECT_NE(s.reason.find("volcano is false"), std::string::npos) << s.reason;
    }
  }
  EXPECT_EQ(skips, 2);
}

TEST(RenderK8s, AmdGpusAreRequestedByTheirDevicePluginsName) {
  render::Output out = RenderCluster(LoadYaml(R"(version: 1
cluster: {name: amd}
profiles:
  mi: {gpus: {model: MI300X, count: 8}, cpu: {sockets: 2, cores_per_socket: 64}, memory: 2TB}
nodes:
  - {name: "m[1-2]", address: "10.0.0.[1-2]", profile: mi}
software:
  scheduler: {kind: kubernetes, volcano: true}
)"));
  YAML::Node job = Parse(out, "", kJob);
  YAML::Node limits = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(Int(limits["amd.com/gpu"]), 8);
  EXPECT_FALSE(limits["nvidia.com/gpu"]);
  EXPECT_EQ(Int(Parse(out, "", kQueue)["spec"]["capability"]["amd.com/gpu"]), 16);
}

// The worst values the loader lets through: YAML's null, bool and number spellings, leading
// '-', '@', '%' and '~', every punctuation mark of the safe alphabet, IPv6 addresses.
constexpr const char* kWorst = R"(version: 1
cluster: {name: "0_N.u-ll"}
defaults:
  vars:
    train_image: "~"
    train_script: "-@%:=^/+~.,_x"
    k8s_rdma_resource: "0.x-y/True"
profiles:
  p:
    gpus: {model: "True", count: 2, memory: 1GB, tdp: 300W, pci: ["0000:02:00.0", "0000:03:00.0"], numa: [0, 0]}
    cpu: {sockets: 1, cores_per_socket: 8}
    memory: 64Gi
    nics: [{name: "null", kind: roce, rate: 100Gb/s, pci: "0000:01:00.0", numa: 0}]
nodes:
  - {name: "null", address: "fe80::1", profile: p}
  - {name: "true", address: "0x1f", profile: p}
  - {name: "1e3", address: "::ffff:198.18.0.1", profile: p}
software:
  nccl:
    topo_file: "/etc/@x%y+z.xml"
    env:
      NCCL_A: "~"
      NCCL_B: "yes"
      NCCL_C: "0x1f"
      NCCL_D: "-"
      NCCL_E: "@a:%b=^c/~+-.,_"
      NCCL_F: "1e3"
      NCCL_G: "null"
      NCCL_H: "%"
  scheduler:
    kind: kubernetes
    controller: "true"
    volcano: true
    topology_manager_policy: single-numa-node
    cpu_manager_policy: static
    reserved: {cpus: 1, memory: 1Ki}
)";

TEST(RenderK8s, WorstAllowedValuesComeBackAsTheSameStrings) {
  model::Cluster c = LoadYaml(kWorst);
  ASSERT_EQ(c.nodes.size(), 3u);
  render::Output out = RenderCluster(c);
  for (const render::RenderedFile& f : out.files) {
    if (IsMine(f) && f.path != kLaunch && f.path != kKubeletUnit) {
      ExpectOnlyQuotedStrings(Parse(out, f.node, f.path), f.node + ":" + f.path);
    }
  }

  YAML::Node job = Parse(out, "", kJob);
  ASSERT_TRUE(job.IsMap());
  EXPECT_EQ(Str(job["metadata"]["name"]), "gpuforge-0-n-u-ll-fsdp");
  YAML::Node pod = job["spec"]["tasks"][0]["template"]["spec"];
  YAML::Node ctr = pod["containers"][0];
  EXPECT_EQ(Str(ctr["image"]), "~");
  EXPECT_EQ(Int(ctr["resources"]["limits"]["0.x-y/True"]), 1);
  std::vector<std::pair<std::string, std::string>> env;
  for (const YAML::Node& e : ctr["env"]) env.emplace_back(Str(e["name"]), Str(e["value"]));
  std::vector<std::pair<std::string, std::string>> want = c.software.nccl_env;
  std::vector<std::pair<std::string, std::string>> want_job = want;
  want_job.emplace_back("NCCL_NET", "IB");
  EXPECT_EQ(env, want_job) << "no NCCL_TOPO_FILE: no node measured its PCI tree (#13); NCCL_NET for RoCE";
  bool mounted = false;
  for (const YAML::Node& m : ctr["volumeMounts"]) mounted = mounted || Str(m["mountPath"]) == "/etc/@x%y+z.xml";
  EXPECT_FALSE(mounted) << "a topology file that was not rendered is not mounted";
  YAML::Node hosts = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                        ["matchExpressions"][0]["values"];
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(Str(hosts[0]), "null");
  EXPECT_EQ(Str(hosts[1]), "true");
  EXPECT_EQ(Str(hosts[2]), "1e3");
  std::vector<std::string> cmd;
  for (const YAML::Node& a : ctr["command"]) cmd.push_back(Str(a));
  ASSERT_GE(cmd.size(), 7u);
  EXPECT_EQ(cmd[4], "--rdzv_endpoint=[fe80::1]:29400");
  EXPECT_EQ(cmd[6], "-@%:=^/+~.,_x");

  YAML::Node k = Parse(out, "true", kKubelet);
  EXPECT_EQ(Str(k["topologyManagerPolicy"]), "single-numa-node");
  EXPECT_EQ(Str(k["cpuManagerPolicy"]), "static");
  EXPECT_EQ(Str(k["systemReserved"]["cpu"]), "1");
  EXPECT_EQ(Str(k["systemReserved"]["memory"]), "1Ki");
  EXPECT_FALSE(k["reservedSystemCPUs"]);

  const render::RenderedFile* script = Find(out, "", kLaunch);
  ASSERT_NE(script, nullptr);
  std::string ran = RunLaunchScript(*script, "worst");
  EXPECT_NE(ran.find("arg=--rdzv_endpoint=[fe80::1]:29400\n"), std::string::npos) << ran;
  EXPECT_NE(ran.find("arg=-@%:=^/+~.,_x\n"), std::string::npos) << ran;
  for (const auto& [name, value] : want) {
    EXPECT_NE(ran.find(fmt::format("\n{}={}\n", name, value)), std::string::npos) << name << "=" << value << " in\n" << ran;
  }
}

}  // namespace
}  // namespace gpuforge
