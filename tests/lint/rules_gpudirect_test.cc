// software.gpudirect (#14): a GPUDirect path that cannot work is an error at software.rdma.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/lint/lint.h"

namespace gpuforge::lint {
namespace {

// The 32-GPU example with its software.rdma line replaced by `rdma`.
std::vector<Finding> GpuDirectFindings(const std::string& rdma, const std::string& driver = "") {
  std::ifstream in(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  const std::string line = "  rdma: {kind: doca-ofed, version: \"2.9.1\"}";
  const std::size_t at = text.find(line);
  EXPECT_NE(at, std::string::npos);
  text.replace(at, line.size(), "  rdma: " + rdma);
  if (!driver.empty()) {
    const std::size_t d = text.find("  driver: {");
    text.replace(d, text.find('\n', d) - d, "  driver: " + driver);
  }
  inventory::LoadOutcome loaded = inventory::LoadString(text, "h200.yaml");
  EXPECT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  std::vector<Finding> out;
  if (!loaded.ok()) return out;
  for (const Finding& f : Lint(*loaded.cluster).findings) {
    if (f.rule == "software.gpudirect") out.push_back(f);
  }
  return out;
}

TEST(LintGpuDirect, QuietForTheExamplesStack) {
  EXPECT_TRUE(GpuDirectFindings("{kind: doca-ofed, version: \"2.9.1\"}").empty());
  EXPECT_TRUE(GpuDirectFindings("{kind: rdma-core}").empty()) << "DMA-BUF needs no OFED";
  EXPECT_TRUE(GpuDirectFindings("{kind: doca-ofed, gpudirect: peermem}").empty());
}

TEST(LintGpuDirect, PeermemWithoutThePeerMemoryApiIsAnErrorAtSoftwareRdma) {
  std::vector<Finding> f = GpuDirectFindings("{kind: rdma-core, gpudirect: peermem}");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "GPUDirect RDMA would use nvidia-peermem, which needs the peer-memory API of MLNX_OFED or DOCA OFED, but "
            "software.rdma.kind is rdma-core: set it to doca-ofed, or use DMA-BUF (open kernel modules of branch 515 "
            "or later on Linux 5.12 or later)");
  EXPECT_EQ(f[0].where.file, "h200.yaml");
  EXPECT_EQ(f[0].where.line, 126) << "software.rdma's line";
  EXPECT_GT(f[0].where.col, 0);
}

TEST(LintGpuDirect, PeermemChosenBecauseDmaBufCannotWorkSaysWhy) {
  std::vector<Finding> f =
      GpuDirectFindings("{kind: rdma-core}", "{branch: \"580\", version: \"580.95.05\", kernel_modules: proprietary}");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("nvidia-peermem (the proprietary kernel modules of branch 580 do not export GPU memory as "
                              "DMA-BUF)"),
            std::string::npos)
      << f[0].message;
}

TEST(LintGpuDirect, DmaBufStatedWhereItCannotWorkIsAnError) {
  std::vector<Finding> f = GpuDirectFindings("{kind: doca-ofed, gpudirect: dma-buf}",
                                             "{branch: \"580\", kernel_modules: proprietary}");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "software.rdma.gpudirect is dma-buf, but the proprietary kernel modules of branch 580 do not export GPU "
            "memory as DMA-BUF");
}

}  // namespace
}  // namespace gpuforge::lint
