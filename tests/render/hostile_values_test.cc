// Values that would break a rendered file's syntax or reach a shell: a newline, quotes, "$()",
// ';' and backticks. For each file type, every inventory field that reaches it is first shown
// to reach it (a plain value appears in the file), then each hostile value in that field is
// refused at inventory load with file:line:col pointing into the value. What the loader lets
// through is escaped for the target syntax: the label (the inventory path, which may hold
// anything) and the characters the safe alphabets allow ("--" in an XML comment, "~" in a
// shell word) are checked per file here; the YAML and script families have their own
// worst-allowed-value tests (RenderK8s.*, RenderMonitoring.*, RenderSlurm.JobScript*).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/base/diag.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

// Every value a case edits is written once, double-quoted, so `"value"` finds its place.
// @SCHEDULER@ is replaced by kSlurm or kKubernetes.
constexpr std::string_view kBase = R"y(version: 1
cluster: {name: "clu1"}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
  mgmt: {role: control, kind: ethernet, rate: 25Gb/s}
defaults:
  vars: {train_image: "img1", train_script: "train1.py", k8s_rdma_resource: "rdma/res1"}
profiles:
  p:
    gpus: {model: "H200", count: 2, memory: 141GB, tdp: 700W, pci: ["0000:18:00.0", "0000:2a:00.0"], numa: [0, 0]}
    cpu: {model: "Xeon 8480", sockets: 1, cores_per_socket: 8}
    memory: 64GB
    nics:
      - {name: "mlx5_0", kind: infiniband, rate: 400Gb/s, network: ib, pci: "0000:19:00.0", numa: 0}
      - {name: eno1, kind: ethernet, rate: 25Gb/s, network: mgmt, netdev: "ens9f0"}
nodes:
  - {name: "gpu1", address: "10.0.0.1", role: compute, profile: p}
switches:
  - {name: "leaf1", tier: leaf, network: ib, ports: 8, port_rate: 400Gb/s}
links:
  - {from: gpu1:mlx5_0, to: leaf1:1}
software:
  nccl: {topo_file: "/etc/nccl-topology.xml", env: {NCCL_X: "val1"}}
@SCHEDULER@)y";

constexpr std::string_view kSlurm = R"y(  scheduler:
    kind: slurm
    controller: gpu1
    partitions: [{name: "part1", nodes: gpu1, default: true}]
)y";

constexpr std::string_view kKubernetes = R"y(  scheduler:
    kind: kubernetes
    volcano: true
    topology_manager_policy: "best-effort"
)y";

std::string Inventory(std::string_view scheduler) {
  std::string s(kBase);
  s.replace(s.find("@SCHEDULER@"), 11, scheduler);
  return s;
}

// One inventory field that reaches a file: the quoted value in the inventory and how it shows
// in the file ("" where it only decides what is written).
struct Field {
  std::string value;
  std::string shows_as;
};

struct FileType {
  std::string name;
  bool kubernetes;
  std::string node;  // "" = _cluster
  std::vector<std::string> paths;
  std::vector<Field> fields;
};

// Each hostile payload as it is written inside a YAML double-quoted scalar, after a plain value.
const char* const kPayloads[] = {"\\nINJECTED=1", "\\\"", "'", "$(reboot)", ";reboot", "`reboot`"};

const std::vector<FileType>& FileTypes() {
  static const std::vector<FileType> kTypes = {
      {"nccl.conf", false, "gpu1", {"/etc/nccl.conf"},
       {{"val1", "NCCL_X=val1"}, {"mlx5_0", "NCCL_IB_HCA==mlx5_0:1"}, {"ens9f0", "NCCL_SOCKET_IFNAME==ens9f0"}}},
      // No NCCL topology XML here: it is rendered only from a measured PCI tree, whose values the
      // facts parser has checked (tests/render/nccl_topology_test.cc, tests/facts/pci_tree_test.cc).
      {"Slurm configuration", false, "", {"/etc/slurm/slurm.conf", "/etc/slurm/gres.conf", "/etc/slurm/topology.conf"},
       {{"clu1", "ClusterName=clu1"}, {"gpu1", "NodeName=gpu1"}, {"10.0.0.1", "NodeAddr=10.0.0.1"},
        {"part1", "PartitionName=part1"}, {"H200", "Type=h200"}, {"leaf1", "SwitchName=leaf1"}}},
      {"sbatch job script", false, "", {"/etc/gpuforge/jobs/train.sbatch"},
       {{"part1", "#SBATCH --partition=part1"}, {"val1", "export NCCL_X='val1'"}}},
      {"FSDP launch script", true, "", {"/usr/local/bin/gpuforge-launch-fsdp.sh"},
       {{"val1", "export NCCL_X='val1'"}, {"train1.py", "'train1.py'"}, {"10.0.0.1", "MASTER_ADDR='10.0.0.1'"},
        {"clu1", "--rdzv_id='clu1-fsdp'"}}},
      {"Volcano and kubelet YAML", true, "", {"/etc/gpuforge/k8s/volcano-job.yaml", "/etc/gpuforge/k8s/volcano-queue.yaml"},
       {{"img1", "image: \"img1\""}, {"rdma/res1", "\"rdma/res1\": 1"}, {"gpu1", "- \"gpu1\""},
        {"clu1", "name: \"clu1\""}}},
      {"kubelet configuration", true, "gpu1", {"/etc/kubernetes/kubelet.conf.d/90-gpuforge.conf"},
       {{"best-effort", "topologyManagerPolicy: \"best-effort\""}}},
      {"Prometheus YAML", false, "", {"/etc/prometheus/gpuforge-scrape.yml", "/etc/prometheus/gpuforge-alerts.yml"},
       {{"gpu1", "node: \"gpu1\""}, {"10.0.0.1", "\"10.0.0.1:9400\""}, {"H200", "gpu_model: \"H200\""}}},
      {"sysctl, limits and modules-load files", false, "gpu1",
       {"/etc/sysctl.d/90-gpuforge.conf", "/etc/security/limits.d/90-gpuforge.conf", "/etc/modules-load.d/90-gpuforge.conf",
        "/etc/systemd/system-preset/50-gpuforge.preset", "/etc/gpuforge/kernel-cmdline.recommended"},
       {{"Xeon 8480", ""}}},
  };
  return kTypes;
}

std::string With(const FileType& t, const std::string& quoted_from, const std::string& quoted_to) {
  std::string yaml = Inventory(t.kubernetes ? kKubernetes : kSlurm);
  std::size_t at = yaml.find(quoted_from);
  EXPECT_NE(at, std::string::npos) << quoted_from;
  EXPECT_EQ(yaml.find(quoted_from, at + 1), std::string::npos) << quoted_from << " is not unique";
  if (at != std::string::npos) yaml.replace(at, quoted_from.size(), quoted_to);
  return yaml;
}

render::Output RenderYaml(const std::string& yaml, const std::string& label = "t.yaml") {
  inventory::LoadOutcome in = inventory::LoadString(yaml, "t.yaml");
  EXPECT_TRUE(in.ok()) << in.FormatDiagnostics() << yaml;
  if (!in.ok()) return {};
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = label;
  Result<render::Output> out = render::Render(*in.cluster, o);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? std::move(*out) : render::Output{};
}

const render::RenderedFile* Find(const render::Output& out, const std::string& node, const std::string& path) {
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

class RenderHostileValues : public ::testing::TestWithParam<FileType> {};

TEST_P(RenderHostileValues, EveryFieldReachingTheFileRefusesThemAtLoadWithItsPosition) {
  const FileType& t = GetParam();
  // The plain inventory renders every file of the type, and each field's value shows in one.
  render::Output plain = RenderYaml(Inventory(t.kubernetes ? kKubernetes : kSlurm));
  std::string all;
  for (const std::string& path : t.paths) {
    const render::RenderedFile* f = Find(plain, t.node, path);
    ASSERT_NE(f, nullptr) << path;
    all += f->content;
  }
  for (const Field& field : t.fields) {
    if (!field.shows_as.empty()) {
      EXPECT_NE(all.find(field.shows_as), std::string::npos) << field.shows_as << " in\n" << all;
    }
  }

  for (const Field& field : t.fields) {
    for (const char* payload : kPayloads) {
      std::string from = "\"" + field.value + "\"";
      std::string to = "\"" + field.value + payload + "\"";
      std::string yaml = With(t, from, to);
      // Where the value sits: its line, and the columns between its quotes.
      std::size_t at = yaml.find(to);
      std::size_t line_start = yaml.rfind('\n', at) + 1;
      int line = 1 + static_cast<int>(std::count(yaml.begin(), yaml.begin() + static_cast<long>(at), '\n'));
      int first_col = static_cast<int>(at - line_start) + 1, last_col = first_col + static_cast<int>(to.size()) - 1;

      inventory::LoadOutcome out = inventory::LoadString(yaml, "t.yaml");
      ASSERT_FALSE(out.ok()) << t.name << ": " << field.value << payload << " was accepted";
      bool located = false;
      for (const Diagnostic& d : out.diags.items()) {
        located = located || (d.severity == DiagSeverity::kError && d.pos.file == "t.yaml" &&
                              d.pos.line == line && d.pos.col >= first_col && d.pos.col <= last_col);
      }
      EXPECT_TRUE(located) << t.name << ": no error at t.yaml:" << line << ":" << first_col << "-" << last_col
                           << " for " << to << "\n" << out.FormatDiagnostics();
      EXPECT_NE(out.FormatDiagnostics().find(fmt::format("t.yaml:{}:", line)), std::string::npos);
    }
  }
}

// The label is the inventory path as typed; it is the one free text every file carries.
TEST_P(RenderHostileValues, TheLabelStaysInsideTheHeaderComment) {
  const FileType& t = GetParam();
  std::string yaml = Inventory(t.kubernetes ? kKubernetes : kSlurm);
  render::Output plain = RenderYaml(yaml, "t.yaml");
  render::Output hostile = RenderYaml(yaml, "t\nINJECTED=1 $(reboot) `reboot`; \"'\r-->");
  for (const std::string& path : t.paths) {
    const render::RenderedFile* a = Find(plain, t.node, path);
    const render::RenderedFile* b = Find(hostile, t.node, path);
    ASSERT_TRUE(a != nullptr && b != nullptr) << path;
    std::string want = a->content;
    std::string from = "from t.yaml (";
    std::string to = path.ends_with(".xml") ? "from t?INJECTED=1 $(reboot) `reboot`; \"'?-?> ("
                                             : "from t?INJECTED=1 $(reboot) `reboot`; \"'?--> (";
    ASSERT_NE(want.find(from), std::string::npos) << path;
    want.replace(want.find(from), from.size(), to);
    EXPECT_EQ(b->content, want) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(RenderPerFileType, RenderHostileValues, ::testing::ValuesIn(FileTypes()),
                         [](const ::testing::TestParamInfo<FileType>& i) {
                           std::string n;
                           for (char c : i.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// What the loader lets through, escaped for each syntax.
// NCCL reads nccl.conf as KEY=VALUE lines; every value the loader allows comes back whole.
TEST(RenderHostileValuesAllowed, NcclConfReadsBackEveryAllowedValue) {
  std::string yaml = Inventory(kSlurm);
  yaml.replace(yaml.find("{NCCL_X: \"val1\"}"), 16,
               "{NCCL_A: \"~\", NCCL_B: \"~root%^=+,-./:@_\", NCCL_C: \"=eth0\", NCCL_D: \"a=b=c\"}");
  render::Output out = RenderYaml(yaml);
  const render::RenderedFile* f = Find(out, "gpu1", "/etc/nccl.conf");
  ASSERT_NE(f, nullptr);
  std::map<std::string, std::string> env;
  std::istringstream in(f->content);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t eq = line.find('=');
    ASSERT_NE(eq, std::string::npos) << line;
    EXPECT_TRUE(env.emplace(line.substr(0, eq), line.substr(eq + 1)).second) << "set twice: " << line;
  }
  EXPECT_EQ(env["NCCL_A"], "~");
  EXPECT_EQ(env["NCCL_B"], "~root%^=+,-./:@_");
  EXPECT_EQ(env["NCCL_C"], "=eth0");
  EXPECT_EQ(env["NCCL_D"], "a=b=c");
}

}  // namespace
}  // namespace gpuforge
