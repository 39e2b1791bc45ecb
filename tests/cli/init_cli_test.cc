// `gpuforge init` (#33) in-process: what it refuses before it asks any node, and one real run
// on this machine (--local: the gather script in a local shell) whose file loads as written.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/run_cli.h"
#include "gpuforge/inventory/loader.h"

namespace gpuforge::cli {
namespace {

using test_support::RunCli;
namespace fs = std::filesystem;

std::string Fabric(const std::string& name) { return std::string(GPUFORGE_TEST_DATA_DIR) + "/fabric/" + name; }

fs::path TempDir() {
  std::string t = (fs::temp_directory_path() / "gpuforge-init-XXXXXX").string();
  EXPECT_NE(::mkdtemp(t.data()), nullptr);
  return t;
}

TEST(InitCli, RefusesWhatItCannotDraftBeforeAskingAnyNode) {
  const fs::path dir = TempDir();
  auto refused = [](std::vector<std::string> args, std::string_view why) {
    args.insert(args.begin(), "init");
    auto r = RunCli(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  };
  refused({}, "--nodes: name the nodes");
  refused({"--nodes", "gpu[000001-100000]"}, "an inventory holds at most 65536 nodes");
  refused({"--nodes", "gpu_1"}, "--nodes: 'gpu_1': host name contains '_'");
  refused({"--nodes", "gpu[1-2],gpu1"}, "gpu1 is named twice");
  refused({"--nodes", "gpu[1-3]", "--addresses", "198.18.0.[1-2]"}, "2 addresses for 3 nodes");
  refused({"--nodes", "gpu1", "--name", "a b"}, "--name: ");
  refused({"--nodes", "gpu1", "--user", "Root;rm"}, "--user: ");
  refused({"--nodes", "gpu1", "--jump", "ops@bastion:99999"}, "--jump: ");
  refused({"--nodes", "gpu[1-2]", "--local"}, "--local: this machine stands for one node");
  refused({"--nodes", "gpu1", "--subnet-from", "gpu2"}, "--subnet-from: 'gpu2' is not one of --nodes");
  refused({"--nodes", "gpu1", "--subnet-from", "gpu1", "--iblinkinfo", Fabric("iblinkinfo/qdr-1switch-5hca.txt")},
          "give one or the other");
  refused({"--nodes", "gpu1", "--iblinkinfo", Fabric("iblinkinfo/constructed-truncated.txt")},
          "--iblinkinfo: " + Fabric("iblinkinfo/constructed-truncated.txt") + ":4: ");
  refused({"--nodes", "gpu1", "--ibnetdiscover", "/nonexistent/topo.txt"}, "/nonexistent/topo.txt");

  // An --out that exists in any form is refused and left as it was.
  const fs::path file = dir / "cluster.yaml";
  std::ofstream(file) << "keep me\n";
  refused({"--nodes", "gpu1", "--out", file.string()}, "already exists; init never overwrites");
  fs::create_symlink(dir / "nowhere.yaml", dir / "link.yaml");
  refused({"--nodes", "gpu1", "--out", (dir / "link.yaml").string()}, "already exists");
  EXPECT_FALSE(fs::exists(dir / "nowhere.yaml")) << "the link's target must not be created";
  fs::create_directory(dir / "sub");
  refused({"--nodes", "gpu1", "--out", (dir / "sub").string()}, "already exists");
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "keep me\n");
  fs::remove_all(dir);
}

// The real gather script on this machine: the draft it writes loads as written, and names this
// machine as its one node.
TEST(InitCli, LocalDraftOfThisMachineLoads) {
  const fs::path dir = TempDir();
  const fs::path out = dir / "here.yaml";
  auto r = RunCli({"init", "--local", "--nodes", "here01", "--name", "lab", "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + out.string() + ": 1 node in 1 profile (0 outliers); 0 not reached"), std::string::npos)
      << r.err;
  inventory::LoadOutcome l = inventory::LoadFile(out.string());
  ASSERT_TRUE(l.ok()) << l.FormatDiagnostics();
  EXPECT_EQ(l.cluster->name, "lab");
  ASSERT_EQ(l.cluster->nodes.size(), 1u);
  EXPECT_EQ(l.cluster->nodes[0].name, "here01");
  ASSERT_EQ(l.cluster->profiles.size(), 1u);
  EXPECT_GT(l.cluster->profiles[0].memory_bytes, 0u);
  EXPECT_GT(l.cluster->profiles[0].cpu.sockets, 0);
  // The file is the one written, mode 0644, no temporary left beside it.
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dir);
}

// Saved subnet output with this machine as the node: its HCAs are no NIC of the draft (this
// machine has none), so nothing is drafted from the subnet; the file is still written, each
// HCA a note with its line, and the run says it drafted no cable (exit 1).
TEST(InitCli, ASubnetWithNoDraftedNicIsNotesAndExitOne) {
  const fs::path dir = TempDir();
  const fs::path out = dir / "here.yaml";
  const std::string links = Fabric("iblinkinfo/qdr-1switch-5hca.txt");
  auto r = RunCli({"init", "--local", "--nodes", "here01", "--iblinkinfo", links, "--out", out.string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("no cable of the subnet could be drafted"), std::string::npos) << r.err;
  std::ifstream in(out);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_NE(s.str().find("# note: " + links + ":"), std::string::npos) << s.str();
  EXPECT_NE(s.str().find("is on the subnet but is no InfiniBand NIC of a drafted node"), std::string::npos) << s.str();
  inventory::LoadOutcome l = inventory::LoadFile(out.string());
  EXPECT_TRUE(l.ok()) << l.FormatDiagnostics();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuforge::cli
