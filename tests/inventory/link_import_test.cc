// Designed link lists imported from UFM's topology (NDT) CSV against an inventory: real files
// from UFM's own tests (tests/data/fabric/design, sources in README-lldp-design.md) and every
// way a design file can be wrong, with the whole formatted diagnostics pinned.

#include "gpuforge/inventory/link_import.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpuforge/inventory/loader.h"

namespace gpuforge::inventory {
namespace {

constexpr std::string_view kInventory = R"y(version: 1
cluster: {name: t}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  p:
    gpus: {model: H200, count: 2, pci: ["0000:18:00.0", "0000:2a:00.0"]}
    nics:
      - {name: "mlx5_[0-1]", kind: infiniband, rate: 400Gb/s, network: ib, netdev: [ibp11s0f0, ibp21s0f0]}
nodes:
  - {name: "gpu[1-2]", address: "10.0.0.[1-2]", profile: p}
switches:
  - {name: leaf1, tier: leaf, network: ib, ports: 8, port_rate: 400Gb/s}
  - {name: spine1, tier: spine, network: ib, ports: 8, port_rate: 200Gb/s}
)y";

const model::Cluster& Cluster() {
  static const model::Cluster c = [] {
    LoadOutcome out = LoadString(kInventory, "inv.yaml");
    EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
    return *out.cluster;
  }();
  return c;
}

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GPUFORGE_TEST_DATA_DIR) + "/fabric/design/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Links(const ImportOutcome& out) {
  std::string s;
  if (!out.links) return "(none)";
  for (const model::Link& l : *out.links) {
    s += fmt::format("{} -> {} {}G @{}\n", l.a.ToString(), l.b.ToString(),
                     l.rate_bytes_per_s * 8 / 1e9, l.where.ToString());
  }
  return s;
}

// The whole formatted output of an import that must fail.
std::string Diagnostics(std::string_view csv, std::optional<DesignFormat> format = std::nullopt) {
  ImportOutcome out = ImportDesignString(csv, "d.csv", Cluster(), format);
  EXPECT_FALSE(out.links.has_value());
  return out.FormatDiagnostics();
}

TEST(ImportDesign, UfmNdtSwitchToHostFromUfmTests) {
  LoadOutcome inv = LoadString(R"y(version: 1
cluster: {name: sat}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  p:
    gpus: {model: H100, count: 8}
    nics:
      - {name: "mlx5_[0-7]", kind: infiniband, rate: 400Gb/s, network: ib,
         netdev: [ibp11s0f0, ibp21s0f0, ibp75s0f0, ibp85s0f0, ibp139s0f0, ibp149s0f0, ibp203s0f0, ibp213s0f0]}
nodes:
  - {name: "SAT1110927100[37,53]", address: "10.0.0.[37,53]", profile: p}
switches:
  - {name: SAT11-0101-0927-20IB0, tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}
)y",
                               "sat.yaml");
  ASSERT_TRUE(inv.ok()) << inv.FormatDiagnostics();
  ImportOutcome out =
      ImportDesignString(Fixture("ufm-ndt-switch-to-host.ndt"), "topo1.ndt", *inv.cluster);
  ASSERT_TRUE(out.links.has_value()) << out.FormatDiagnostics();
  EXPECT_EQ(out.FormatDiagnostics(), "");
  ASSERT_EQ(out.links->size(), 16u);
  EXPECT_EQ(Links(out).substr(0, 140),
            "SAT111092710053:mlx5_0 -> SAT11-0101-0927-20IB0:1 400G @topo1.ndt:2:1\n"
            "SAT111092710053:mlx5_1 -> SAT11-0101-0927-20IB0:2 400G @topo1.ndt:3:1\n");
  EXPECT_EQ(out.links->back().a.ToString(), "SAT111092710037:mlx5_7");
  EXPECT_EQ(out.links->back().b.ToString(), "SAT11-0101-0927-20IB0:16");
}

TEST(ImportDesign, BriefNdtAsUfmWritesFromIbdiagnetWithCrLf) {
  ImportOutcome out =
      ImportDesignString(Fixture("ufm-ndt-brief-from-ibdiagnet.csv"), "d.csv", Cluster());
  ASSERT_TRUE(out.links.has_value()) << out.FormatDiagnostics();
  EXPECT_EQ(Links(out),
            "gpu1:mlx5_0 -> leaf1:1 400G @d.csv:2:1\n"
            "gpu2:mlx5_0 -> leaf1:2 400G @d.csv:3:1\n"
            "gpu1:mlx5_1 -> leaf1:3 400G @d.csv:4:1\n");
}

TEST(ImportDesign, SpreadsheetExportWithQuotesCaseAndNicOrder) {
  ImportOutcome out = ImportDesignString(Fixture("ufm-ndt-quoted-fields.csv"), "d.csv", Cluster(),
                                         DesignFormat::kUfmCsv);
  ASSERT_TRUE(out.links.has_value()) << out.FormatDiagnostics();
  EXPECT_EQ(Links(out),
            "gpu1:mlx5_0 -> leaf1:1 400G @d.csv:2:13\n"
            "gpu2:mlx5_0 -> leaf1:2 400G @d.csv:3:13\n"
            "leaf1:5 -> spine1:1 200G @d.csv:4:14\n");
}

TEST(ImportDesign, HostPortForms) {
  ImportOutcome out = ImportDesignString(
      "StartDevice,StartPort,EndDevice,EndPort\n"
      "gpu1,mlx5_1,leaf1,1\n"
      "gpu2,gpu2 ibp21s0f0,spine1,Port 8\n"
      "leaf1,Port 4,gpu2,Port 1\n",
      "d.csv", Cluster());
  ASSERT_TRUE(out.links.has_value()) << out.FormatDiagnostics();
  EXPECT_EQ(Links(out),
            "gpu1:mlx5_1 -> leaf1:1 400G @d.csv:2:1\n"
            "gpu2:mlx5_1 -> spine1:8 200G @d.csv:3:1\n"
            "gpu2:mlx5_0 -> leaf1:4 400G @d.csv:4:1\n");
}

TEST(ImportDesign, SixteenThousandLinks) {
  // The scale the inventory's links are built for; the time is measured in bench/, not here.
  std::string inv = R"y(version: 1
cluster: {name: big}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  p:
    gpus: {model: H200, count: 8}
    nics:
      - {name: mlx5_0, kind: infiniband, rate: 400Gb/s, network: ib}
nodes:
  - {name: "gpu[00001-16384]", address: "10.[0-63].[0-255].1", profile: p}
switches:
  - {name: "leaf[001-512]", tier: leaf, network: ib, ports: 32, port_rate: 400Gb/s}
)y";
  LoadOutcome big = LoadString(inv, "big.yaml");
  ASSERT_TRUE(big.ok()) << big.FormatDiagnostics();
  std::string csv = "StartDevice,StartPort,EndDevice,EndPort,LinkType\n";
  for (int i = 0; i < 16384; ++i)
    csv += fmt::format("gpu{:05},mlx5_0,leaf{:03},Port {},Data\n", i + 1, i / 32 + 1, i % 32 + 1);
  ImportOutcome out = ImportDesignString(csv, "big.csv", *big.cluster);
  ASSERT_TRUE(out.links.has_value()) << out.FormatDiagnostics();
  ASSERT_EQ(out.links->size(), 16384u);
  EXPECT_EQ(out.links->back().a.ToString(), "gpu16384:mlx5_0");
  EXPECT_EQ(out.links->back().b.ToString(), "leaf512:32");
}

TEST(ImportDesign, UnknownDevice) {
  EXPECT_EQ(Diagnostics("StartDevice,StartPort,EndDevice,EndPort\ngpu9,mlx5_0,leaf1,Port 1\n"),
            R"d(d.csv:2:1: error: 'gpu9' is neither a node nor a switch; did you mean 'gpu1'?
 2 | gpu9,mlx5_0,leaf1,Port 1
   | ^~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, SwitchPortOutOfRange) {
  EXPECT_EQ(Diagnostics("StartDevice,StartPort,EndDevice,EndPort\ngpu1,mlx5_0,leaf1,Port 9\n"),
            R"d(d.csv:2:19: error: switch leaf1 has ports 1-8; there is no port 'Port 9'
 2 | gpu1,mlx5_0,leaf1,Port 9
   |                   ^~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, BladePortHasNoNumber) {
  EXPECT_EQ(
      Diagnostics(
          "StartDevice,StartPort,EndDevice,EndPort\nleaf1,Port 1,spine1,Blade 16_Port 2/20\n"),
      R"d(d.csv:2:21: error: switch spine1 has ports 1-8; there is no port 'Blade 16_Port 2/20' (UFM's 'Port N'; blade and split ports have no number here)
 2 | leaf1,Port 1,spine1,Blade 16_Port 2/20
   |                     ^~~~~~~~~~~~~~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, NicNotInProfile) {
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice,EndPort\ngpu1,mlx5_3,leaf1,Port 1\n"),
      R"d(d.csv:2:6: error: node gpu1 (profile 'p') has no NIC 'mlx5_3'; did you mean 'mlx5_0'?
 2 | gpu1,mlx5_3,leaf1,Port 1
   |      ^~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, HostPortNumberPastTheNics) {
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice,EndPort\ngpu1,Port 3,leaf1,Port 1\n"),
      R"d(d.csv:2:6: error: node gpu1 (profile 'p') has 2 NICs; a host port number counts NICs in the profile's 'nics' order, so there is no port 'Port 3'
 2 | gpu1,Port 3,leaf1,Port 1
   |      ^~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, HcaOnTheWrongPort) {
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice,EndPort\ngpu1 mlx5_0,Port 2,leaf1,Port 1\n"),
      R"d(d.csv:2:13: error: node gpu1 (profile 'p') has NIC 'mlx5_0' but not on port 2
 2 | gpu1 mlx5_0,Port 2,leaf1,Port 1
   |             ^~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, CabledTwice) {
  EXPECT_EQ(Diagnostics("StartDevice,StartPort,EndDevice,EndPort\n"
                        "gpu1,mlx5_0,leaf1,Port 1\n"
                        "gpu2,mlx5_0,leaf1,Port 1\n"
                        "gpu1 mlx5_0,Port 1,leaf1,Port 2\n"),
            R"d(d.csv:3:13: error: switch port leaf1:1 is cabled twice, first at d.csv:2:13
 3 | gpu2,mlx5_0,leaf1,Port 1
   |             ^~~~~
d.csv:4:1: error: NIC gpu1:mlx5_0 is cabled twice, first at d.csv:2:1
 4 | gpu1 mlx5_0,Port 1,leaf1,Port 2
   | ^~~~~~~~~~~
2 errors in d.csv
)d");
}

TEST(ImportDesign, NicToNicAndLoop) {
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice,EndPort\n"
                  "gpu1,mlx5_0,gpu2,mlx5_0\n"
                  "leaf1,Port 1,leaf1,Port 2\n"),
      R"d(d.csv:2:1: error: link gpu1:mlx5_0 -> gpu2:mlx5_0 joins two NICs; gpuforge models NICs cabled to switch ports
 2 | gpu1,mlx5_0,gpu2,mlx5_0
   | ^~~~
d.csv:3:1: error: link leaf1:1 -> leaf1:2 joins leaf1 to itself
 3 | leaf1,Port 1,leaf1,Port 2
   | ^~~~~
2 errors in d.csv
)d");
}

TEST(ImportDesign, WrongColumnCounts) {
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice,EndPort\n"
                  "gpu1,mlx5_0,leaf1\n"
                  "gpu2,mlx5_0,leaf1,Port 2,Data\n"
                  "gpu2,mlx5_1,leaf1,Port 3,,\n"),
      R"d(d.csv:2:18: error: this row has 3 fields; the header (line 1) puts StartDevice, StartPort, EndDevice and EndPort within the first 4 fields
 2 | gpu1,mlx5_0,leaf1
   |                  ^
d.csv:3:26: error: this row has 5 fields; the header (line 1) names 4
 3 | gpu2,mlx5_0,leaf1,Port 2,Data
   |                          ^~~~
2 errors in d.csv
)d");
}

TEST(ImportDesign, MissingHeader) {
  EXPECT_EQ(
      Diagnostics("gpu1,mlx5_0,leaf1,Port 1\n", DesignFormat::kUfmCsv),
      R"d(d.csv:1:1: error: the header names no StartDevice, StartPort, EndDevice, EndPort columns; a UFM topology CSV's first line names StartDevice,StartPort,EndDevice,EndPort (other columns may follow)
 1 | gpu1,mlx5_0,leaf1,Port 1
   | ^~~~~~~~~~~~~~~~~~~~~~~~
1 error in d.csv
)d");
  EXPECT_EQ(
      Diagnostics("gpu1,mlx5_0,leaf1,Port 1\n"),
      R"d(d.csv:1:1: error: neither a UFM topology CSV (its first line names StartDevice,StartPort,EndDevice,EndPort) nor an ibdiagnet topology file (its first line other than comments is 'TYPE NAME')
 1 | gpu1,mlx5_0,leaf1,Port 1
   | ^
1 error in d.csv
)d");
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice\n"),
      R"d(d.csv:1:1: error: the header names no EndPort column; a UFM topology CSV's first line names StartDevice,StartPort,EndDevice,EndPort (other columns may follow)
 1 | StartDevice,StartPort,EndDevice
   | ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, BadQuoting) {
  EXPECT_EQ(Diagnostics("StartDevice,StartPort,EndDevice,EndPort\r\n"
                        "\"gpu1,mlx5_0,leaf1,Port 1\r\n"
                        "\"gpu1\"x,mlx5_0,leaf1,Port 1\r\n"
                        "gp\"u1,mlx5_0,leaf1,Port 1\r\n"),
            R"d(d.csv:2:1: error: this quote is never closed (a quoted field must end on its line)
 2 | "gpu1,mlx5_0,leaf1,Port 1
   | ^
d.csv:3:7: error: text after a closing quote; a quoted field ends at the quote
 3 | "gpu1"x,mlx5_0,leaf1,Port 1
   |       ^
d.csv:4:3: error: a quote inside an unquoted field; quote the whole field and double the quote
 4 | gp"u1,mlx5_0,leaf1,Port 1
   |   ^
3 errors in d.csv
)d");
}

TEST(ImportDesign, EmptyAndBinary) {
  EXPECT_EQ(
      Diagnostics("", DesignFormat::kUfmCsv),
      R"d(d.csv:1:1: error: the file is empty; a UFM topology CSV starts with a header line naming StartDevice,StartPort,EndDevice,EndPort
 1 | 
   | ^
1 error in d.csv
)d");
  EXPECT_EQ(Diagnostics(std::string_view("Start\0Device", 12)),
            R"d(d.csv:1:1: error: binary data (a NUL byte), not a design file
 1 | Start\x00Device
   | ^
1 error in d.csv
)d");
}

TEST(ImportDesign, HostileNamesAreShownEscaped) {
  EXPECT_EQ(
      Diagnostics("StartDevice,StartPort,EndDevice,EndPort\n\"gpu\x1b[2J1\",mlx5_0,leaf1,Port 1\n"),
      R"d(d.csv:2:1: error: 'gpu\x1b[2J1' is neither a node nor a switch
 2 | "gpu\x1b[2J1",mlx5_0,leaf1,Port 1
   | ^~~~~~~~~~
1 error in d.csv
)d");
}

TEST(ImportDesign, IbdiagnetTopologyInIbdmsOwnShape) {
  // Told from its content; each cable listed from both ends is one cable.
  ImportOutcome out = ImportDesignString(Fixture("ibdm-two-tier.topo"), "d.topo", Cluster());
  ASSERT_TRUE(out.links.has_value()) << out.FormatDiagnostics();
  EXPECT_EQ(out.FormatDiagnostics(), "");
  EXPECT_EQ(Links(out),
            "gpu1:mlx5_0 -> leaf1:1 400G @d.topo:7:3\n"
            "gpu2:mlx5_0 -> leaf1:2 400G @d.topo:8:3\n"
            "gpu1:mlx5_1 -> leaf1:3 400G @d.topo:9:3\n"
            "leaf1:5 -> spine1:1 200G @d.topo:10:3\n"
            "leaf1:6 -> spine1:2 200G @d.topo:11:3\n"
            "gpu2:mlx5_1 -> leaf1:4 400G @d.topo:19:4\n");
}

TEST(ImportDesign, IbdiagnetTopologyMistakes) {
  EXPECT_EQ(
      Diagnostics("MTS3600 leaf1\n"
                  "  P1 -> MT4129 gpu1 P2\n"      // gpu1's first HCA is on port 1
                  "  P2 -> MT4129 gpu1 U3/P1\n"   // it has 2 HCAs
                  "  L1/P3 -> MT4129 gpu2 P1\n"   // a director's port
                  "  P4 -> MT4129 gpu3 P1\n"      // no such node
                  "  P5 -> MTS3600 spine1 P1\n"
                  "  P6 -> MTS3600 spine1 Q1\n"
                  "  P7 => MTS3600 spine1 P3\n"
                  "\n"
                  "MTS3600 spine1\n"
                  "  P1 -> MTS3600 leaf1 P8\n"    // the other end says leaf1 P5
                  "\n"
                  "  P2 -> MTS3600 leaf1 P7\n"    // after the empty line: no system
                  "MTS3600 spine9\n"
                  "  P1 -> MTS3600 leaf1 P1\n"    // under an unknown system: not judged again
                  "leaf1 P1 spine1 P2 x\n",
                  DesignFormat::kIbdiagnetTopo),
      R"d(d.csv:2:21: error: node gpu1 (profile 'p') has NIC 'mlx5_0' but not on port 2
 2 |   P1 -> MT4129 gpu1 P2
   |                     ^~
d.csv:3:21: error: node gpu1 (profile 'p') has 2 NICs; 'U3' counts them in the profile's 'nics' order from 1, so port 'U3/P1' names none
 3 |   P2 -> MT4129 gpu1 U3/P1
   |                     ^~~~~
d.csv:4:3: error: switch leaf1 has ports P1-P8; there is no port 'L1/P3' (a director's line-card port has no number here)
 4 |   L1/P3 -> MT4129 gpu2 P1
   |   ^~~~~
d.csv:5:16: error: 'gpu3' (type MT4129) is neither a node nor a switch; did you mean 'gpu1'?
 5 |   P4 -> MT4129 gpu3 P1
   |                ^~~~
d.csv:7:24: error: switch spine1 has ports P1-P8; there is no port 'Q1'
 7 |   P6 -> MTS3600 spine1 Q1
   |                        ^~
d.csv:8:3: error: not a cable: an indented line reads 'PORT -> TYPE NAME PORT' (the arrow may carry width and speed, '-4x-10G->')
 8 |   P7 => MTS3600 spine1 P3
   |   ^~~~~~~~~~~~~~~~~~~~~~~
d.csv:11:3: error: switch port spine1:1 is cabled twice, first at d.csv:6:24
 11 |   P1 -> MTS3600 leaf1 P8
    |   ^~
d.csv:13:3: error: a cable outside a system: a 'TYPE NAME' line opens a system and an empty line ends it
 13 |   P2 -> MTS3600 leaf1 P7
    |   ^~
d.csv:14:9: error: system 'spine9' (type MTS3600) is neither a node nor a switch; did you mean 'spine1'?
 14 | MTS3600 spine9
    |         ^~~~~~
d.csv:16:1: error: not a line of an ibdiagnet topology file: 'TYPE NAME' opens a system, an indented 'PORT -> TYPE NAME PORT' is a cable, '#' a comment
 16 | leaf1 P1 spine1 P2 x
    | ^~~~~~~~~~~~~~~~~~~~
10 errors in d.csv
)d");
  EXPECT_EQ(
      Diagnostics("# only a comment\n\n", DesignFormat::kIbdiagnetTopo),
      R"d(d.csv:1:1: error: the file holds no system: an ibdiagnet topology file lists 'TYPE NAME' lines, each followed by its indented cables
 1 | # only a comment
   | ^
1 error in d.csv
)d");
  EXPECT_EQ(
      Diagnostics("  P1 -> MT4129 gpu1 P1\n"),
      R"d(d.csv:1:1: error: neither a UFM topology CSV (its first line names StartDevice,StartPort,EndDevice,EndPort) nor an ibdiagnet topology file (its first line other than comments is 'TYPE NAME')
 1 |   P1 -> MT4129 gpu1 P1
   | ^
1 error in d.csv
)d");
}

TEST(ImportDesign, TooManyErrorsStop) {
  std::string csv = "StartDevice,StartPort,EndDevice,EndPort\n";
  for (int i = 0; i < 1000; ++i) csv += fmt::format("x{},mlx5_0,leaf1,Port 1\n", i);
  ImportOutcome out = ImportDesignString(csv, "d.csv", Cluster());
  EXPECT_FALSE(out.links.has_value());
  EXPECT_EQ(out.diags.error_count(), 51u);
  EXPECT_EQ(out.diags.items().back().message, "50 errors; the rest of the file is not read");
}

TEST(ImportDesign, MissingFile) {
  ImportOutcome out = ImportDesignFile("/nonexistent/design.csv", Cluster());
  EXPECT_FALSE(out.links.has_value());
  ASSERT_EQ(out.diags.error_count(), 1u);
  EXPECT_EQ(out.diags.items()[0].pos.file, "/nonexistent/design.csv");
}

}  // namespace
}  // namespace gpuforge::inventory
