// --nodes with inventory groups, held against ClusterShell's own `nodeset`, configured with the
// same groups through a groups.conf of its format (one group source per kind: the default for
// inventory groups, "role", "profile" and "rack", which is how `@role:compute` reads to it).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "cli/remote_options.h"
#include "gpuforge/inventory/loader.h"

namespace gpuforge::cli {
namespace {

using Names = std::vector<std::string>;

const std::string kExample = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml";

std::optional<std::string> Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

model::Cluster Example() {
  inventory::LoadOutcome o = inventory::LoadFile(kExample);
  EXPECT_TRUE(o.ok()) << o.FormatDiagnostics();
  return o.ok() ? *o.cluster : model::Cluster{};
}

TEST(CliNodes, GroupsComeFromTheInventory) {
  const model::Cluster c = Example();
  const nodeset::Groups g = NodeGroups(c);
  EXPECT_EQ(g.at("train"), (Names{"gpu001", "gpu002", "gpu003", "gpu004"}));
  EXPECT_EQ(g.at("role:controller"), (Names{"head01"}));
  EXPECT_EQ(g.at("role:compute"), (Names{"gpu001", "gpu002", "gpu003", "gpu004"}));
  EXPECT_TRUE(g.at("role:storage").empty());
  EXPECT_EQ(g.at("profile:hgx-h200"), (Names{"gpu001", "gpu002", "gpu003", "gpu004"}));
  EXPECT_EQ(g.at("rack:r02"), (Names{"gpu003", "gpu004"}));
  EXPECT_EQ(g.at("*").size(), c.nodes.size());
}

TEST(CliNodes, SelectionErrors) {
  const model::Cluster c = Example();
  Result<Names> none = SelectNodeNames(c, "@train&@role:controller");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "\"@train&@role:controller\" selects no node");
  Result<Names> stranger = SelectNodeNames(c, "@train,gpu009");
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.error().message, "'gpu009' is not a node of the inventory");
  Result<Names> typo = SelectNodeNames(c, "@trian");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean '@train'?"), std::string::npos) << typo.error().message;
}

TEST(CliNodes, SelectionMatchesClusterShellNodeset) {
  if (!Shell("command -v nodeset")) GTEST_SKIP() << "nodeset (ClusterShell) is not installed";
  const model::Cluster c = Example();
  const nodeset::Groups groups = NodeGroups(c);
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("gpuforge-nodes-test-{}", getpid());
  std::filesystem::create_directories(dir);
  // groups.conf: one source per prefix, each a file of "group: members" lines that the
  // source's map/list upcalls read (ClusterShell's groups.conf(5) format).
  std::map<std::string, std::string> files;  // source -> lines
  for (const auto& [name, members] : groups) {
    if (name == "*" || members.empty()) continue;
    const std::size_t colon = name.find(':');
    const std::string source = colon == std::string::npos ? "inv" : name.substr(0, colon);
    const std::string group = colon == std::string::npos ? name : name.substr(colon + 1);
    std::string line = group + ":";
    for (const std::string& m : members) line += " " + m;
    files[source] += line + "\n";
  }
  std::ofstream conf(dir / "groups.conf");
  conf << "[Main]\ndefault: inv\n";
  for (const auto& [source, lines] : files) {
    const std::string file = (dir / (source + ".txt")).string();
    std::ofstream(file) << lines;
    conf << fmt::format("[{}]\nmap: sed -n 's/^$GROUP: //p' {}\nlist: sed -n 's/^\\([^:]*\\):.*/\\1/p' {}\n", source,
                        file, file);
  }
  conf.close();
  const char* const kExpressions[] = {
      "@train",
      "@role:compute",
      "@role:controller,@train",
      "gpu[001-002],@role:controller",
      "@train!gpu003",
      "@profile:hgx-h200&@rack:r01",
      "@rack:r01^@rack:r02",
      "@rack:r01,@rack:r02!gpu[002-003]",
      "gpu[001-004]!@rack:r02,head01",
      "@train&gpu[002-009]!gpu004",
  };
  for (const char* expr : kExpressions) {
    std::optional<std::string> want =
        Shell(fmt::format("CLUSTERSHELL_CFGDIR='{}' nodeset -e '{}'", dir.string(), expr));
    ASSERT_TRUE(want) << "nodeset -e " << expr << " failed";
    std::istringstream in(*want);
    std::set<std::string> want_set;
    for (std::string w; in >> w;) want_set.insert(w);
    Result<Names> got = SelectNodeNames(c, expr);
    ASSERT_TRUE(got.ok()) << expr << ": " << got.error().message;
    EXPECT_EQ(std::set<std::string>(got->begin(), got->end()), want_set) << expr;
    EXPECT_EQ(got->size(), want_set.size()) << expr << ": duplicates";
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace gpuforge::cli
