// NCCL_TOPO_FILE from the node's measured PCI tree: never from the inventory alone, nested as
// measured, and acceptable to NCCL's own XML reader (src/graph/xml.cc: which element may hold
// which, the attributes NCCL writes and reads, the limits of its parser).

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <pugixml.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "facts/pci_tree.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/measured.h"
#include "gpuforge/render/render.h"

namespace gpuforge::render {
namespace {

const std::string kSrc = GPUFORGE_SOURCE_DIR;

Options Opts() {
  Options o;
  o.templates_dir = kSrc + "/templates";
  o.inventory_label = "t.yaml";
  return o;
}

const RenderedFile* FindFile(const Output& out, const std::string& node, const std::string& path) {
  for (const RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

model::PciTree MeasuredHgx() {
  std::ifstream in(std::string(GPUFORGE_TEST_DATA_DIR) + "/facts/pci-tree-hgx-h100.txt");
  std::stringstream s;
  s << in.rdbuf();
  Result<model::PciTree> t = facts::ParsePciTree(s.str());
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : model::PciTree{};
}

// The HGX H100 node of the fixture, as an inventory would describe it.
constexpr const char* kHgx = R"(cluster: {name: t}
networks: {ib: {role: compute, kind: infiniband, rate: 400Gb/s}}
profiles:
  hgx:
    gpus: {model: H100, count: 8, pci: ["0000:18:00.0", "0000:38:00.0", "0000:48:00.0", "0000:58:00.0", "0000:98:00.0", "0000:b8:00.0", "0000:c8:00.0", "0000:d9:00.0"], numa: [0, 0, 0, 0, 1, 1, 1, 1]}
    cpu: {model: "Intel(R) Xeon(R) Platinum 8480+", sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    nics: [{name: "mlx5_[0-7]", kind: infiniband, rate: 400Gb/s, network: ib}]
nodes: [{name: n1, profile: hgx}]
software:
  nccl: {topo_file: /etc/nccl-topology.xml}
)";

model::Cluster Load(const std::string& yaml) {
  auto out = inventory::LoadString(yaml, "t.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return std::move(*out.cluster);
}

// NCCL's reader, src/graph/xml.cc: ncclTopoXmlLoadSystem takes <cpu>; ncclTopoXmlLoadCpu <pci>
// and <nic>; ncclTopoXmlLoadPci <pci>, <gpu>, <nic>, <pcilink>; ncclTopoXmlLoadGpu <nvlink>,
// <c2c>; ncclTopoXmlLoadNic <net>. Attributes: the ones ncclTopoGetXmlFromSys/FromCpu set
// (and topo.cc reads). MAX_STR_LEN 255, MAX_SUBS 128, MAX_ATTR_COUNT 16 (xml.h).
const std::map<std::string, std::set<std::string>> kChildren = {
    {"system", {"cpu"}}, {"cpu", {"pci", "nic"}}, {"pci", {"pci", "gpu", "nic", "pcilink"}},
    {"gpu", {"nvlink", "c2c"}}, {"nic", {"net"}}};
const std::map<std::string, std::set<std::string>> kAttrs = {
    {"system", {"version", "name"}},
    {"cpu", {"numaid", "affinity", "arch", "vendor", "familyid", "modelid", "host_hash"}},
    {"pci", {"busid", "class", "vendor", "device", "subsystem_vendor", "subsystem_device",
             "link_speed", "link_width"}}};

void CheckGrammar(const pugi::xml_node& n, std::vector<std::string>& problems) {
  std::string name = n.name();
  auto attrs = kAttrs.find(name);
  int count = 0;
  for (pugi::xml_attribute a : n.attributes()) {
    ++count;
    if (attrs == kAttrs.end() || !attrs->second.count(a.name())) {
      problems.push_back("<" + name + "> has attribute " + a.name());
    }
    if (std::string(a.value()).size() >= 255) problems.push_back("value too long: " + std::string(a.name()));
  }
  if (count > 16) problems.push_back("<" + name + "> has more than 16 attributes");
  int subs = 0;
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    ++subs;
    auto allowed = kChildren.find(name);
    if (allowed == kChildren.end() || !allowed->second.count(c.name())) {
      problems.push_back("<" + std::string(c.name()) + "> inside <" + name + ">");
    }
    CheckGrammar(c, problems);
  }
  if (subs > 128) problems.push_back("<" + name + "> has more than 128 children");
}

TEST(RenderNcclTopology, ExamplesRenderNoTopologyFile) {
  for (const char* name : {"h200-ib-32gpu.yaml", "a100-roce-k8s.yaml", "h200-single-node.yaml"}) {
    auto in = inventory::LoadFile(kSrc + "/inventories/examples/" + name);
    ASSERT_TRUE(in.ok()) << in.FormatDiagnostics();
    Result<Output> out = Render(*in.cluster, Opts());
    ASSERT_TRUE(out.ok()) << out.error().message;
    for (const RenderedFile& f : out->files) {
      EXPECT_EQ(f.path.find("nccl-topology"), std::string::npos) << name << ": " << f.node << f.path;
      EXPECT_EQ(f.content.find("NCCL_TOPO_FILE"), std::string::npos) << name << ": " << f.path;
    }
  }
}

TEST(RenderNcclTopology, WithoutAMeasuredTreeNoFileAndTheReason) {
  Result<Output> out = Render(Load(kHgx), Opts());
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(FindFile(*out, "n1", "/etc/nccl-topology.xml"), nullptr);
  ASSERT_EQ(out->skipped.size(), 1u);
  EXPECT_EQ(out->skipped[0].reason.rfind("no measured PCI tree for this node", 0), 0u) << out->skipped[0].reason;
  EXPECT_EQ(FindFile(*out, "n1", "/etc/nccl.conf")->content.find("NCCL_TOPO_FILE"), std::string::npos);
}

TEST(RenderNcclTopology, MeasuredHgxTreeNestsGpusAndNicsUnderTheirSwitches) {
  MeasuredPci m;
  m["n1"] = MeasuredHgx();
  Result<Output> out = Render(Load(kHgx), Opts(), Measured{m, {}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->skipped.empty()) << out->skipped[0].reason;
  const RenderedFile* f = FindFile(*out, "n1", "/etc/nccl-topology.xml");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(FindFile(*out, "n1", "/etc/nccl.conf")->content.find("\nNCCL_TOPO_FILE=/etc/nccl-topology.xml\n"),
            std::string::npos);

  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_string(f->content.c_str());
  ASSERT_TRUE(parsed) << parsed.description() << "\n" << f->content;
  pugi::xml_node system = doc.child("system");
  EXPECT_STREQ(system.attribute("version").value(), "1") << "NCCL_TOPO_XML_VERSION (xml.h)";
  std::vector<std::string> problems;
  CheckGrammar(system, problems);
  EXPECT_TRUE(problems.empty()) << problems[0];

  // Two sockets, four switches each, a GPU and its rail NIC under each switch.
  std::vector<pugi::xml_node> cpus;
  for (pugi::xml_node c : system.children("cpu")) cpus.push_back(c);
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_STREQ(cpus[1].attribute("numaid").value(), "1");
  EXPECT_STREQ(cpus[0].attribute("affinity").value(),
               "00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff")
      << "the kernel's cpumap of node 0";
  EXPECT_STREQ(cpus[0].attribute("vendor").value(), "GenuineIntel");
  pugi::xpath_node sw = doc.select_node("/system/cpu[@numaid='1']/pci[@busid='0000:d7:00.0']");
  ASSERT_TRUE(sw) << f->content;
  EXPECT_STREQ(sw.node().attribute("class").value(), "0x060400");
  EXPECT_STREQ(sw.node().attribute("vendor").value(), "0x1000");
  EXPECT_STREQ(sw.node().attribute("link_speed").value(), "32.0 GT/s PCIe");
  EXPECT_STREQ(sw.node().attribute("link_width").value(), "16");
  EXPECT_TRUE(sw.node().select_node("pci[@busid='0000:d9:00.0' and @class='0x030200']"));
  EXPECT_TRUE(sw.node().select_node("pci[@busid='0000:da:00.0' and @class='0x020700']"));
  int switches = 0, gpus = 0, nics = 0;
  for (pugi::xml_node cpu : cpus) {
    for (pugi::xml_node s : cpu.children("pci")) {
      ++switches;
      EXPECT_STREQ(s.attribute("class").value(), "0x060400") << "nothing sits straight under a CPU";
      for (pugi::xml_node d : s.children("pci")) {
        std::string cls = d.attribute("class").value();
        gpus += cls == "0x030200";
        nics += cls == "0x020700";
      }
    }
  }
  EXPECT_EQ(switches, 8);
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(nics, 8);

  // NCCL's tokenizer (xmlGetToken/xmlGetValue) wants name="value" pairs split by one space.
  std::regex tag(R"(^\s*(<!--.*-->|</[a-z]+>|<[a-z]+( [a-z_]+="[^"<>&]*")*/?>)$)");
  std::istringstream lines(f->content);
  for (std::string l; std::getline(lines, l);) {
    EXPECT_TRUE(std::regex_match(l, tag)) << "NCCL's reader would trip on: " << l;
  }
}

TEST(RenderNcclTopology, TreeThatContradictsTheInventoryRendersNoFile) {
  MeasuredPci m;
  m["n1"] = MeasuredHgx();
  m["n1"].endpoints.erase(m["n1"].endpoints.begin());  // GPU 0000:18:00.0 fell off the bus
  Result<Output> out = Render(Load(kHgx), Opts(), Measured{m, {}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(FindFile(*out, "n1", "/etc/nccl-topology.xml"), nullptr);
  ASSERT_EQ(out->skipped.size(), 1u);
  EXPECT_EQ(out->skipped[0].reason,
            "the measured PCI tree contradicts the inventory: the node has 7 GPUs on its PCI tree, "
            "profile 'hgx' has 8; `gpuforge facts --check` reports it, and no topology file is "
            "written until they agree");
  EXPECT_EQ(FindFile(*out, "n1", "/etc/nccl.conf")->content.find("NCCL_TOPO_FILE"), std::string::npos);

  std::string yaml = kHgx;
  yaml.replace(yaml.find("0000:38:00.0"), 12, "0000:3b:00.0");
  m["n1"] = MeasuredHgx();
  out = Render(Load(yaml), Opts(), Measured{m, {}});
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->skipped.size(), 1u);
  EXPECT_NE(out->skipped[0].reason.find("no GPU at bus id 0000:3b:00.0 (inventory) on the node"), std::string::npos);
}

}  // namespace
}  // namespace gpuforge::render
