// facts --save DIR / --facts DIR (#13 part 1): a node's gather output kept as DIR/NODE.facts
// parses back to the same PCI tree, and that tree (and only that) gives the node its NCCL
// topology file. A damaged save is an error naming the file, not a node quietly unmeasured.

#include "gpuforge/facts/saved.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "facts/fixtures.h"
#include "gpuforge/facts/gather.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/measured.h"

namespace gpuforge::facts {
namespace {

// A gather output with the measured HGX H100 tree (tests/data/facts/pci-tree-hgx-h100.txt)
// and the two required sections.
std::string GatherWithTree(bool tree = true) {
  std::string out = "@@gpuforge-facts begin format=1@@\n";
  for (const SectionSpec& s : GatherSections()) {
    if (s.name == "uname") {
      out += "@@gpuforge-facts section=uname rc=0@@\n6.8.0-45-generic\n";
    } else if (s.name == "meminfo") {
      out += "@@gpuforge-facts section=meminfo rc=0@@\nMemTotal: 1024 kB\n";
    } else if (s.name == "pci-tree" && tree) {
      out += "@@gpuforge-facts section=pci-tree rc=0@@\n" + testing::ReadFixture("pci-tree-hgx-h100.txt");
    } else {
      out += fmt::format("@@gpuforge-facts section={} rc=absent@@\n", s.name);
    }
  }
  return out + "@@gpuforge-facts end@@\n";
}

constexpr const char* kHgx = R"(cluster: {name: t}
networks: {ib: {role: compute, kind: infiniband, rate: 400Gb/s}}
profiles:
  hgx:
    gpus: {model: H100, count: 8, pci: ["0000:18:00.0", "0000:38:00.0", "0000:48:00.0", "0000:58:00.0", "0000:98:00.0", "0000:b8:00.0", "0000:c8:00.0", "0000:d9:00.0"], numa: [0, 0, 0, 0, 1, 1, 1, 1]}
    cpu: {model: "Intel(R) Xeon(R) Platinum 8480+", sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    nics: [{name: "mlx5_[0-7]", kind: infiniband, rate: 400Gb/s, network: ib}]
nodes: [{name: n1, profile: hgx}, {name: n2, profile: hgx}]
software:
  nccl: {topo_file: /etc/nccl-topology.xml}
)";

model::Cluster Cluster() {
  auto out = inventory::LoadString(kHgx, "t.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return std::move(*out.cluster);
}

struct SavedDir : ::testing::Test {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              fmt::format("gpuforge-saved-{}-{}", ::getpid(),
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void TearDown() override { std::filesystem::remove_all(dir); }
};

TEST_F(SavedDir, WhatFactsSavesRenderReadsBack) {
  const model::Cluster c = Cluster();
  Collected col;
  col.gathered.push_back({"n1", ParseGather("n1", GatherWithTree())});
  col.gathered.push_back({"n2", Error{"node n2: not gathered"}});
  ASSERT_TRUE(col.gathered[0].facts.ok()) << col.gathered[0].facts.error().message;
  col.raw = {GatherWithTree(), ""};
  Result<std::size_t> n = SaveGathered(dir.string(), col);
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 1u) << "a node not gathered saves nothing";
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "n1.facts"));
  EXPECT_FALSE(std::filesystem::exists(dir / "n2.facts"));

  Result<SavedPci> saved = LoadSavedPci(dir.string(), c);
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  ASSERT_EQ(saved->trees.count("n1"), 1u);
  EXPECT_EQ(saved->trees.at("n1").endpoints.size(), col.gathered[0].facts->pci_tree->endpoints.size());
  ASSERT_EQ(saved->missing.size(), 1u);
  EXPECT_EQ(saved->missing[0].first, "n2");
  EXPECT_EQ(saved->missing[0].second, "no " + (dir / "n2.facts").string());

  // The measured node gets its topology file, the other one the reason it has none.
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = "t.yaml";
  Result<render::Output> out = render::Render(c, o, saved->trees);
  ASSERT_TRUE(out.ok()) << out.error().message;
  bool n1 = false, n2 = false;
  for (const render::RenderedFile& f : out->files) {
    n1 = n1 || (f.node == "n1" && f.path == "/etc/nccl-topology.xml");
    n2 = n2 || (f.node == "n2" && f.path == "/etc/nccl-topology.xml");
  }
  EXPECT_TRUE(n1);
  EXPECT_FALSE(n2);
  bool reason = false;
  for (const render::Skip& s : out->skipped) {
    reason = reason || (s.node == "n2" && s.path == "/etc/nccl-topology.xml" &&
                        s.reason.find("no measured PCI tree") != std::string::npos);
  }
  EXPECT_TRUE(reason);
}

TEST_F(SavedDir, ADamagedSaveIsAnErrorNamingTheFile) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "n1.facts") << "not a gather output\n";
  Result<SavedPci> saved = LoadSavedPci(dir.string(), Cluster());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.error().message.find((dir / "n1.facts").string()), std::string::npos) << saved.error().message;
  EXPECT_NE(saved.error().message.find("node n1"), std::string::npos) << saved.error().message;
}

TEST_F(SavedDir, AFifoOrADirectoryIsRefusedNotRead) {
  std::filesystem::create_directories(dir / "n1.facts");
  Result<SavedPci> saved = LoadSavedPci(dir.string(), Cluster());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.error().message.find("n1.facts"), std::string::npos) << saved.error().message;
}

TEST_F(SavedDir, ASaveWithoutTheTreeIsANoteNotATree) {
  std::filesystem::create_directories(dir);
  std::string g = GatherWithTree(false);
  std::ofstream(dir / "n1.facts") << g;
  Result<SavedPci> saved = LoadSavedPci(dir.string(), Cluster());
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  EXPECT_EQ(saved->trees.count("n1"), 0u);
  ASSERT_EQ(saved->missing.size(), 2u);
  EXPECT_EQ(saved->missing[0].first, "n1");
}

TEST(Saved, NoDirectoryIsAnError) {
  Result<SavedPci> saved = LoadSavedPci("/nonexistent/gpuforge-facts", Cluster());
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.error().message,
            "--facts: /nonexistent/gpuforge-facts is not a directory (write one with `gpuforge facts --save "
            "/nonexistent/gpuforge-facts`)");
}

}  // namespace
}  // namespace gpuforge::facts
