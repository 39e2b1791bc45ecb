// Xid lines from the kernel log and the PCI addresses they name (src/probe/gpu/xid.h,
// bus_id.h): pure parsing, no GPU needed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "probe/gpu/bus_id.h"
#include "probe/gpu/xid.h"

namespace gpuforge::probe::internal {
namespace {

TEST(GpuBusId, WritesEveryFormOneWay) {
  EXPECT_EQ(CanonicalBusId("00000000:1B:00.0"), "0000:1b:00.0");  // NVML
  EXPECT_EQ(CanonicalBusId("0000:1B:00.0"), "0000:1b:00.0");      // CUDA
  EXPECT_EQ(CanonicalBusId("0000:1b:00"), "0000:1b:00.0");        // Xid lines
  EXPECT_EQ(CanonicalBusId("1b:00.0"), "0000:1b:00.0");           // lspci without -D
  EXPECT_EQ(CanonicalBusId("0001:C3:1f.7"), "0001:c3:1f.7");
  EXPECT_EQ(CanonicalBusId("10000:01:00.0"), "10000:01:00.0");  // VMD domains are wider
}

TEST(GpuBusId, RefusesWhatIsNotAnAddress) {
  for (const char* bad : {"", ":", "1b", "0000:1b:20.0", "0000:100:00.0", "0000:1b:00.8",
                          "123456789:1b:00.0", "0000:1b:00.0.0", "0000:1b:00:00", "zz:00.0",
                          "0000:1b:0x.0", "0000:+1:00.0", "0000:1b:00.", " 0000:1b:00.0"}) {
    EXPECT_EQ(CanonicalBusId(bad), "") << bad;
  }
}

TEST(GpuXid, ParsesTheFormsDriversWrite) {
  const XidScan scan = ParseXid(
      "[ 1234.567890] NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python3, GPU has fallen "
      "off the bus.\n"
      "Mar 01 12:00:00 gpu01 kernel: NVRM: Xid (PCI:0000:9A:00): 48, pid='<unknown>', "
      "name=<unknown>, An uncorrectable double bit error (DBE) has been detected\n"
      "6,1234,5678901,-;NVRM: Xid (PCI:0000:1b:00): 119, pid=2222, name=nvidia-smi, Timeout "
      "after 6s of waiting for RPC response from GPU0 GSP!\n"
      " SUBSYSTEM=pci\n"
      "[  99.000001] NVRM: Xid (0000:3b:00): 13, Graphics SM Warp Exception\r\n"
      "NVRM: Xid (PCI:0000:1b:00): 94\n"
      "[  12.000000] nvidia 0000:1b:00.0: enabling device (0000 -> 0003)\n");
  ASSERT_EQ(scan.events.size(), 5u);
  EXPECT_EQ(scan.malformed, 0u);
  EXPECT_EQ(scan.events[0],
            (XidEvent{"0000:1b:00.0", 79, "pid=1234, name=python3, GPU has fallen off the bus."}));
  EXPECT_EQ(scan.events[1].bus_id, "0000:9a:00.0");
  EXPECT_EQ(scan.events[1].code, 48);
  EXPECT_EQ(scan.events[2].code, 119);
  EXPECT_EQ(scan.events[3], (XidEvent{"0000:3b:00.0", 13, "Graphics SM Warp Exception"}));
  EXPECT_EQ(scan.events[4], (XidEvent{"0000:1b:00.0", 94, ""}));
}

TEST(GpuXid, CountsHostileLinesAsMalformedAndKeepsNothingRaw) {
  const std::string long_tail(5000, 'A');
  std::string log =
      "NVRM: Xid (PCI:0000:1b:00): 99999999999999999999999, huge\n"  // overflow
      "NVRM: Xid (PCI:0000:1b:00): 1000000, seven digits\n"
      "NVRM: Xid (PCI:0000:1b:00): -5, negative\n"
      "NVRM: Xid (PCI:0000:1b:00): 0, zero\n"
      "NVRM: Xid (PCI:0000:1b:00): 79x, glued\n"
      "NVRM: Xid (PCI:zzzz:1b:00): 79, bad domain\n"
      "NVRM: Xid (PCI:123456789:1b:00): 79, domain too wide\n"
      "NVRM: Xid (PCI:0000:1b:00 79, no parenthesis\n"
      "NVRM: Xid (PCI:0000:1b:00):79, no space\n"
      "NVRM: Xid (PCI:0000:1b:00" +
      std::string(100, '0') +
      "): 79, long address\n"
      "NVRM: Xid (\n"
      "NVRM: Xid (PCI:0000:1b:00): 31, \x1b[31mred\x1b[0m \\x07 bell\t|\n" +
      std::string("NVRM: Xid (PCI:0000:1b:00): 43, ") + long_tail + "\n" +
      "NVRM: Xid (PCI:0000:1b:00): 45, nul" + '\0' + "inside\n";
  const XidScan scan = ParseXid(log);
  EXPECT_EQ(scan.malformed, 11u);
  ASSERT_EQ(scan.events.size(), 3u);
  // Control characters become '?'; what /dev/kmsg already escaped stays as the text it is.
  EXPECT_EQ(scan.events[0].detail, "?[31mred?[0m \\x07 bell?|");
  EXPECT_EQ(scan.events[1].detail, std::string(kXidDetailMax, 'A'));
  EXPECT_EQ(scan.events[2].detail, "nul?inside");
  for (const XidEvent& e : scan.events) {
    for (char c : e.detail) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
  }
}

TEST(GpuXid, KeepsAtMostTheLimitAndCountsTheRest) {
  std::string log;
  for (std::size_t i = 0; i < kXidEventsMax + 7; ++i) log += "NVRM: Xid (PCI:0000:1b:00): 13, x\n";
  const XidScan scan = ParseXid(log);
  EXPECT_EQ(scan.events.size(), kXidEventsMax);
  EXPECT_EQ(scan.dropped, 7u);
}

TEST(GpuXid, ReadsALogFileAndNamesTheOneItCannotOpen) {
  char path[] = "/tmp/gpuforge_xid_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = "6,1,2,-;NVRM: Xid (PCI:0000:1b:00): 79, gone\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  gpuforge::Result<std::string> log = ReadKernelLog(path);
  std::remove(path);
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(*log, text);
  gpuforge::Result<std::string> none = ReadKernelLog("/nonexistent/kmsg");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "cannot open /nonexistent/kmsg: No such file or directory");
}

}  // namespace
TEST(XidClassTest, HardwareXidsFollowNvidiasCatalogAndTheRestAreApplications) {
  for (int code : {48, 54, 61, 62, 64, 74, 79, 94, 95, 119, 120, 121, 140}) {
    EXPECT_TRUE(IsHardwareXid(code)) << code;
    EXPECT_FALSE(IsInformationalXid(code)) << code;
  }
  // #28 item 10: the catalog's IGNORE codes are informational, never hardware: 63 (a remap
  // recorded) paged as critical before.
  for (int code : {63, 92}) {
    EXPECT_FALSE(IsHardwareXid(code)) << code;
    EXPECT_TRUE(IsInformationalXid(code)) << code;
  }
  for (int code : {8, 13, 31, 32, 43, 45, 68, 69, 109, 999999}) {
    EXPECT_FALSE(IsHardwareXid(code)) << code;
    EXPECT_FALSE(IsInformationalXid(code)) << code;
  }
}

}  // namespace gpuforge::probe::internal
