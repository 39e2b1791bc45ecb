// facts --save and render --facts over a real sshd (tests/testbed): the gather script runs on a
// test host, its output lands in DIR/NODE.facts byte for byte, and render reads the measured
// PCI tree back from there. A test host is a clone of this machine, whose sysfs has no NVIDIA
// GPU (the stand-in is nvidia-smi only), so the measured tree contradicts the inventory's one
// H200: render must say so and write no topology file, rather than invent one from the
// inventory. The GPU's device minor, which nvidia-smi does report, gives gres.conf its File=.
// A damaged save is exit 2 naming the file.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/consumers.h"
#include "testbed/fixture.h"

namespace gpuforge::facts {
namespace {

using gpuforge::testing::Ran;
using gpuforge::testing::Sh;
using FactsSavedE2e = testbed::TestbedTest;

TEST_F(FactsSavedE2e, FactsSaveThenRenderFactsUsesWhatTheNodeMeasured) {
  if (!Bring(testbed::WithStandInGpu(1))) return;
  std::string inv = Inventory();
  const std::string nccl = "nccl: {version: \"2.28.9\"}";
  ASSERT_NE(inv.find(nccl), std::string::npos) << inv;
  inv.replace(inv.find(nccl), nccl.size(), "nccl: {version: \"2.28.9\", topo_file: /etc/nccl-topology.xml}");
  const std::string path = WriteFile("saved.yaml", inv);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const std::string saved = dir + "/facts";

  testbed::CommandOutput facts = Gpuforge(fmt::format("facts {} --save {}", path, saved));
  ASSERT_EQ(facts.exit_code, 0) << facts.output;
  EXPECT_NE(facts.output.find("facts: saved 1 node in " + saved), std::string::npos) << facts.output;
  const std::string file = saved + "/tb01.facts";
  ASSERT_TRUE(std::filesystem::is_regular_file(file)) << facts.output;
  std::ifstream fin(file);
  std::stringstream fs;
  fs << fin.rdbuf();
  EXPECT_NE(fs.str().find("@@gpuforge-facts section=pci-tree rc="), std::string::npos);
  EXPECT_TRUE(fs.str().ends_with("@@gpuforge-facts end@@\n")) << "the whole gather output is kept";

  const std::string out = dir + "/rendered";
  Ran render = Sh(fmt::format("{} render {} --out {} --facts {} --color never </dev/null", GPUFORGE_BINARY, path, out, saved));
  ASSERT_EQ(render.code, 0) << render.out;
  EXPECT_NE(render.out.find("tb01:/etc/nccl-topology.xml not rendered: "), std::string::npos) << render.out;
  EXPECT_EQ(render.out.find("no measured PCI tree"), std::string::npos) << "the tree was measured: " << render.out;
  EXPECT_NE(render.out.find("measured PCI tree"), std::string::npos) << render.out;
  EXPECT_FALSE(std::filesystem::exists(out + "/tb01/etc/nccl-topology.xml"));
  std::ifstream conf(out + "/tb01/etc/nccl.conf");
  std::stringstream cs;
  cs << conf.rdbuf();
  EXPECT_EQ(cs.str().find("NCCL_TOPO_FILE"), std::string::npos) << cs.str();

  // plan --offline takes the same flag and shows the same reason.
  Ran plan = Sh(fmt::format("{} plan --offline {} --facts {} --color never </dev/null", GPUFORGE_BINARY, path, saved));
  EXPECT_NE(plan.code, 2) << plan.out;

  // gres.conf's device files from what the node's driver said (nvidia-smi -q -x <minor_number>
  // of the stand-in's one H200), not from the GPU's position; without --facts they are assumed,
  // and the file says so.
  std::string slurm = inv;
  ASSERT_NE(slurm.find("software:\n"), std::string::npos) << slurm;
  slurm.replace(slurm.find("software:\n"), 10, "software:\n  scheduler: {kind: slurm, controller: tb01}\n");
  const std::string slurm_path = WriteFile("saved-slurm.yaml", slurm);
  Ran measured = Sh(fmt::format("{} render {} --out {}/slurm --facts {} --color never </dev/null", GPUFORGE_BINARY,
                                slurm_path, dir, saved));
  ASSERT_EQ(measured.code, 0) << measured.out;
  std::ifstream gres_in(dir + "/slurm/_cluster/etc/slurm/gres.conf");
  std::stringstream gres;
  gres << gres_in.rdbuf();
  EXPECT_NE(gres.str().find("# Measured: 1 GPU in PCI bus order"), std::string::npos) << gres.str();
  EXPECT_NE(gres.str().find("\nNodeName=tb01 Name=gpu Type=h200 File=/dev/nvidia0"), std::string::npos) << gres.str();
  EXPECT_EQ(gres.str().find("Not measured"), std::string::npos) << gres.str();
  Ran assumed = Sh(fmt::format("{} render {} --out {}/assumed --color never </dev/null", GPUFORGE_BINARY, slurm_path, dir));
  ASSERT_EQ(assumed.code, 0) << assumed.out;
  std::ifstream assumed_in(dir + "/assumed/_cluster/etc/slurm/gres.conf");
  std::stringstream assumed_gres;
  assumed_gres << assumed_in.rdbuf();
  EXPECT_NE(assumed_gres.str().find("# Not measured: File= assumes"), std::string::npos) << assumed_gres.str();

  std::ofstream(file, std::ios::trunc) << "@@gpuforge-facts begin format=1@@\nhalf a file";
  Ran damaged = Sh(fmt::format("{} render {} --out {} --facts {} --color never </dev/null", GPUFORGE_BINARY, path, out, saved));
  EXPECT_EQ(damaged.code, 2) << damaged.out;
  EXPECT_NE(damaged.out.find(file), std::string::npos) << damaged.out;
}

}  // namespace
}  // namespace gpuforge::facts
