// The driver-stack keys (#14 OS): bad values are errors naming file, line and column.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "gpuforge/inventory/loader.h"

namespace gpuforge::inventory {
namespace {

// The 32-GPU example with the line that starts with `from` replaced by `to`.
LoadOutcome WithLine(const std::string& from, const std::string& to) {
  std::ifstream in(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  const std::size_t at = text.find("\n" + from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at + 1, text.find('\n', at + 1) - at - 1, to);
  return LoadString(text, "h200.yaml");
}

TEST(LoaderDriverStack, KeysLoad) {
  LoadOutcome o = WithLine("  rdma: {",
                           "  rdma: {kind: doca-ofed, version: \"2.9.1\", gpudirect: peermem}");
  ASSERT_TRUE(o.ok()) << o.FormatDiagnostics();
  EXPECT_EQ(o.cluster->software.gpudirect, "peermem");
  LoadOutcome os = WithLine("  os: {",
                            "  os: {distro: ubuntu, version: \"24.04\", kernel: \"6.11\", memlock_group: hpc}");
  ASSERT_TRUE(os.ok()) << os.FormatDiagnostics();
  EXPECT_EQ(os.cluster->software.os_kernel, "6.11");
  EXPECT_EQ(os.cluster->software.memlock_group, "hpc");
}

TEST(LoaderDriverStack, BadValuesNameTheirPlace) {
  LoadOutcome g = WithLine("  rdma: {", "  rdma: {kind: doca-ofed, gpudirect: dmabuf}");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.FormatDiagnostics().find("h200.yaml:126:"), std::string::npos) << g.FormatDiagnostics();
  EXPECT_NE(g.FormatDiagnostics().find("dma-buf"), std::string::npos) << g.FormatDiagnostics();
  LoadOutcome m = WithLine("  os: {",
                           "  os: {distro: ubuntu, version: \"24.04\", memlock_group: \"a b\"}");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.FormatDiagnostics().find("h200.yaml:115:"), std::string::npos) << m.FormatDiagnostics();
  EXPECT_NE(m.FormatDiagnostics().find("memlock_group"), std::string::npos) << m.FormatDiagnostics();
  LoadOutcome k = WithLine("  driver: {", "  driver: {branch: \"580\", kernel_modules: opne}");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.FormatDiagnostics().find("h200.yaml:116:"), std::string::npos) << k.FormatDiagnostics();
}

}  // namespace
}  // namespace gpuforge::inventory
