// `gpuforge thresholds show`: every pass mark validate will use, with value, unit and origin.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "gpuforge/validate/thresholds.h"

namespace gpuforge::cli {
namespace {

using test_support::RunCli;
using test_support::RunResult;

const std::string kExample = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml";

nlohmann::json Show(std::vector<std::string> extra, const std::string& inventory = kExample) {
  std::vector<std::string> args = {"thresholds", "show", "--format", "json", inventory};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = RunCli(args);
  EXPECT_EQ(r.code, kExitOk) << r.err;
  return r.code == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

const nlohmann::json* Row(const nlohmann::json& j, const std::string& key) {
  for (const auto& r : j["thresholds"]) {
    if (r["key"] == key) return &r;
  }
  return nullptr;
}

const nlohmann::json* Mark(const nlohmann::json& j, const std::string& profile, const std::string& check) {
  for (const auto& p : j["profiles"]) {
    if (p["profile"] != profile) continue;
    for (const auto& m : p["marks"]) {
      if (m["check"] == check) return &m;
    }
  }
  return nullptr;
}

TEST(ThresholdsShow, EveryRowWithItsDefaultAndEveryProfilesMarks) {
  const nlohmann::json j = Show({});
  EXPECT_EQ(j["schema"], "gpuforge.thresholds/v1");
  ASSERT_EQ(j["thresholds"].size(), validate::DefaultThresholds().size());
  for (const validate::ThresholdDefault& d : validate::DefaultThresholds()) {
    const nlohmann::json* r = Row(j, std::string(d.key));
    ASSERT_NE(r, nullptr) << d.key;
    EXPECT_DOUBLE_EQ((*r)["value"].get<double>(), d.value) << d.key;
    EXPECT_EQ((*r)["unit"], std::string(d.unit));
    EXPECT_EQ((*r)["origin"], "default");
    EXPECT_EQ((*r)["source"], std::string(d.source));
  }
  // The H200 nodes: 0.75 x the table's 4258 GB/s copy figure, 0.8 x its 431 GB/s all-reduce.
  const nlohmann::json* copy = Mark(j, "hgx-h200", "gpu.copy");
  ASSERT_NE(copy, nullptr) << j.dump(2);
  EXPECT_NEAR((*copy)["value"].get<double>(), 0.75 * 4258, 1e-9);
  EXPECT_NE((*copy)["basis"].get<std::string>().find("H200 hbm_copy_gbs"), std::string::npos) << (*copy)["basis"];
  const nlohmann::json* nccl = Mark(j, "hgx-h200", "nccl.allreduce");
  ASSERT_NE(nccl, nullptr);
  EXPECT_NEAR((*nccl)["value"].get<double>(), 0.8 * 431, 1e-9);
  const nlohmann::json* read = Mark(j, "hgx-h200", "storage.read");
  ASSERT_NE(read, nullptr);
  EXPECT_NEAR((*read)["value"].get<double>(), 8 * 1.0, 1e-9);
  // Every node's profile is listed once, with its nodes.
  std::size_t nodes = 0;
  for (const auto& p : j["profiles"]) nodes += p["nodes"].size();
  EXPECT_EQ(nodes, 6u);
}

TEST(ThresholdsShow, ParamAndInventoryOverridesNameTheirOrigin) {
  const nlohmann::json j = Show({"--param", "gpu.copy.reference_fraction=0.9", "--param",
                                 "storage.read.min_gbs_per_gpu=2GB/s", "--profile", "hgx-h200"});
  ASSERT_EQ(j["profiles"].size(), 1u);
  EXPECT_EQ((*Row(j, "gpu.copy.reference_fraction"))["origin"], "--param");
  EXPECT_NEAR((*Mark(j, "hgx-h200", "gpu.copy"))["value"].get<double>(), 0.9 * 4258, 1e-9);
  EXPECT_NEAR((*Mark(j, "hgx-h200", "storage.read"))["value"].get<double>(), 16.0, 1e-9);

  const std::string inv = (std::filesystem::temp_directory_path() / "gpuforge-thresholds-override.yaml").string();
  {
    std::ifstream in(kExample);
    std::ofstream out(inv);
    out << in.rdbuf() << "\nvalidation:\n  thresholds:\n    nccl.quick.max_ms: 25ms\n";
  }
  const nlohmann::json k = Show({}, inv);
  const nlohmann::json* q = Row(k, "nccl.quick.max_ms");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ((*q)["origin"], "inventory");
  EXPECT_DOUBLE_EQ((*q)["value"].get<double>(), 25);
  EXPECT_NE((*q)["source"].get<std::string>().find("gpuforge-thresholds-override.yaml:"), std::string::npos) << (*q)["source"];
}

TEST(ThresholdsShow, AModelWithoutAFigureHasNoMarkAndSaysWhy) {
  const std::string inv = (std::filesystem::temp_directory_path() / "gpuforge-thresholds-a100.yaml").string();
  std::ofstream(inv) << "cluster: {name: t}\nprofiles:\n  p: {gpus: {model: A100, count: 4}, memory: 1TB}\n"
                        "nodes:\n  - {name: \"n[1-2]\", profile: p}\n";
  const nlohmann::json j = Show({}, inv);
  const nlohmann::json* copy = Mark(j, "p", "gpu.copy");
  ASSERT_NE(copy, nullptr) << j.dump(2);
  EXPECT_TRUE((*copy)["value"].is_null());
  EXPECT_NE((*copy)["basis"].get<std::string>().find("no hbm_copy_gbs figure for A100"), std::string::npos);
  // 4 GPUs: the table's all-reduce figure is for 8.
  const nlohmann::json* nccl = Mark(j, "p", "nccl.allreduce");
  ASSERT_NE(nccl, nullptr);
  EXPECT_TRUE((*nccl)["value"].is_null());
  EXPECT_NE((*nccl)["basis"].get<std::string>().find("for 8 GPUs per node"), std::string::npos);
  EXPECT_NEAR((*Mark(j, "p", "gpu.h2d"))["value"].get<double>(), 21, 1e-9);
}

TEST(ThresholdsShow, BadInputIsAUsageErrorThatNamesIt) {
  RunResult r = RunCli({"thresholds", "show", kExample, "--profile", "hgx-h20"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--profile hgx-h20: no node of this inventory uses it; did you mean 'hgx-h200'?"), std::string::npos)
      << r.err;
  r = RunCli({"thresholds", "show", kExample, "--param", "storage.read.size=8GiB"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--param storage.read.size=8GiB: not a threshold"), std::string::npos) << r.err;
  r = RunCli({"thresholds", "show", kExample, "--param", "nccl.quick.max_ms=3GB"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--param nccl.quick.max_ms=3GB"), std::string::npos) << r.err;
  r = RunCli({"thresholds", "show", "/nonexistent.yaml"});
  EXPECT_EQ(r.code, kExitUsage);
  r = RunCli({"thresholds"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("'gpuforge thresholds' needs a command: show"), std::string::npos) << r.err;
}

TEST(ThresholdsShow, TextNamesValueUnitAndOrigin) {
  RunResult r = RunCli({"thresholds", "show", "--color", "never", kExample, "--param", "nccl.quick.max_ms=20"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("nccl.quick.max_ms"), std::string::npos);
  EXPECT_NE(r.out.find("--param nccl.quick.max_ms=20"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Profile hgx-h200 (8 x H200; 4 nodes: gpu[001-004])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(">= 3194 GB/s"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuforge::cli
