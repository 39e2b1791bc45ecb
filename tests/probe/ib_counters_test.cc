// ib.counters against fake sysfs trees built in a temporary directory: healthy ports, hostile
// file contents (garbage, numbers past 64 bits, missing files, a symlink loop, a FIFO), and the
// devices parameter.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/rdma/ib_counters.h"

namespace gpuforge::probe::internal {
namespace {

namespace fs = std::filesystem;

class IbCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gpuforge-ibc-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }

  // A healthy NDR port.
  void Port(const std::string& dev, int port, const std::map<std::string, std::string>& overrides = {}) {
    const fs::path p = fs::path(dev) / "ports" / std::to_string(port);
    std::map<std::string, std::string> files = {
        {"state", "4: ACTIVE\n"},
        {"phys_state", "5: LinkUp\n"},
        {"rate", "400 Gb/sec (4X NDR)\n"},
        {"link_layer", "InfiniBand\n"},
        {"counters/link_downed", "0\n"},
        {"counters/link_error_recovery", "1\n"},
        {"counters/symbol_error", "0\n"},
        {"counters/port_rcv_errors", "12\n"},
        {"counters/port_xmit_discards", "0\n"},
        {"counters/excessive_buffer_overrun_errors", "0\n"},
        {"counters/local_link_integrity_errors", "0\n"},
    };
    for (const auto& [k, v] : overrides) files[k] = v;
    for (const auto& [k, v] : files) {
      if (v == "<absent>") continue;
      Write(p / k, v);
    }
  }

  ProbeResult Run(const std::string& devices = "all") {
    std::unique_ptr<Probe> probe = MakeIbCountersProbe(root_.string());
    return RunProbe(*probe, {{"devices", devices}}, nullptr);
  }

  static const Measurement* Find(const ProbeResult& r, const std::string& entity, const std::string& metric) {
    for (const Measurement& m : r.measurements) {
      if (m.entity == entity && m.metric == metric) return &m;
    }
    return nullptr;
  }

  fs::path root_;
};

TEST_F(IbCountersTest, HealthyPortsAreMeasured) {
  Port("mlx5_1", 1);
  Port("mlx5_0", 1);
  Port("mlx5_0", 2, {{"rate", "2.5 Gb/sec (1X)\n"}, {"state", "1: DOWN\n"}, {"phys_state", "3: Disabled\n"}});
  const ProbeResult r = Run();
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(r.measurements.size(), 3u * 8);
  EXPECT_EQ(r.measurements.front().entity, "mlx5_0:1");
  const Measurement* rate = Find(r, "mlx5_0:1", "rate");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(rate->value, 400);
  EXPECT_EQ(rate->unit, "Gb/s");
  EXPECT_EQ(rate->info.at("state"), "ACTIVE");
  EXPECT_EQ(rate->info.at("phys_state"), "LinkUp");
  EXPECT_EQ(rate->info.at("link_layer"), "InfiniBand");
  EXPECT_EQ(rate->info.at("width"), "4X");
  EXPECT_EQ(rate->info.at("speed"), "NDR");
  const Measurement* rcv = Find(r, "mlx5_0:1", "port_rcv_errors");
  ASSERT_NE(rcv, nullptr);
  EXPECT_EQ(rcv->value, 12);
  EXPECT_EQ(rcv->unit, "count");
  const Measurement* down = Find(r, "mlx5_0:2", "rate");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->value, 2.5);
  EXPECT_EQ(down->info.at("state"), "DOWN");
  EXPECT_EQ(down->info.at("width"), "1X");
  EXPECT_EQ(down->info.count("speed"), 0u);
  // Every result survives the controller's strict parser.
  EXPECT_TRUE(ParseJsonLine("test", ToJsonLine(r)).ok());
}

TEST_F(IbCountersTest, AbsentOrEmptyClassDirectorySkips) {
  std::unique_ptr<Probe> probe = MakeIbCountersProbe((root_ / "nope").string());
  ProbeResult r = RunProbe(*probe, {{"devices", "all"}}, nullptr);
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "ib.no_devices");
  r = Run();
  EXPECT_EQ(r.outcome, Outcome::kSkip);
  EXPECT_EQ(r.code, "ib.no_devices");
}

TEST_F(IbCountersTest, GarbageCounterIsAnErrorNamingTheFile) {
  Port("mlx5_0", 1, {{"counters/symbol_error", "12abc\n"}});
  const ProbeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "ib.sysfs_error");
  EXPECT_NE(r.reason.find((root_ / "mlx5_0/ports/1/counters/symbol_error").string() +
                          ": '12abc' is not a decimal counter"),
            std::string::npos)
      << r.reason;
  // The rest of the port is still reported.
  EXPECT_NE(Find(r, "mlx5_0:1", "rate"), nullptr);
  EXPECT_EQ(Find(r, "mlx5_0:1", "symbol_error"), nullptr);
}

TEST_F(IbCountersTest, HostileContents) {
  const std::map<std::string, std::string> cases = {
      {"counters/link_downed", "18446744073709551616\n"},  // 2^64
      {"counters/port_rcv_errors", "-1\n"},
      {"counters/port_xmit_discards", "\n"},
      {"counters/link_error_recovery", "1\n2\n"},
      {"counters/symbol_error", " 7\n"},
      {"state", "ACTIVE\n"},
      {"phys_state", "5:LinkUp\n"},
      {"rate", "400 Gb/sec\n"},
      {"link_layer", "Infini\x01" "Band\n"},
  };
  for (const auto& [file, content] : cases) {
    fs::remove_all(root_ / "mlx5_0");
    Port("mlx5_0", 1, {{file, content}});
    const ProbeResult r = Run();
    EXPECT_EQ(r.outcome, Outcome::kError) << file;
    EXPECT_EQ(r.code, "ib.sysfs_error") << file;
    EXPECT_NE(r.reason.find((root_ / "mlx5_0/ports/1" / file).string()), std::string::npos)
        << file << ": " << r.reason;
  }
  // The largest 64-bit counter is fine.
  fs::remove_all(root_ / "mlx5_0");
  Port("mlx5_0", 1, {{"counters/link_downed", "18446744073709551615"}});
  const ProbeResult r = Run();
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(Find(r, "mlx5_0:1", "link_downed")->info.at("exact"), "18446744073709551615");
}

TEST_F(IbCountersTest, OversizedFileAndFifoAreRefused) {
  Port("mlx5_0", 1, {{"counters/link_downed", std::string(5000, '1')}});
  ProbeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("longer than 4096 bytes"), std::string::npos) << r.reason;
  fs::remove_all(root_ / "mlx5_0");
  Port("mlx5_0", 1, {{"state", "<absent>"}});
  ASSERT_EQ(::mkfifo((root_ / "mlx5_0/ports/1/state").c_str(), 0600), 0);
  r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("state: not a regular file"), std::string::npos) << r.reason;
}

TEST_F(IbCountersTest, MissingCounterIsNamedMissingStateIsAnError) {
  Port("mlx5_0", 1, {{"counters/symbol_error", "<absent>"}, {"counters/link_downed", "<absent>"}});
  ProbeResult r = Run();
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(Find(r, "mlx5_0:1", "rate")->info.at("missing_counters"), "link_downed,symbol_error");
  fs::remove_all(root_ / "mlx5_0");
  Port("mlx5_0", 1, {{"rate", "<absent>"}});
  r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.reason.find("rate: missing"), std::string::npos) << r.reason;
}

TEST_F(IbCountersTest, SymlinkLoopIsAnErrorNotAHang) {
  Port("mlx5_0", 1);
  fs::create_directory_symlink(root_ / "mlx5_9", root_ / "mlx5_9");
  const ProbeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "ib.sysfs_error");
  EXPECT_NE(r.reason.find("mlx5_9/ports"), std::string::npos) << r.reason;
  EXPECT_NE(Find(r, "mlx5_0:1", "rate"), nullptr);
}

TEST_F(IbCountersTest, DevicesParameter) {
  Port("mlx5_0", 1);
  Port("mlx5_1", 1);
  ProbeResult r = Run("mlx5_1");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.reason;
  EXPECT_EQ(r.measurements.size(), 8u);
  EXPECT_EQ(r.measurements.front().entity, "mlx5_1:1");

  r = Run("mlx5_1,mlx5_7");
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_EQ(r.code, "rdma.no_such_device");
  EXPECT_NE(r.reason.find("no RDMA device mlx5_7 in " + root_.string() + "; there is mlx5_0, mlx5_1"),
            std::string::npos)
      << r.reason;
  EXPECT_EQ(r.measurements.size(), 8u);

  for (const std::string& bad :
       std::vector<std::string>{"mlx5_0,", "mlx5 0", "../etc", std::string(65, 'a'), ""}) {
    std::unique_ptr<Probe> probe = MakeIbCountersProbe(root_.string());
    Context ctx{{{"devices", bad}}, nullptr, {}};
    r = probe->Run(ctx);
    EXPECT_EQ(r.outcome, Outcome::kError) << bad;
    EXPECT_EQ(r.code, "probe.bad_param") << bad;
  }
}

}  // namespace
}  // namespace gpuforge::probe::internal
