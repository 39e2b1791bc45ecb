// `gpuforge version`: the build and the schema of every JSON document, so a CI script can check
// the gpuforge it runs before it parses its output (base/schemas.h, docs/cli.md).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "cli/app.h"
#include "cli/run_cli.h"
#include "gpuforge/base/build_info.h"
#include "gpuforge/base/schemas.h"

namespace gpuforge::cli {
namespace {

using test_support::RunCli;
using test_support::RunResult;

const std::string kExample = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml";

TEST(Version, JsonGivesTheBuildAndEverySchema) {
  RunResult r = RunCli({"version", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuforge.version/v1");
  EXPECT_EQ(j["version"], "0.1.0");
  const std::string rev = j["git_revision"];
  EXPECT_TRUE(rev.empty() || std::regex_match(rev, std::regex("[0-9a-f]{40}"))) << rev;
  EXPECT_EQ(j["build"]["sanitizers"], GetBuildInfo().sanitizers);
  EXPECT_FALSE(j["build"]["compiler"].get<std::string>().empty());
  for (const char* k : {"type", "cuda_headers", "nccl_headers", "ibverbs_headers", "gpu_kernels"}) {
    EXPECT_TRUE(j["build"].contains(k)) << k;
  }
  std::set<std::string> ids;
  for (const auto& s : j["schemas"]) {
    const std::string id = s["id"];
    EXPECT_TRUE(ids.insert(id).second) << "listed twice: " << id;
    EXPECT_EQ(id, s["name"].get<std::string>() + "/v" + std::to_string(s["version"].get<int>()));
    EXPECT_FALSE(s["written_by"].get<std::string>().empty()) << id;
  }
  EXPECT_EQ(ids.size(), schemas::All().size());
  for (const char* id : {"gpuforge.lint/v1", "gpuforge.saved-plan/v1", "gpuforge.results/v1", "gpuforge.journal/v1",
                         "gpuforge.version/v1", "gpuforge.probe/v1"}) {
    EXPECT_EQ(ids.count(id), 1u) << id;
  }
}

TEST(Version, TextAndTheFlagSayTheSame) {
  RunResult cmd = RunCli({"version"});
  RunResult flag = RunCli({"--version"});
  ASSERT_EQ(cmd.code, kExitOk);
  EXPECT_EQ(cmd.out.rfind(flag.out, 0), 0u) << cmd.out << "\n---\n" << flag.out;
  EXPECT_NE(cmd.out.find("gpuforge.validate/v1"), std::string::npos);
}

TEST(Schemas, ParseSplitsNameAndMajor) {
  schemas::Parsed p;
  ASSERT_TRUE(schemas::Parse("gpuforge.saved-plan/v1", &p));
  EXPECT_EQ(p.name, "gpuforge.saved-plan");
  EXPECT_EQ(p.major, 1);
  EXPECT_TRUE(schemas::Parse("gpuforge.lint/v12", &p));
  EXPECT_EQ(p.major, 12);
  for (const char* bad : {"", "gpuforge.lint", "gpuforge.lint/v", "gpuforge.lint/v0", "gpuforge.lint/vx", "other.lint/v1",
                          "gpuforge.lint/v99999"}) {
    EXPECT_FALSE(schemas::Parse(bad, &p)) << bad;
  }
  for (const schemas::Schema& s : schemas::All()) EXPECT_TRUE(schemas::Parse(s.id, &p)) << s.id;
}

// Every command whose output is a JSON document names a schema of the catalogue.
TEST(Schemas, EveryJsonOutputNamesACatalogueSchema) {
  std::set<std::string> known;
  for (const schemas::Schema& s : schemas::All()) known.insert(std::string(s.id));
  const std::vector<std::vector<std::string>> commands = {
      {"lint", "--format", "json", kExample},
      {"estimate", "--format", "json", kExample},
      {"plan", "--offline", "--format", "json", kExample},
      {"inventory", "show", "--format", "json", kExample},
      {"version", "--format", "json"},
  };
  for (const auto& args : commands) {
    RunResult r = RunCli(args);
    ASSERT_LE(r.code, kExitFindings) << args[0] << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("schema")) << args[0];
    EXPECT_EQ(known.count(j["schema"].get<std::string>()), 1u) << args[0] << ": " << j["schema"];
  }
}

}  // namespace
}  // namespace gpuforge::cli
