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

  Result<SavedMeasured> saved = LoadSavedMeasured(dir.string(), c);
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  ASSERT_EQ(saved->trees.count("n1"), 1u);
  EXPECT_EQ(saved->trees.at("n1").endpoints.size(), col.gathered[0].facts->pci_tree->endpoints.size());
  ASSERT_EQ(saved->missing.size(), 1u);
  EXPECT_EQ(saved->missing[0].first, "n2");
  EXPECT_EQ(saved->missing[0].second, "no " + (dir / "n2.facts").string());
  EXPECT_TRUE(saved->gpus.empty()) << "the saved node ran no nvidia-smi";
  ASSERT_EQ(saved->gpus_missing.size(), 1u);
  EXPECT_EQ(saved->gpus_missing[0].second, (dir / "n1.facts").string() + ": nvidia-smi is not installed");

  // The measured node gets its topology file, the other one the reason it has none.
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = "t.yaml";
  Result<render::Output> out = render::Render(c, o, render::Measured{saved->trees, saved->gpus});
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
  Result<SavedMeasured> saved = LoadSavedMeasured(dir.string(), Cluster());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.error().message.find((dir / "n1.facts").string()), std::string::npos) << saved.error().message;
  EXPECT_NE(saved.error().message.find("node n1"), std::string::npos) << saved.error().message;
}

TEST_F(SavedDir, AFifoOrADirectoryIsRefusedNotRead) {
  std::filesystem::create_directories(dir / "n1.facts");
  Result<SavedMeasured> saved = LoadSavedMeasured(dir.string(), Cluster());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.error().message.find("n1.facts"), std::string::npos) << saved.error().message;
}

TEST_F(SavedDir, ASaveWithoutTheTreeIsANoteNotATree) {
  std::filesystem::create_directories(dir);
  std::string g = GatherWithTree(false);
  std::ofstream(dir / "n1.facts") << g;
  Result<SavedMeasured> saved = LoadSavedMeasured(dir.string(), Cluster());
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  EXPECT_EQ(saved->trees.count("n1"), 0u);
  ASSERT_EQ(saved->missing.size(), 2u);
  EXPECT_EQ(saved->missing[0].first, "n1");
}

TEST(Saved, NoDirectoryIsAnError) {
  Result<SavedMeasured> saved = LoadSavedMeasured("/nonexistent/gpuforge-facts", Cluster());
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.error().message,
            "--facts: /nonexistent/gpuforge-facts is not a directory (write one with `gpuforge facts --save "
            "/nonexistent/gpuforge-facts`)");
}

// gres.conf's device files come from here: each GPU's minor from -q -x, in bus order; a node
// where one GPU lacks it, or two share one, is not measured (it keeps the assumed lines).
TEST(MeasuredGpusOf, BusOrderWithMinorsOrWhyNot) {
  NodeFacts f;
  auto gpu = [](int index, std::string bdf, std::optional<int> minor) {
    Gpu g;
    g.index = index;
    g.pci_bus_id = std::move(bdf);
    g.detail = GpuDetail{};
    g.detail->minor_number = minor;
    return g;
  };
  Result<std::vector<model::MeasuredGpu>> none = MeasuredGpusOf(f);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "nvidia-smi listed no GPU");
  f.gpus = {gpu(0, "0000:9a:00.0", 0), gpu(1, "0000:18:00.0", 1)};
  f.pci.push_back(PciDevice{});
  f.pci.back().bdf = "0000:18:00.0";
  f.pci.back().numa_node = 0;
  Result<std::vector<model::MeasuredGpu>> two = MeasuredGpusOf(f);
  ASSERT_TRUE(two.ok()) << two.error().message;
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].bdf, "0000:18:00.0");
  EXPECT_EQ((*two)[0].minor, 1);
  EXPECT_EQ((*two)[0].numa_node, 0);
  EXPECT_EQ((*two)[1].bdf, "0000:9a:00.0");
  EXPECT_EQ((*two)[1].minor, 0);
  EXPECT_FALSE((*two)[1].numa_node.has_value()) << "no sysfs entry: NUMA unknown, not guessed";

  f.gpus[1].detail->minor_number = 0;
  EXPECT_EQ(MeasuredGpusOf(f).error().message, "two GPUs report minor number 0");
  f.gpus[1].detail->minor_number.reset();
  EXPECT_EQ(MeasuredGpusOf(f).error().message, "no nvidia-smi -q -x section");
  f.sections.push_back(Section{});
  f.sections.back().name = "nvidia-smi-xml";
  EXPECT_EQ(MeasuredGpusOf(f).error().message, "GPU 1 (0000:18:00.0) has no <minor_number> in nvidia-smi -q -x");
}

}  // namespace
}  // namespace gpuforge::facts
