// Every Volcano object gpuforge renders, checked by the upstream CRD schemas
// (tests/data/volcano/, validate.py: strict like `kubectl apply --validate=strict`), for every
// example inventory and for the inventories of the Kubernetes tests; and the checker itself
// shown to refuse a misspelt field, a wrong type, an unknown policy event and a duplicate field.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kJob = "/etc/gpuforge/k8s/volcano-job.yaml";

fs::path Validator() { return fs::path(GPUFORGE_TEST_DATA_DIR) / "volcano" / "validate.py"; }

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path ScratchDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("gpuforge-volcano-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The checker's exit status and its output, for manifests given as (file name, text).
std::pair<int, std::string> Validate(const std::vector<std::pair<std::string, std::string>>& manifests,
                                     const std::string& name) {
  fs::path dir = ScratchDir(name);
  std::string args;
  for (const auto& [file, text] : manifests) {
    std::ofstream(dir / file, std::ios::binary) << text;
    args += fmt::format(" '{}'", (dir / file).string());
  }
  fs::path out = dir / "output.txt";
  int rc = std::system(fmt::format("{} '{}'{} >'{}' 2>&1", kPython, Validator().string(), args, out.string()).c_str());
  std::string text = ReadFile(out);
  fs::remove_all(dir);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text};
}

// The checker needs python3 with yaml and jsonschema (scripts/deps.sh installs both); their
// absence is a failure that says so, not a skip that would let a broken manifest through.
void ExpectValidatorRuns() {
  ASSERT_TRUE(fs::exists(kPython)) << kPython << " is missing; scripts/deps.sh installs it";
  int rc = std::system(fmt::format("{} -c 'import yaml, jsonschema' >/dev/null 2>&1", kPython).c_str());
  ASSERT_EQ(rc, 0) << "python3-yaml and python3-jsonschema are needed (scripts/deps.sh)";
}

render::Output RenderText(std::string_view yaml, const std::string& label) {
  inventory::LoadOutcome loaded = inventory::LoadString(yaml, label);
  EXPECT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  if (!loaded.ok()) return {};
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = label;
  Result<render::Output> out = render::Render(*loaded.cluster, o);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? std::move(*out) : render::Output{};
}

// The Volcano manifests of a render: the cluster-wide files under /etc/gpuforge/k8s/.
std::vector<std::pair<std::string, std::string>> VolcanoFiles(const render::Output& out) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const render::RenderedFile& f : out.files) {
    if (f.node.empty() && f.path.starts_with("/etc/gpuforge/k8s/")) {
      files.emplace_back(fs::path(f.path).filename().string(), f.content);
    }
  }
  return files;
}

std::string ExampleJob() {
  fs::path example = fs::path(GPUFORGE_SOURCE_DIR) / "inventories" / "examples" / "a100-roce-k8s.yaml";
  for (const auto& [file, text] : VolcanoFiles(RenderText(ReadFile(example), "a100-roce-k8s.yaml"))) {
    if (file == fs::path(kJob).filename()) return text;
  }
  ADD_FAILURE() << "the example renders no Volcano Job";
  return "";
}

TEST(VolcanoSchema, EveryExampleInventorysManifestsPass) {
  ExpectValidatorRuns();
  int with_volcano = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(GPUFORGE_SOURCE_DIR) / "inventories" / "examples")) {
    if (e.path().extension() != ".yaml") continue;
    inventory::LoadOutcome loaded = inventory::LoadString(ReadFile(e.path()), e.path().filename().string());
    if (!loaded.ok()) continue;  // the loader's own tests cover examples that must not load
    std::vector<std::pair<std::string, std::string>> files = VolcanoFiles(RenderText(ReadFile(e.path()), e.path().filename().string()));
    if (files.empty()) continue;
    ++with_volcano;
    auto [rc, output] = Validate(files, e.path().stem().string());
    EXPECT_EQ(rc, 0) << e.path().filename() << ":\n" << output;
  }
  EXPECT_GE(with_volcano, 1) << "no example inventory renders Volcano manifests";
}

TEST(VolcanoSchema, ExampleJobAndQueueAreTwoValidObjects) {
  ExpectValidatorRuns();
  fs::path example = fs::path(GPUFORGE_SOURCE_DIR) / "inventories" / "examples" / "a100-roce-k8s.yaml";
  std::vector<std::pair<std::string, std::string>> files = VolcanoFiles(RenderText(ReadFile(example), "a100-roce-k8s.yaml"));
  ASSERT_EQ(files.size(), 2u);
  auto [rc, output] = Validate(files, "example");
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "2 objects valid\n");
}

// Inventories the Kubernetes tests use besides the example: AMD GPUs, an Ethernet-only
// fabric, the worst values the loader allows in names and NCCL settings.
TEST(VolcanoSchema, OtherShapesPass) {
  ExpectValidatorRuns();
  const std::vector<std::pair<std::string, std::string>> inventories = {
      {"amd", R"(version: 1
cluster: {name: amd}
profiles:
  mi:
    gpus: {model: MI300X, count: 8}
    cpu: {sockets: 2, cores_per_socket: 64, threads_per_core: 2}
    memory: 2TB
nodes:
  - {name: "m[1-2]", address: "10.0.0.[1-2]", profile: mi}
software:
  scheduler: {kind: kubernetes, volcano: true}
)"},
      {"worst", R"(version: 1
cluster: {name: "0_N.u-ll"}
defaults:
  vars: {train_image: "~", train_script: "-@%:=^/+~.,_x", k8s_rdma_resource: "rdma/rdma_shared_device_a"}
profiles:
  p:
    gpus: {model: "True", count: 2, memory: 1GB, tdp: 300W, pci: ["0000:02:00.0", "0000:03:00.0"], numa: [0, 0]}
    cpu: {sockets: 1, cores_per_socket: 8}
    memory: 64Gi
    nics: [{name: "null", kind: roce, rate: 100Gb/s, pci: "0000:01:00.0", numa: 0}]
nodes:
  - {name: "null", address: "fe80::1", profile: p}
  - {name: "1e3", address: "::ffff:198.18.0.1", profile: p}
software:
  nccl:
    env: {NCCL_A: "~", NCCL_B: "yes", NCCL_C: "0x1f", NCCL_E: "@a:%b=^c/~+-.,_"}
  scheduler:
    kind: kubernetes
    volcano: true
    reserved: {cpus: 1, memory: 1Gi}
)"},
  };
  for (const auto& [name, yaml] : inventories) {
    std::vector<std::pair<std::string, std::string>> files = VolcanoFiles(RenderText(yaml, name + ".yaml"));
    ASSERT_EQ(files.size(), 2u) << name;
    auto [rc, output] = Validate(files, name);
    EXPECT_EQ(rc, 0) << name << ":\n" << output;
  }
}

// The checker must refuse what the API server would: each edit of the example's Job breaks
// one thing, and the message names the place.
TEST(VolcanoSchema, RefusesWhatKubectlStrictRefuses) {
  ExpectValidatorRuns();
  std::string job = ExampleJob();
  ASSERT_FALSE(job.empty());
  struct Case {
    std::string from, to, want;
  };
  const std::vector<Case> cases = {
      {"restartPolicy:", "restartPolicyy:", ".spec.tasks[0].template.spec: Additional properties are not allowed ('restartPolicyy' was unexpected)"},
      {"minAvailable: 4", "minAvailable: \"four\"", ".spec.minAvailable: 'four' is not of type 'integer'"},
      {"event: \"TaskFailed\"", "event: \"TaskFail\"", ".spec.policies[2].event: 'TaskFail' is not one of"},
      {"  maxRetry: 3\n", "  maxRetry: 3\n  maxRetry: 4\n", "duplicate field 'maxRetry'"},
      {"hostNetwork: true", "hostNetwork: \"yes\"", ".spec.tasks[0].template.spec.hostNetwork: 'yes' is not of type 'boolean'"},
      {"  labels:\n", "  lables:\n", ".metadata: Additional properties are not allowed ('lables' was unexpected)"},
  };
  for (const Case& c : cases) {
    std::size_t at = job.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    std::string bad = job;
    bad.replace(at, c.from.size(), c.to);
    auto [rc, output] = Validate({{"volcano-job.yaml", bad}}, "bad");
    EXPECT_EQ(rc, 1) << c.to << ":\n" << output;
    EXPECT_NE(output.find(c.want), std::string::npos) << c.to << ":\n" << output;
  }
}

TEST(VolcanoSchema, RefusesAQueueFieldThatIsNotInTheSchemaAndAnUnknownKind) {
  ExpectValidatorRuns();
  auto [rc, output] = Validate({{"q.yaml", R"(apiVersion: "scheduling.volcano.sh/v1beta1"
kind: "Queue"
metadata: {name: "q"}
spec: {weigth: 1}
)"},
                                {"pg.yaml", R"(apiVersion: "scheduling.volcano.sh/v1beta1"
kind: "PodGroup"
metadata: {name: "pg"}
spec: {minMember: 2, queue: "q"}
)"},
                                {"j.yaml", R"(apiVersion: "batch.volcano.sh/v1beta1"
kind: "Job"
metadata: {name: "j"}
)"}},
                               "queue");
  EXPECT_EQ(rc, 1) << output;
  EXPECT_NE(output.find("(Queue q): .spec: Additional properties are not allowed ('weigth' was unexpected)"), std::string::npos)
      << output;
  EXPECT_EQ(output.find("PodGroup pg"), std::string::npos) << "a valid PodGroup passes:\n" << output;
  EXPECT_NE(output.find("no CRD here serves apiVersion batch.volcano.sh/v1beta1 kind Job"), std::string::npos) << output;
}

}  // namespace
}  // namespace gpuforge
