#include "gpuforge/facts/parse.h"

#include <gtest/gtest.h>

#include "facts/fixtures.h"

namespace gpuforge::facts {
namespace {

using testing::kH200;
using testing::ReadFixture;

std::string H200(std::string_view file) {
  return ReadFixture(std::string(kH200) + std::string(file));
}

TEST(ParseOsRelease, UbuntuWithQuotes) {
  Result<OsRelease> r = ParseOsRelease(
      "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\n# comment\n"
      "ID=ubuntu\nID_LIKE=debian\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->id, "ubuntu");
  EXPECT_EQ(r->version_id, "24.04");
  EXPECT_EQ(r->pretty_name, "Ubuntu 24.04.1 LTS");
}

TEST(ParseOsRelease, IdDefaultsToLinuxAndGarbageIsRefused) {
  EXPECT_EQ(ParseOsRelease("VERSION_ID=9\n")->id, "linux");
  EXPECT_EQ(ParseOsRelease("ID=rhel\nthis is not os-release\n").error().message,
            "line 2: expected KEY=value, got 'this is not os-release'");
  EXPECT_EQ(ParseOsRelease("ID=\"rhel\n").error().message, "line 1: ID: badly quoted value");
}

TEST(ParseUname, OneRelease) {
  EXPECT_EQ(*ParseUname("6.8.0-45-generic\n"), "6.8.0-45-generic");
  EXPECT_EQ(ParseUname("a\nb\n").error().message, "expected one line (the kernel release), got 2");
  EXPECT_EQ(ParseUname("").error().message, "expected one line (the kernel release), got 0");
}

TEST(ParseLscpu, RealH200Host) {
  Result<CpuInfo> r = ParseLscpu(H200("lscpu.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(r->cpus, 16);
  EXPECT_EQ(r->online_cpus, "0-15");
  EXPECT_EQ(r->sockets, 1);
  EXPECT_EQ(r->cores_per_socket, 16);
  EXPECT_EQ(r->threads_per_core, 1);
  EXPECT_EQ(r->numa_nodes, 1);
}

TEST(ParseLscpu, DashIsUnknownAndBadCountsAreErrors) {
  Result<CpuInfo> arm = ParseLscpu("CPU(s): 144\nModel name: Neoverse-V2\nSocket(s): -\n");
  ASSERT_TRUE(arm.ok()) << arm.error().message;
  EXPECT_FALSE(arm->sockets.has_value());
  EXPECT_EQ(arm->cpus, 144);
  EXPECT_EQ(ParseLscpu("CPU(s): 16\nSocket(s): two\n").error().message,
            "line 2: Socket(s): expected a count, got 'two'");
  EXPECT_EQ(ParseLscpu("Architecture: x86_64\n").error().message,
            "no 'CPU(s):' line; this is not lscpu output");
}

TEST(ParseMeminfo, MemTotalInBytes) {
  EXPECT_EQ(*ParseMeminfo("MemTotal:       65842852 kB\nMemFree:  1 kB\n"), 65842852ull * 1024);
  EXPECT_EQ(ParseMeminfo("MemFree: 1 kB\n").error().message, "no 'MemTotal:' line");
  EXPECT_EQ(ParseMeminfo("MemTotal: lots\n").error().message,
            "line 1: MemTotal: expected '<n> kB', got 'lots'");
}

TEST(ParseNumaSysfs, TwoNodes) {
  Result<std::vector<NumaNode>> r = ParseNumaSysfs(
      "node1 cpulist 56-111,168-223\nnode0 cpulist 0-55,112-167\n"
      "node0 meminfo Node 0 MemTotal:       1056690816 kB\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].id, 0);
  EXPECT_EQ((*r)[0].cpulist, "0-55,112-167");
  EXPECT_EQ((*r)[0].memory_bytes, 1056690816ull * 1024);
  EXPECT_EQ((*r)[1].cpulist, "56-111,168-223");
  EXPECT_FALSE((*r)[1].memory_bytes.has_value());
  EXPECT_EQ(ParseNumaSysfs("node0 cpulist 0-3; rm -rf /\n").error().message,
            "line 1: node0 cpulist: expected a CPU list, got '0-3; rm -rf /'");
}

TEST(ParsePciSysfs, GpusAndRdmaNicsKeptOthersDropped) {
  Result<std::vector<PciDevice>> r = ParsePciSysfs(ReadFixture("pci-sysfs.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);  // the host bridge 0000:00:00.0 is neither GPU nor NIC
  const PciDevice& eno = (*r)[0];
  EXPECT_EQ(eno.bdf, "0000:01:00.0");
  EXPECT_EQ(eno.kind, PciKind::kNic);
  EXPECT_FALSE(eno.numa_node.has_value());
  const PciDevice& nic = (*r)[1];
  EXPECT_EQ(nic.bdf, "0000:17:00.0");
  EXPECT_EQ(nic.vendor, 0x15b3u);
  EXPECT_EQ(nic.class_code, 0x020700u);
  EXPECT_EQ(nic.link_width, 8);
  EXPECT_EQ(nic.max_link_width, 16);
  EXPECT_EQ(nic.rdma_devices, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(nic.netdevs, std::vector<std::string>{"ibp23s0"});
  const PciDevice& slow = (*r)[3];
  EXPECT_EQ(slow.bdf, "0000:db:00.0");
  EXPECT_EQ(slow.kind, PciKind::kGpu);
  EXPECT_EQ(slow.device, 0x2330u);
  EXPECT_EQ(slow.numa_node, 1);
  EXPECT_DOUBLE_EQ(*slow.link_speed_gts, 16.0);
  EXPECT_DOUBLE_EQ(*slow.max_link_speed_gts, 32.0);
  EXPECT_EQ(PcieGeneration(*slow.link_speed_gts), 4);
}

TEST(ParsePciSysfs, Errors) {
  EXPECT_EQ(ParsePciSysfs("0000:17:00.0 class 0x020000\n").error().message,
            "line 1: 0000:17:00.0: no vendor line (truncated output?)");
  EXPECT_EQ(ParsePciSysfs("0000:17:00.0 current_link_speed fast\n").error().message,
            "line 1: 0000:17:00.0 current_link_speed: expected '<n> GT/s', got 'fast'");
  EXPECT_EQ(ParsePciSysfs("17:00.0 class 0x020000\n").error().message,
            "line 1: expected '<bus id> <attribute> <value>', got '17:00.0 class 0x020000'");
  Result<std::vector<PciDevice>> unknown = ParsePciSysfs(
      "0000:17:00.0 class 0x020000\n0000:17:00.0 vendor 0x8086\n"
      "0000:17:00.0 current_link_speed Unknown\n0000:17:00.0 numa_node -1\n");
  ASSERT_TRUE(unknown.ok()) << unknown.error().message;
  EXPECT_FALSE((*unknown)[0].link_speed_gts.has_value());
}

TEST(ParseDriverVersion, OpenAndProprietary) {
  Result<DriverInfo> open = ParseDriverVersion(H200("driver-version.txt"));
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_EQ(open->version, "580.159.04");
  EXPECT_TRUE(open->open_kernel_module);
  Result<DriverInfo> old = ParseDriverVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->version, "535.104.05");
  EXPECT_FALSE(old->open_kernel_module);
  EXPECT_EQ(ParseDriverVersion("hello\n").error().message,
            "no 'NVRM version: ... Kernel Module <version>' line");
}

TEST(ParseQueryGpuCsv, RealH200WithRenamedHeader) {
  Result<std::vector<Gpu>> r = ParseQueryGpuCsv(H200("query-gpu.csv"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const Gpu& g = (*r)[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(g.pci_bus_id, "0000:00:06.0");
  EXPECT_EQ(g.driver_version, "580.159.04");
  EXPECT_EQ(g.vbios_version, "96.00.A5.00.1A");
  EXPECT_EQ(g.memory_total_bytes, 143771ull << 20);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 100.31);
  EXPECT_EQ(g.temperature_c, 36);
  EXPECT_EQ(g.clock_event_reasons, 1u);
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(g.ecc_uncorrected_volatile, 0u);
  EXPECT_EQ(g.pcie_gen, 5);
  EXPECT_EQ(g.pcie_gen_max, 5);
  EXPECT_EQ(g.pcie_width, 16);
  EXPECT_EQ(g.pcie_width_max, 16);
  EXPECT_EQ(g.max_sm_clock_mhz, 1980);
  EXPECT_EQ(g.persistence_mode, true);
}

TEST(ParseQueryGpuCsv, EightGpusWithOldHeaderAndUnavailableCells) {
  Result<std::vector<Gpu>> r = ParseQueryGpuCsv(ReadFixture("query-gpu-8-h100.csv"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 8u);
  EXPECT_EQ((*r)[0].clock_event_reasons, 1u);      // clocks_throttle_reasons.active, by name
  EXPECT_FALSE((*r)[2].power_draw_w.has_value());  // [Not Supported]
  EXPECT_DOUBLE_EQ(*(*r)[1].power_draw_w, 71.25);
  EXPECT_FALSE((*r)[3].ecc_uncorrected_volatile.has_value());  // N/A
  EXPECT_FALSE((*r)[4].temperature_c.has_value());             // [N/A]
  EXPECT_EQ((*r)[5].persistence_mode, false);
  EXPECT_EQ((*r)[6].ecc_uncorrected_volatile, 2u);
  EXPECT_EQ((*r)[7].pcie_gen, 4);
  EXPECT_EQ((*r)[7].pci_bus_id, "0000:db:00.0");
  EXPECT_EQ((*r)[7].memory_total_bytes, 81559ull << 20);
}

// Error cells as nvidia-smi prints them in --query-gpu CSV: "[Unknown Error]" for a field of a
// working card (github.com/Quake4/MindMiner/issues/627: "GeForce RTX 2080 Ti, 100, 37, 56,
// 228.82, 210.00, 56, 1560, 6800, [Unknown Error]"; github.com/enkore/i3pystatus/pull/850),
// "[GPU requires reset]" and "[GPU is lost]" being nvmlErrorString() of
// NVML_ERROR_RESET_REQUIRED and NVML_ERROR_GPU_IS_LOST in brackets the same way.
TEST(ParseQueryGpuCsv, ErrorCellsAreFailuresOfThatGpuNotAbsentValues) {
  Result<std::vector<Gpu>> r = ParseQueryGpuCsv(ReadFixture("query-gpu-errors.csv"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_TRUE((*r)[0].errors.empty());
  EXPECT_EQ((*r)[0].pci_device_id, 0x20b0);
  ASSERT_EQ((*r)[1].errors.size(), 8u);
  EXPECT_EQ((*r)[1].errors[0].field, "memory.total");
  EXPECT_EQ((*r)[1].errors[0].cell, "[GPU requires reset]");
  EXPECT_EQ((*r)[1].errors.back().field, "clocks_event_reasons.active");
  EXPECT_FALSE((*r)[1].memory_total_bytes.has_value());
  // A name cell that is an error is that GPU's failure, not a parse error of the node.
  EXPECT_EQ((*r)[2].name, "");
  ASSERT_EQ((*r)[2].errors.size(), 5u);
  EXPECT_EQ((*r)[2].errors[0].field, "name");
  EXPECT_EQ((*r)[2].errors[0].cell, "[Unknown Error]");
  EXPECT_EQ((*r)[2].errors[1].field, "vbios_version");
  EXPECT_EQ((*r)[2].pci_bus_id, "0000:47:00.0");
  // Not permitted and N/A say nothing about the GPU.
  EXPECT_TRUE((*r)[3].errors.empty());
  EXPECT_FALSE((*r)[3].power_limit_w.has_value());
  EXPECT_EQ(ParseQueryGpuCsv("index, name, pci.bus_id, pci.device_id\n0, A, 00000000:00:06.0, 2335\n")
                .error()
                .message,
            "line 2: pci.device_id: expected a hex PCI id like 0x233510DE, got '2335'");
}

TEST(ParseQueryGpuCsv, ColumnsAreFoundByNameInAnyOrder) {
  Result<std::vector<Gpu>> r = ParseQueryGpuCsv(
      "pci.bus_id, persistence_mode, name, index\n00000000:1B:00.0, Disabled, NVIDIA "
      "A100-SXM4-80GB, 3\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].index, 3);
  EXPECT_EQ((*r)[0].pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ((*r)[0].persistence_mode, false);
  EXPECT_FALSE((*r)[0].memory_total_bytes.has_value());
}

TEST(ParseQueryGpuCsv, TruncatedGarbageAndBadCellsArePreciseErrors) {
  EXPECT_EQ(ParseQueryGpuCsv(ReadFixture("query-gpu-truncated.csv")).error().message,
            "line 3: expected 19 fields, got 3");
  // Missing or N/A names are still output this parser does not understand.
  EXPECT_EQ(ParseQueryGpuCsv("index, name, pci.bus_id\n0, N/A, 00000000:00:06.0\n").error().message,
            "line 2: name: expected a GPU name, got 'N/A'");
  EXPECT_EQ(ParseQueryGpuCsv(ReadFixture("garbage.bin")).error().message,
            "line 1: binary data (NUL byte), not command output");
  EXPECT_EQ(ParseQueryGpuCsv("").error().message, "empty output, expected a CSV header");
  EXPECT_EQ(ParseQueryGpuCsv("No devices were found\n").error().message,
            "line 1: expected a CSV header with index, got 'No devices were found'");
  EXPECT_EQ(ParseQueryGpuCsv("index, name, pci.bus_id, memory.total [MiB]\n"
                             "0, NVIDIA H200, 00000000:00:06.0, 12 GiB\n")
                .error()
                .message,
            "line 2: memory.total: expected a number of MiB, got '12 GiB'");
  EXPECT_EQ(ParseQueryGpuCsv("index, name, pci.bus_id\n0, A, 00000000:00:06.0\n0, B, "
                             "00000000:00:07.0\n")
                .error()
                .message,
            "line 3: GPU index 0 listed twice");
  EXPECT_EQ(ParseQueryGpuCsv("index, name, pci.bus_id\n-1, A, 00000000:00:06.0\n").error().message,
            "line 2: index: expected a GPU index, got '-1'");
}

TEST(ParseSmiXml, RealH200) {
  Result<SmiLog> r = ParseSmiXml(H200("nvidia-smi-q.xml"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->driver_version, "580.159.04");
  EXPECT_EQ(r->cuda_version, "13.0");
  ASSERT_EQ(r->gpus.size(), 1u);
  const GpuDetail& d = r->gpus[0];
  EXPECT_EQ(d.pci_bus_id, "0000:00:06.0");
  EXPECT_EQ(d.product_name, "NVIDIA H200");
  EXPECT_EQ(d.architecture, "Hopper");
  EXPECT_EQ(d.performance_state, "P0");
  EXPECT_EQ(d.mig_enabled, false);
  EXPECT_EQ(d.module_id, 4);
  EXPECT_EQ(d.minor_number, 0);
  EXPECT_EQ(d.inforom_image, "G520.0282.02.02");
  EXPECT_EQ(d.gsp_firmware, "580.159.04");
  EXPECT_EQ(d.remapped_rows_pending, false);
  EXPECT_EQ(d.remapped_rows_failure, false);
  EXPECT_EQ(d.sram_uncorrectable_aggregate, 0u);
  EXPECT_EQ(d.dram_correctable_aggregate, 0u);
  EXPECT_EQ(d.active_clock_event_reasons, std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(d.fabric_state, "");  // N/A on a machine without NVSwitch
  EXPECT_DOUBLE_EQ(*d.max_power_limit_w, 700.0);
}

TEST(ParseSmiXml, TruncatedAndForeignXml) {
  std::string xml = H200("nvidia-smi-q.xml");
  EXPECT_EQ(ParseSmiXml(xml.substr(0, 500)).error().message,
            "line 12: XML: Start-end tags mismatch");
  EXPECT_EQ(ParseSmiXml("<html><body/></html>").error().message,
            "XML: no <nvidia_smi_log> root element");
  EXPECT_EQ(ParseSmiXml("<nvidia_smi_log><gpu id=\"x\"/></nvidia_smi_log>").error().message,
            "XML: <gpu id='x'>: expected a PCI bus id");
}

TEST(ParseTopo, RealH200WithAnsiEscapes) {
  Result<TopoMatrix> r = ParseTopo(H200("topo-m.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->devices, std::vector<std::string>{"GPU0"});
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].links, std::vector<std::string>{"X"});
  EXPECT_EQ(r->rows[0].cpu_affinity, "0-15");
  EXPECT_EQ(r->rows[0].numa_affinity, "0");
  EXPECT_EQ(r->rows[0].gpu_numa_id, "N/A");
  EXPECT_TRUE(r->nic_legend.empty());
}

TEST(ParseTopo, EightGpusNvLinkAndEightNics) {
  Result<TopoMatrix> r = ParseTopo(ReadFixture("topo-8gpu-nv18.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 16u);
  EXPECT_EQ(r->devices[8], "NIC0");
  ASSERT_EQ(r->rows.size(), 16u);
  EXPECT_EQ(r->Link("GPU0", "GPU7"), "NV18");
  EXPECT_EQ(NvLinkCount(r->Link("GPU3", "GPU4")), 18);
  EXPECT_EQ(r->Link("GPU2", "NIC2"), "PIX");
  EXPECT_EQ(r->Link("GPU1", "NIC3"), "NODE");
  EXPECT_EQ(r->Link("NIC0", "GPU5"), "SYS");
  EXPECT_EQ(r->Link("NIC5", "NIC5"), "X");
  EXPECT_EQ(r->rows[4].cpu_affinity, "56-111,168-223");
  EXPECT_EQ(r->rows[4].numa_affinity, "1");
  EXPECT_EQ(r->rows[4].gpu_numa_id, "N/A");
  EXPECT_EQ(r->rows[9].cpu_affinity, "");  // NIC rows have no affinity
  ASSERT_EQ(r->nic_legend.size(), 8u);
  EXPECT_EQ(r->nic_legend[7], (std::pair<std::string, std::string>{"NIC7", "mlx5_7"}));
}

TEST(ParseTopo, TruncatedAndGarbage) {
  std::string full = ReadFixture("topo-8gpu-nv18.txt");
  std::string cut = full.substr(0, full.find("\nGPU5\t"));
  EXPECT_EQ(ParseTopo(cut).error().message, "no row for GPU5 (truncated output?)");
  std::string short_row = full.substr(0, full.find("\nGPU1\t")) + "\nGPU1\tNV18\n";
  EXPECT_EQ(ParseTopo(short_row).error().message,
            "line 3: GPU1: expected 16 link cells and up to 3 affinity cells, got 1 cells");
  EXPECT_EQ(ParseTopo(ReadFixture("garbage.bin")).error().message,
            "line 1: binary data (NUL byte), not command output");
  EXPECT_EQ(ParseTopo("\tGPU0\nGPU0\tNV4\n").error().message,
            "line 2: GPU0 to GPU0: expected X on the diagonal");
  EXPECT_EQ(ParseTopo("\tGPU0\nGPU0\t$(reboot)\n").error().message,
            "line 2: GPU0 to GPU0: expected a link type, got '$(reboot)'");
}

TEST(ParseInfinibandSysfs, PortsStatesWidths) {
  Result<std::vector<IbDevice>> r = ParseInfinibandSysfs(ReadFixture("infiniband-sysfs.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 6u);
  const IbDevice& ok = (*r)[0];
  EXPECT_EQ(ok.name, "mlx5_0");
  EXPECT_EQ(ok.fw_version, "28.39.1002");
  EXPECT_EQ(ok.netdevs, std::vector<std::string>{"ibp24s0"});
  ASSERT_EQ(ok.ports.size(), 1u);
  EXPECT_EQ(ok.ports[0].state, "ACTIVE");
  EXPECT_EQ(ok.ports[0].phys_state, "LinkUp");
  EXPECT_DOUBLE_EQ(*ok.ports[0].rate_gbps, 400);
  EXPECT_EQ(ok.ports[0].width, 4);
  EXPECT_EQ(ok.ports[0].speed, "NDR");
  EXPECT_EQ(ok.ports[0].link_layer, "InfiniBand");
  EXPECT_EQ((*r)[1].ports[0].phys_state, "Polling");
  EXPECT_EQ((*r)[1].ports[0].state, "DOWN");
  EXPECT_EQ((*r)[2].ports[0].width, 2);
  EXPECT_EQ((*r)[3].ports[0].speed, "HDR");
  EXPECT_EQ((*r)[5].name, "mlx5_bond_0");
  EXPECT_EQ((*r)[5].ports[0].link_layer, "Ethernet");
}

TEST(ParseInfinibandSysfs, Errors) {
  EXPECT_EQ(ParseInfinibandSysfs("mlx5_0 1 rate fast\n").error().message,
            "line 1: mlx5_0 port 1 rate: expected '<n> Gb/sec (<w>X <speed>)', got 'fast'");
  EXPECT_EQ(ParseInfinibandSysfs("mlx5_0 999 state 4: ACTIVE\n").error().message,
            "line 1: expected '<device> <port|-> <attribute> <value>', got 'mlx5_0 999 state 4: "
            "ACTIVE'");
  Result<std::vector<IbDevice>> no_width = ParseInfinibandSysfs("mlx5_0 1 rate 10 Gb/sec\n");
  ASSERT_TRUE(no_width.ok());
  EXPECT_FALSE((*no_width)[0].ports[0].width.has_value());
}

TEST(ParseVersions, FirstSourceWins) {
  Result<Versions> r = ParseVersions(
      "nvcc Cuda compilation tools, release 12.4, V12.4.131\ncuda_json 12.4.1\n"
      "nccl_dpkg 2.21.5-1+cuda12.4\nnccl_lib libnccl.so.2.21.5\nrdma_dpkg 50.0-2ubuntu0.2\n"
      "ofed MLNX_OFED_LINUX-23.10-1.1.9.0:\nslurmd slurm 23.11.4\nfuture_tool 1.0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->cuda, "12.4.131");
  EXPECT_EQ(r->nccl, "2.21.5-1+cuda12.4");
  EXPECT_EQ(r->rdma_core, "50.0-2ubuntu0.2");
  EXPECT_EQ(r->ofed, "MLNX_OFED_LINUX-23.10-1.1.9.0");
  EXPECT_EQ(r->slurm, "23.11.4");
  EXPECT_EQ(ParseVersions("nccl_lib /usr/lib/libnccl.so.2.19.3\nslurmd slurm-wlm 22.05.8\n")->nccl,
            "2.19.3");
  EXPECT_EQ(ParseVersions("nccl_dpkg 2.21 `id`\n").error().message,
            "line 1: nccl_dpkg: cannot read a version from '2.21 `id`'");
}

TEST(ParseModules, NamesSorted) {
  Result<std::vector<std::string>> r = ParseModules(
      "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"
      "nvidia_uvm 4956160 0 - Live 0x0000000000000000 (OE)\nnvidia 54308864 2 nvidia_peermem,"
      "nvidia_uvm, Live 0x0000000000000000 (OE)\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::vector<std::string>{"nvidia", "nvidia_peermem", "nvidia_uvm"}));
  EXPECT_EQ(ParseModules("nvidia\x01 1 0\n").error().message,
            "line 1: expected a module name, got 'nvidia\\x01'");
}

TEST(ParseServices, States) {
  Result<std::vector<Service>> r = ParseServices(
      "nvidia-persistenced loaded active\nnvidia-fabricmanager not-found inactive\n"
      "slurmd loaded failed\nfoo\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].state, ServiceState::kActive);
  EXPECT_EQ((*r)[1].state, ServiceState::kAbsent);
  EXPECT_EQ((*r)[2].state, ServiceState::kFailed);
  EXPECT_EQ((*r)[3].state, ServiceState::kUnknown);  // systemd not running: nothing printed
  EXPECT_EQ(
      ParseServices("slurmd loaded active now\n").error().message,
      "line 1: expected '<unit> <load state> <active state>', got 'slurmd loaded active now'");
}

TEST(ParseMemlock, UnlimitedOrKiB) {
  EXPECT_TRUE(ParseMemlock("unlimited\n")->unlimited);
  Result<Memlock> m = ParseMemlock("8192\n");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->unlimited);
  EXPECT_EQ(m->bytes, 8192u * 1024);
  EXPECT_EQ(ParseMemlock("-1").error().message,
            "expected 'unlimited' or a number of KiB, got '-1'");
}

TEST(NormalizeBusId, Forms) {
  EXPECT_EQ(NormalizeBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(NormalizeBusId("0000:1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(NormalizeBusId("10000:e0:00.0"), "10000:e0:00.0");  // VMD domain
  EXPECT_FALSE(NormalizeBusId("1b:00.0").has_value());
  EXPECT_FALSE(NormalizeBusId("0000:1b:00.9").has_value());
}

TEST(Parsers, OversizedInputIsRefused) {
  std::string big(kMaxSectionBytes + 1, 'a');
  EXPECT_EQ(ParseLscpu(big).error().message,
            "output is 16777217 bytes, over the 16777216 byte limit");
}

}  // namespace
}  // namespace gpuforge::facts
