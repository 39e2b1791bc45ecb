// nvidia-smi topo -m from other machines (tests/data/facts/topo-public, sources in the README
// there), and the cgroup-limited node whose CPU Affinity cell is empty.

#include <gtest/gtest.h>

#include "facts/fixtures.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {
namespace {

using testing::ReadFixture;

const TopoRow& Row(const TopoMatrix& m, std::string_view dev) {
  for (const TopoRow& r : m.rows) {
    if (r.device == dev) return r;
  }
  static const TopoRow none;
  ADD_FAILURE() << "no row " << dev;
  return none;
}

// Before the fix the empty cell was dropped and NUMA "0" landed in CPU Affinity.
TEST(ParseTopoPublic, CgroupEmptyCpuAffinityKeepsNumaInPlace) {
  Result<TopoMatrix> r = ParseTopo(ReadFixture("topo-public/cgroup-empty-cpu-affinity.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Row(*r, "GPU0").cpu_affinity, "");
  EXPECT_EQ(Row(*r, "GPU0").numa_affinity, "0");
  EXPECT_EQ(Row(*r, "GPU0").gpu_numa_id, "N/A");
  EXPECT_EQ(Row(*r, "GPU1").numa_affinity, "0");
  EXPECT_EQ(Row(*r, "NIC0").numa_affinity, "");
  EXPECT_EQ(r->Link("GPU0", "NIC0"), "PIX");
  ASSERT_EQ(r->nic_legend.size(), 1u);
  EXPECT_EQ(r->nic_legend[0].second, "mlx5_0");
}

TEST(ParseTopoPublic, TwoPcieGpus) {
  Result<TopoMatrix> r = ParseTopo(ReadFixture("topo-public/pcie-2gpu-5090.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->devices, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_EQ(r->Link("GPU0", "GPU1"), "PHB");
  EXPECT_EQ(Row(*r, "GPU1").cpu_affinity, "0-63");
  EXPECT_EQ(Row(*r, "GPU1").numa_affinity, "0");
  EXPECT_EQ(Row(*r, "GPU1").gpu_numa_id, "N/A");
}

// NIC rows that end right after their last link cell, without padding.
TEST(ParseTopoPublic, EightPcieGpusTwoNicsUnpaddedNicRows) {
  Result<TopoMatrix> r = ParseTopo(ReadFixture("topo-public/pcie-8gpu-4090-2nic.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 10u);
  EXPECT_EQ(r->Link("GPU6", "NIC1"), "PHB");
  EXPECT_EQ(r->Link("NIC1", "NIC0"), "PIX");
  EXPECT_EQ(Row(*r, "GPU4").cpu_affinity, "56-111,168-223");
  EXPECT_EQ(Row(*r, "GPU4").numa_affinity, "1");
  EXPECT_EQ(Row(*r, "NIC1").cpu_affinity, "");
}

// A copy whose tabs became spaces, as pasted into an issue.
TEST(ParseTopoPublic, DgxA100PastedWithSpaces) {
  Result<TopoMatrix> r = ParseTopo(ReadFixture("topo-public/dgx-a100-spaces.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 20u);
  EXPECT_EQ(r->Link("GPU0", "GPU7"), "NV12");
  EXPECT_EQ(r->Link("GPU4", "NIC6"), "PXB");
  EXPECT_EQ(r->Link("GPU4", "NIC0"), "SYS");
  EXPECT_EQ(Row(*r, "GPU0").cpu_affinity, "48-63,176-191");
  EXPECT_EQ(Row(*r, "GPU0").numa_affinity, "3");
  EXPECT_EQ(Row(*r, "GPU0").gpu_numa_id, "N/A");
  EXPECT_EQ(Row(*r, "GPU6").numa_affinity, "5");
  EXPECT_EQ(Row(*r, "NIC3").numa_affinity, "");
  ASSERT_EQ(r->nic_legend.size(), 12u);
  EXPECT_EQ(r->nic_legend[11].second, "mlx5_11");
}

TEST(ParseTopoPublic, HostileAffinityCell) {
  EXPECT_EQ(ParseTopo("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-3 $(reboot)\t0\n").error().message,
            "line 2: GPU0 CPU Affinity: expected a list or a number, got '0-3 $(reboot)'");
}

}  // namespace
}  // namespace gpuforge::facts
