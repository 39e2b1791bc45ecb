// `gpuforge cabling` on saved subnet output, no SSH (#31): the real iblinkinfo and ibnetdiscover
// of a public QDR fabric (tests/data/fabric) against designs written to match it, to swap two of
// its cables, and to be wrong; the exit codes, text, JSON and JUnit a user sees.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/run_cli.h"

namespace gpuforge::cli {
namespace {

using test_support::RunCli;
namespace fs = std::filesystem;

std::string Fabric(const std::string& name) { return std::string(GPUFORGE_TEST_DATA_DIR) + "/fabric/" + name; }

// The fabric of tests/data/fabric/iblinkinfo/qdr-1switch-5hca.txt: one 36-port switch (named by
// its GUID through aliases), five hosts. `ports` gives the designed switch port of ip-211,
// ip-212, ip-213, ip-160 and ip-210 in that order; as measured they are 1, 14, 16, 33, 36.
std::string WriteInventory(const std::string& name, const std::vector<int>& ports) {
  const fs::path dir = fs::temp_directory_path() / ("gpuforge-cabling-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << "version: 1\n"
                      "cluster: {name: qdr}\n"
                      "profiles:\n"
                      "  mlx4:\n"
                      "    nics: [{name: mlx4_0, kind: infiniband, rate: 40Gb/s, network: ib}]\n"
                      "  hca1:\n"
                      "    nics: [{name: HCA-1, kind: infiniband, rate: 40Gb/s, network: ib}]\n"
                      "networks:\n"
                      "  ib: {role: compute, kind: infiniband, rate: 40Gb/s, topology: single-switch}\n"
                      "switches:\n"
                      "  - {name: is4, tier: leaf, network: ib, ports: 36, port_rate: 40Gb/s, aliases: [\"0x0002c9020046c588\"]}\n"
                      "links:\n"
                   << "  - {from: \"ip-211:mlx4_0\", to: \"is4:" << ports[0] << "\"}\n"
                   << "  - {from: \"ip-212:mlx4_0\", to: \"is4:" << ports[1] << "\"}\n"
                   << "  - {from: \"ip-213:mlx4_0\", to: \"is4:" << ports[2] << "\"}\n"
                   << "  - {from: \"ip-160:HCA-1\", to: \"is4:" << ports[3] << "\"}\n"
                   << "  - {from: \"ip-210:mlx4_0\", to: \"is4:" << ports[4] << "\"}\n"
                   << "nodes:\n"
                      "  - {name: \"ip-[210-213]\", address: \"198.18.1.[1-4]\", profile: mlx4}\n"
                      "  - {name: ip-160, address: 198.18.1.5, profile: hca1}\n";
  return p.string();
}

TEST(CablingCli, TheRealQdrFabricAsDesignedIsOkInBothViews) {
  const std::string inv = WriteInventory("ok.yaml", {1, 14, 16, 33, 36});
  auto r = RunCli({"cabling", inv, "--no-ssh", "--iblinkinfo", Fabric("iblinkinfo/qdr-1switch-5hca.txt"),
                   "--ibnetdiscover", Fabric("ibnetdiscover/qdr-1switch-5hca.txt"), "--color", "never"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "OK           ip-[210-213]:mlx4_0, ip-160:HCA-1 (5)\n") << r.out;
  EXPECT_EQ(r.err, "cabling: 5 designed, 5 OK\n");
}

TEST(CablingCli, ASwappedPairAndAMiswireFailWithTheirActions) {
  // Designed: ip-212 and ip-213 on each other's ports; ip-210 on port 35 (it is on 36).
  const std::string inv = WriteInventory("bad.yaml", {1, 16, 14, 33, 35});
  auto r = RunCli({"cabling", inv, "--no-ssh", "--iblinkinfo", Fabric("iblinkinfo/qdr-1switch-5hca.txt"),
                   "--color", "never"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISWIRED     ip-210:mlx4_0  want is4:35  got is4:36\n"
                       "             move the cable at ip-210:mlx4_0 from is4:36 to is4:35\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("SWAPPED      ip-212:mlx4_0  want is4:16  got is4:14\n"
                       "             swap the cables in is4:16 and is4:14 (ip-212:mlx4_0 and ip-213:mlx4_0 are on "
                       "each other's port)\n"),
            std::string::npos)
      << r.out;
  // Where it was measured: the iblinkinfo line of ip-210's port.
  EXPECT_NE(r.out.find("measured: " + Fabric("iblinkinfo/qdr-1switch-5hca.txt") + ":47; designed: " + inv + ":17:5\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "cabling: 5 designed, 2 OK, 1 MISWIRED, 2 SWAPPED\n");

  auto j = RunCli({"cabling", inv, "--no-ssh", "--iblinkinfo", Fabric("iblinkinfo/qdr-1switch-5hca.txt"), "--format",
                   "json"});
  EXPECT_EQ(j.code, 1);
  nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["schema"], "gpuforge.cabling/v1");
  EXPECT_EQ(doc["counts"]["SWAPPED"], 2);
  EXPECT_EQ(doc["cables"][1]["expected"], "is4:16");
  EXPECT_EQ(doc["cables"][1]["actual"], "is4:14");
  EXPECT_EQ(doc["cables"][1]["actual_gbps"], 40.0);
  EXPECT_EQ(doc["cables"][1]["swap_with"], "ip-213:mlx4_0");

  auto x = RunCli({"cabling", inv, "--no-ssh", "--iblinkinfo", Fabric("iblinkinfo/qdr-1switch-5hca.txt"), "--format",
                   "junit"});
  EXPECT_NE(x.out.find("tests=\"5\" failures=\"3\""), std::string::npos) << x.out;
  EXPECT_NE(x.out.find("<failure type=\"cabling.swapped\""), std::string::npos) << x.out;
}

TEST(CablingCli, NothingMeasuredIsNoPass) {
  const std::string inv = WriteInventory("none.yaml", {1, 14, 16, 33, 36});
  auto r = RunCli({"cabling", inv, "--no-ssh", "--color", "never"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("UNMEASURED   ip-[210-213]:mlx4_0, ip-160:HCA-1 (5): no view of the InfiniBand subnet"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("gpuforge: error: no designed cable was measured"), std::string::npos) << r.err;
  auto x = RunCli({"cabling", inv, "--no-ssh", "--format", "junit"});
  EXPECT_NE(x.out.find("skipped=\"5\""), std::string::npos) << x.out;
}

// The same fabric designed in ibdiagnet's topology file instead of `links:`: the switch lists its
// hosts, ip-160 lists its own cable too (one cable), ip-212 and ip-213 are on each other's port.
TEST(CablingCli, AnIbdiagnetTopologyFileIsTheDesign) {
  const std::string inv = WriteInventory("topo.yaml", {1, 14, 16, 33, 36});
  const fs::path topo = fs::path(inv).parent_path() / "design.topo";
  std::ofstream(topo) << "# is4 and its five hosts\n"
                         "IS4 is4\n"
                         "\tP1 -4x-10G-> HCA ip-211 P1\n"
                         "\tP14 -4x-10G-> HCA ip-213 P1\n"
                         "\tP16 -4x-10G-> HCA ip-212 P1\n"
                         "\tP33 -4x-10G-> HCA ip-160 P1\n"
                         "\tP36 -4x-10G-> HCA ip-210 P1\n"
                         "\n"
                         "HCA ip-160\n"
                         "\tP1 -> IS4 is4 P33\n";
  auto r = RunCli({"cabling", inv, "--no-ssh", "--design", topo.string(), "--iblinkinfo",
                   Fabric("iblinkinfo/qdr-1switch-5hca.txt"), "--color", "never"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("SWAPPED      ip-212:mlx4_0  want is4:16  got is4:14\n"), std::string::npos) << r.out;
  // Where it was designed: the topology file's line.
  EXPECT_NE(r.out.find("designed: " + topo.string() + ":5:2"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "cabling: 5 designed, 3 OK, 2 SWAPPED\n");
}

TEST(CablingCli, BadInputIsAUsageErrorNamingTheFileAndLine) {
  const std::string inv = WriteInventory("ok2.yaml", {1, 14, 16, 33, 36});
  auto r = RunCli({"cabling", inv, "--no-ssh", "--iblinkinfo", Fabric("iblinkinfo/constructed-truncated.txt")});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--iblinkinfo: " + Fabric("iblinkinfo/constructed-truncated.txt") + ":4: "), std::string::npos)
      << r.err;
  auto missing = RunCli({"cabling", inv, "--no-ssh", "--iblinkinfo", "/nonexistent/links.txt"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/links.txt"), std::string::npos) << missing.err;
  auto from = RunCli({"cabling", inv, "--no-ssh", "--subnet-from", "ip-210"});
  EXPECT_EQ(from.code, 2);
  EXPECT_NE(from.err.find("--subnet-from runs the subnet tools over SSH"), std::string::npos) << from.err;
  auto design = RunCli({"cabling", inv, "--no-ssh", "--design", Fabric("design/ufm-ndt-switch-to-host.ndt")});
  EXPECT_EQ(design.code, 2);
  EXPECT_NE(design.err.find("ufm-ndt-switch-to-host.ndt:"), std::string::npos) << design.err;
}

}  // namespace
}  // namespace gpuforge::cli
