// The loader under stress: many mistakes at once, follow-on errors held back, limits, files that
// are not there, and a few thousand mangled copies of the example that must each end in a model
// or in at least one positioned error, never in a crash (ASan and UBSan watch the run).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"

namespace gpuforge::inventory {
namespace {

std::string DataFile(std::string_view name) { return fmt::format("{}/inventory/{}", GPUFORGE_TEST_DATA_DIR, name); }

std::string ExamplePath() { return std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml"; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<int> ErrorLines(const LoadOutcome& out) {
  std::vector<int> lines;
  for (const Diagnostic& d : out.diags.items()) lines.push_back(d.pos.line);
  return lines;
}

TEST(LoaderAllErrors, FiveIndependentMistakesInOneRun) {
  LoadOutcome out = LoadFile(DataFile("five-mistakes.yaml"));
  EXPECT_FALSE(out.ok());
  EXPECT_FALSE(out.cluster.has_value());
  ASSERT_EQ(out.diags.error_count(), 5u) << out.FormatDiagnostics();
  // Sorted by line although the loader reads networks, profiles and nodes in another order;
  // the links (lines 23-24) and the partition (32) that name the broken entry's nodes add
  // nothing.
  EXPECT_EQ(ErrorLines(out), (std::vector<int>{8, 10, 16, 21, 27}));
  const std::string text = out.FormatDiagnostics();
  EXPECT_NE(text.find("did you mean 'liquid'?"), std::string::npos);
  EXPECT_NE(text.find("did you mean 'hgx-h200'?"), std::string::npos);
  EXPECT_NE(text.find("'400' has no unit"), std::string::npos);
  EXPECT_NE(text.find("that is a size"), std::string::npos);
  EXPECT_NE(text.find("path 'scratch' must be absolute"), std::string::npos);
  EXPECT_TRUE(text.ends_with(fmt::format("5 errors in {}\n", DataFile("five-mistakes.yaml"))));
}

TEST(LoaderAllErrors, EveryPartOfABrokenNodeEntryIsChecked) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles: {cpu: {memory: 64GB}}
groups: {train: {}}
nodes:
  - name: "n[1-2]"
    address: "10.0.0.[1-3]"
    rack: "r[1-3]"
    profile: cpu
    role: compute-node
    groups: [trian]
    ssh: {port: 0}
    vars: {x: "a b"}
)",
                               "entry.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(ErrorLines(out), (std::vector<int>{6, 7, 9, 10, 11, 12})) << out.FormatDiagnostics();
}

TEST(LoaderAllErrors, ProfileMistakeReportedOnceForManyNodesAndOverrides) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles:
  p:
    memory: 2T
    ssh: {user: Admin}
    gpus: {model: H200, count: 8}
nodes:
  - {name: "a[1-3]", profile: p}
  - {name: b1, profile: p, overrides: {gpus: {count: 4}}}
  - {name: b2, profile: p, overrides: {gpus: {count: 2}}}
  - {name: c1, profile: p}
)",
                               "once.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(ErrorLines(out), (std::vector<int>{4, 5})) << out.FormatDiagnostics();
}

TEST(LoaderAllErrors, DerivedProfileReportsOnlyWhatTheOverrideBreaks) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles:
  p:
    gpus: {model: H200, count: 8, numa: [0, 0, 0, 0, 1, 1, 1, 1]}
nodes:
  - {name: a1, profile: p}
  - {name: b1, profile: p, overrides: {gpus: {count: 4}}}
  - {name: c1, profile: p, overrides: [gpus]}
)",
                               "derived.yaml");
  EXPECT_FALSE(out.ok());
  ASSERT_EQ(out.diags.error_count(), 2u) << out.FormatDiagnostics();
  EXPECT_EQ(out.diags.items()[0].pos.line, 4);
  EXPECT_EQ(out.diags.items()[0].message,
            "'numa' in gpus of profile 'p@b1' lists 8 NUMA nodes for 4 GPUs (count: 4); give one per GPU, in GPU index order");
  EXPECT_EQ(out.diags.items()[1].pos.line, 8);
  EXPECT_EQ(out.diags.items()[1].message, "'overrides' in node entry 'c1' must be a mapping of key: value, not a list");
}

TEST(LoaderAllErrors, NoFollowOnErrorsFromABrokenNodeEntry) {
  // The entry's names cannot be known (bad hostlist), so neither the links nor the partition
  // nor the controller that refer to them may add errors; the one real mistake in the links
  // (port 99) still shows.
  LoadOutcome out = LoadString(R"(cluster: {name: t}
networks: {ib: {role: compute, kind: infiniband, rate: 400Gb/s}}
profiles:
  p: {nics: [{name: mlx5_0, kind: infiniband, rate: 400Gb/s, network: ib}]}
nodes:
  - {name: "gpu[1-4", profile: p}
switches: [{name: leaf1, tier: leaf, network: ib, ports: 8, port_rate: 400Gb/s}]
links:
  - {from: "gpu[1-4]:mlx5_0", to: "leaf1:[1-4]"}
  - {from: "leaf1:99", to: "gpu1:mlx5_0"}
software:
  scheduler: {kind: slurm, controller: gpu1, partitions: [{name: all, nodes: "gpu[1-4]"}]}
)",
                               "follow.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(ErrorLines(out), (std::vector<int>{6, 10})) << out.FormatDiagnostics();
}

TEST(LoaderAllErrors, AliasCycleInOverridesTerminates) {
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles:
  p: &a {gpus: {model: H200, count: 8}, cpu: *a}
nodes:
  - {name: n1, profile: p, overrides: &b {cpu: *b}}
)",
                               "cycle.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(out.diags.has_errors());
}

TEST(LoaderLimits, SixtyFiveThousandNodesLoad) {
  LoadOutcome out = LoadString(R"(cluster: {name: big}
profiles: {cpu: {memory: 64GB}}
nodes:
  - {name: "n[00000-65535]", address: "10.0.[0-255].[0-255]", profile: cpu}
software:
  scheduler: {kind: slurm, controller: n00000, partitions: [{name: all, nodes: "n[00000-65535]"}]}
)",
                               "big.yaml");
  ASSERT_TRUE(out.ok()) << out.FormatDiagnostics();
  ASSERT_EQ(out.cluster->nodes.size(), kMaxNodes);
  EXPECT_EQ(out.cluster->nodes.back().name, "n65535");
  EXPECT_EQ(out.cluster->nodes.back().address, "10.0.255.255");
}

TEST(LoaderLimits, OneNodeMoreIsRefused) {
  LoadOutcome out = LoadString(R"(cluster: {name: big}
profiles: {cpu: {memory: 64GB}}
nodes:
  - {name: "n[00000-65535]", address: "10.0.[0-255].[0-255]", profile: cpu}
  - {name: extra, profile: cpu}
)",
                               "big.yaml");
  EXPECT_FALSE(out.ok());
  ASSERT_EQ(out.diags.error_count(), 1u);
  EXPECT_EQ(out.diags.items()[0].pos.line, 5);
  EXPECT_EQ(out.diags.items()[0].message,
            "the inventory declares more than 65536 nodes, the most one inventory may hold; split it");
}

TEST(LoaderLimits, HugeRangeFailsFastWithoutExpanding) {
  const auto start = std::chrono::steady_clock::now();
  LoadOutcome out = LoadString(R"(cluster: {name: t}
profiles: {cpu: {memory: 64GB}}
nodes:
  - {name: "gpu[1-100000000]", profile: cpu}
  - {name: "gpu[1-999999999999999999]x[1-999999999999999999]", profile: cpu}
networks: {eth: {role: compute, kind: ethernet}}
switches: [{name: "sw[1-100000000]", tier: leaf, network: eth, ports: 8, port_rate: 1Gb/s}]
links: [{from: "gpu[1-100000000]:eth0", to: "sw1:[1-100000000]"}]
)",
                               "huge.yaml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(ErrorLines(out), (std::vector<int>{4, 5, 7, 8, 8})) << out.FormatDiagnostics();
  // Building 10^8 names would take minutes and gigabytes; refusing takes nothing.
  EXPECT_LT(seconds, 2.0);
}

TEST(LoaderFile, MissingFile) {
  LoadOutcome out = LoadFile("/nonexistent/gpuforge/inventory.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(out.FormatDiagnostics(),
            "/nonexistent/gpuforge/inventory.yaml: error: cannot read inventory: No such file or directory\n"
            "1 error in /nonexistent/gpuforge/inventory.yaml\n");
}

TEST(LoaderFile, Directory) {
  LoadOutcome out = LoadFile(GPUFORGE_TEST_DATA_DIR);
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(out.FormatDiagnostics(), fmt::format("{0}: error: cannot read inventory: it is a directory, not a regular file or a pipe\n"
                                                 "1 error in {0}\n",
                                                 GPUFORGE_TEST_DATA_DIR));
}

// `lint /dev/zero` grew past 2 GB and a FIFO hung forever (issue #12, item 9). A pipe is read
// since #28 item 24 (`lint -`, `lint <(gen)`), but a FIFO nobody writes to reads as empty at
// once: never waited on.
TEST(LoaderFile, ADeviceIsRefusedAndAFifoWithoutAWriterIsNotWaitedOn) {
  LoadOutcome zero = LoadFile("/dev/zero");
  EXPECT_EQ(zero.FormatDiagnostics(),
            "/dev/zero: error: cannot read inventory: it is a character device, not a regular file or a pipe\n"
            "1 error in /dev/zero\n");
  const std::string fifo = ::testing::TempDir() + "/inventory-fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  LoadOutcome f = LoadFile(fifo);  // returns at once: no writer is waited for
  EXPECT_FALSE(f.ok());
  EXPECT_NE(f.FormatDiagnostics().find("error: the inventory is empty"), std::string::npos) << f.FormatDiagnostics();
  std::remove(fifo.c_str());
}

// #28 item 21: a 50 MB inventory of short scalars took 48 s and ~4 GB. Values are counted by a
// streaming parse before any tree is built, and past kMaxYamlValues the file is refused at the
// value where the count ran over.
TEST(LoaderBudget, ValuesAreCountedAsYamlCppMakesThem) {
  EXPECT_EQ(CountYamlValues("[:,:,:,:]", 100).values, 13u) << "a map, a null key and a null value per ':,'";
  EXPECT_EQ(CountYamlValues("a: [1, 2]\nb: {c: d}\n", 100).values, 9u) << "the root map counts too";
  const ValueCount over = CountYamlValues("a: 1\nb: [1, 2, 3]\n", 4);
  EXPECT_EQ(over.values, 5u);
  EXPECT_EQ(over.line, 2);
  EXPECT_EQ(over.col, 4) << "the fifth value: the list after the root map, a, 1 and b";
  EXPECT_EQ(CountYamlValues("a: [1, 2\n", 100).line, 0) << "a syntax error is Load's to report";
}

TEST(LoaderBudget, AnInventoryOfTooManyValuesIsRefusedBeforeItBecomesATree) {
  std::string text = "version: 1\ncluster: {name: x}\nnodes: [";
  for (std::size_t i = 0; i < kMaxYamlValues; ++i) text += "1,";
  text += "1]\n";
  LoadOutcome out = LoadString(text, "huge.yaml");
  EXPECT_FALSE(out.ok());
  ASSERT_EQ(out.diags.items().size(), 1u) << out.FormatDiagnostics().substr(0, 2000);
  const Diagnostic& d = out.diags.items().front();
  EXPECT_EQ(d.pos.line, 3);
  EXPECT_EQ(d.pos.col, static_cast<int>(std::string("nodes: [").size() + 2 * (kMaxYamlValues - 9) + 1));
  EXPECT_NE(d.message.find("more than 2097152 YAML values"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("hostlist"), std::string::npos) << d.message;
  // A large file under the budget (the example behind 2 MiB of comment) is counted and loads.
  std::string padded = ReadFile(ExamplePath());
  padded += "# " + std::string(2u << 20, 'x') + "\n";
  LoadOutcome fine = LoadString(padded, ExamplePath());
  EXPECT_TRUE(fine.ok()) << fine.FormatDiagnostics().substr(0, 2000);
}

TEST(LoaderFile, FileAndStringAgree) {
  LoadOutcome from_file = LoadFile(ExamplePath());
  LoadOutcome from_string = LoadString(ReadFile(ExamplePath()), ExamplePath());
  ASSERT_TRUE(from_file.ok()) << from_file.FormatDiagnostics();
  ASSERT_TRUE(from_string.ok());
  EXPECT_EQ(from_file.cluster->nodes.size(), from_string.cluster->nodes.size());
  EXPECT_EQ(from_file.cluster->links.size(), from_string.cluster->links.size());
  EXPECT_EQ(from_file.source->text(), from_string.source->text());
}

// Fixed-seed mutations of the example: byte flips (towards YAML's own punctuation, where the
// parser's corner cases are), truncations, duplicated, dropped and swapped lines.
std::string Mutate(std::string text, std::mt19937* rng) {
  static constexpr std::string_view kBytes = " :-[]{},#&*!|>'\"%@`\t\n\\0123456789abxyzGBW/.\x01\xff";
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(*rng); };
  auto lines = [&] {
    std::vector<std::string> out;
    std::string line;
    std::istringstream in(text);
    while (std::getline(in, line)) out.push_back(line);
    return out;
  };
  auto join = [](const std::vector<std::string>& ls) {
    std::string out;
    for (const auto& l : ls) out += l + "\n";
    return out;
  };
  const std::size_t rounds = 1 + pick(3);
  for (std::size_t r = 0; r < rounds && !text.empty(); ++r) {
    switch (pick(6)) {
      case 0:
      case 1:
        text[pick(text.size())] = kBytes[pick(kBytes.size())];
        break;
      case 2:
        text[pick(text.size())] = static_cast<char>(pick(256));
        break;
      case 3:
        text.resize(pick(text.size()));
        break;
      case 4: {
        auto ls = lines();
        std::size_t i = pick(ls.size());
        ls.insert(ls.begin() + static_cast<std::ptrdiff_t>(i), ls[i]);
        text = join(ls);
        break;
      }
      default: {
        auto ls = lines();
        std::size_t i = pick(ls.size()), j = pick(ls.size());
        if (pick(2) == 0) {
          ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          std::swap(ls[i], ls[j]);
        }
        text = join(ls);
        break;
      }
    }
  }
  return text;
}

TEST(LoaderRobustness, MutatedExamplesNeverCrashAndAlwaysSaySomething) {
  const std::string example = ReadFile(ExamplePath());
  ASSERT_FALSE(example.empty());
  std::mt19937 rng(20240601);
  int loaded = 0, refused = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string text = Mutate(example, &rng);
    LoadOutcome out = LoadString(text, "fuzz.yaml");
    ASSERT_EQ(out.ok(), !out.diags.has_errors()) << "case " << i << "\n" << text;
    ASSERT_EQ(out.cluster.has_value(), out.ok());
    const std::string formatted = out.FormatDiagnostics();
    if (out.ok()) {
      ++loaded;
      continue;
    }
    ++refused;
    const int last_line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    bool positioned = false;
    for (const Diagnostic& d : out.diags.items()) {
      ASSERT_LE(d.pos.line, last_line) << "case " << i << ": " << d.message;
      ASSERT_EQ(d.message.find('\n'), std::string::npos) << "case " << i << ": " << d.message;
      positioned = positioned || (d.severity == DiagSeverity::kError && d.pos.line >= 1);
    }
    ASSERT_TRUE(positioned) << "case " << i << ":\n" << formatted << "\n" << text;
    ASSERT_TRUE(formatted.ends_with(" in fuzz.yaml\n")) << formatted;
  }
  // Both outcomes must have been exercised for the run to mean anything.
  EXPECT_GT(loaded, 50);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace gpuforge::inventory
