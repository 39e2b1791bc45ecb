// bench/gpu/nccl_topo_check.sh in its dry mode: the inventory it writes from the recorded
// nvidia-smi and lscpu output of the H200 machine (tests/data/facts/nvidia-h200-1gpu) loads,
// renders, and the topology file holds that machine's GPU. The NCCL step needs a GPU and is
// not run here.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pugixml.hpp>
#include <sstream>
#include <string>

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

const std::string kScript = std::string(GPUFORGE_SOURCE_DIR) + "/bench/gpu/nccl_topo_check.sh";

struct ScriptRun {
  int rc = -1;
  std::string output;
};

ScriptRun RunScript(const std::string& env, const fs::path& keep) {
  std::string cmd = fmt::format("{} bash '{}' --dry-run --keep '{}' '{}' 2>&1", env, kScript, keep.string(), GPUFORGE_BINARY);
  ScriptRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path Scratch(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / fmt::format("gpuforge-topo-check-{}-{}", tag, ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(RenderNcclTopoCheck, DryRunRendersTheFixtureMachinesGpu) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  fs::path work = Scratch("dry");
  ScriptRun r = RunScript("", work / "out");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("PASS (dry run"), std::string::npos) << r.output;

  std::string inv = Slurp(work / "out/inventory.yaml");
  EXPECT_NE(inv.find("gpus: {model: \"NVIDIA-H200\", count: 1, pci: [\"0000:00:06.0\"], numa: [0], memory: 143771MiB, tdp: 700W}"),
            std::string::npos)
      << inv;
  EXPECT_NE(inv.find("cpu: {model: \"Intel(R) Xeon(R) Processor\", sockets: 1, cores_per_socket: 16, threads_per_core: 1}"),
            std::string::npos)
      << inv;

  std::string xml = Slurp(work / "out/render/gpunode/etc/nccl-topology.xml");
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(xml.c_str())) << xml;
  pugi::xml_node cpu = doc.child("system").child("cpu");
  EXPECT_STREQ(cpu.attribute("numaid").value(), "0");
  EXPECT_STREQ(cpu.attribute("affinity").value(), "0000ffff") << "16 CPUs on one socket";
  EXPECT_STREQ(cpu.attribute("vendor").value(), "GenuineIntel");
  pugi::xml_node gpu = cpu.child("pci");
  // nvidia-smi's 00000000:00:06.0, in the form NCCL compares bus ids in.
  EXPECT_STREQ(gpu.attribute("busid").value(), "0000:00:06.0") << xml;
  EXPECT_STREQ(gpu.attribute("class").value(), "0x030200");
  EXPECT_STREQ(gpu.attribute("link_speed").value(), "32.0 GT/s PCIe") << "Hopper sits on PCIe Gen5";
  EXPECT_FALSE(gpu.next_sibling("pci")) << "the machine has no RDMA NIC";
  fs::remove_all(work);
}

// The NIC half, on a fake sysfs with one InfiniBand HCA: /sys/class/infiniband/<dev>/device is
// a link to the PCI function, which holds numa_node; ports/1 holds link_layer and rate.
TEST(RenderNcclTopoCheck, DryRunTakesRdmaNicsFromSysfs) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  fs::path work = Scratch("nic");
  fs::path sys = work / "sys";
  fs::path fn = sys / "devices/pci0000:00/0000:00:07.0";
  fs::create_directories(fn);
  std::ofstream(fn / "numa_node") << "0\n";
  fs::create_directories(sys / "class/infiniband/mlx5_0/ports/1");
  fs::create_symlink(fn, sys / "class/infiniband/mlx5_0/device");
  std::ofstream(sys / "class/infiniband/mlx5_0/ports/1/link_layer") << "InfiniBand\n";
  std::ofstream(sys / "class/infiniband/mlx5_0/ports/1/rate") << "400 Gb/sec (4X NDR)\n";

  ScriptRun r = RunScript(fmt::format("SYSFS_ROOT='{}'", sys.string()), work / "out");
  ASSERT_EQ(r.rc, 0) << r.output;
  std::string xml = Slurp(work / "out/render/gpunode/etc/nccl-topology.xml");
  EXPECT_NE(xml.find("<pci busid=\"0000:00:06.0\" class=\"0x030200\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<pci busid=\"0000:00:07.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\""), std::string::npos) << xml;
  std::string conf = Slurp(work / "out/render/gpunode/etc/nccl.conf");
  EXPECT_NE(conf.find("\nNCCL_IB_HCA==mlx5_0:1\n"), std::string::npos) << conf;
  fs::remove_all(work);
}

TEST(RenderNcclTopoCheck, WithoutAGpuTheRealRunSkips) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no bash";
  if (std::system("command -v nvidia-smi >/dev/null 2>&1") == 0) GTEST_SKIP() << "this machine has nvidia-smi";
  fs::path work = Scratch("skip");
  std::string cmd = fmt::format("bash '{}' --keep '{}' '{}' 2>&1", kScript, (work / "out").string(), GPUFORGE_BINARY);
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[1024];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 77) << out;
  EXPECT_NE(out.find("SKIP: no nvidia-smi on this machine"), std::string::npos) << out;
  fs::remove_all(work);
}

}  // namespace
}  // namespace gpuforge
