#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/probes.h"

namespace gpuforge::probe {
namespace {

using internal::MakeStorageCheckpointProbe;
using internal::MakeStorageMetadataProbe;
using internal::MakeStorageReadProbe;
using internal::MakeStorageReadProbeForTest;
using internal::StorageReadTestHooks;
using Params = std::map<std::string, std::string>;

constexpr std::uint64_t kMiB = 1 << 20;

// A fresh directory on a disk file system (not tmpfs), removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& parent = "/var/tmp") {
    std::string t = parent + "/gpuforge-probe-test-XXXXXX";
    if (::mkdtemp(t.data()) != nullptr) path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  // What the probe left behind.
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      out.push_back(e.path().string());
    return out;
  }

 private:
  std::string path_;
};

ProbeResult RunWith(Probe& p, const Params& given, const std::atomic<bool>* cancel = nullptr) {
  Result<Params> params = ResolveParams(p, given);
  EXPECT_TRUE(params.ok()) << params.error().message;
  if (!params.ok()) return Fail(p.key(), "test", "params");
  return RunProbe(p, *params, cancel);
}

std::string Describe(const ProbeResult& r) {
  return std::string(ToString(r.outcome)) + " " + r.code + ": " + r.reason;
}

Params SmallRead(const std::string& path) {
  return {{"path", path}, {"size", "8MiB"}, {"block", "1MiB"}, {"threads", "2"}, {"repeats", "3"}};
}

void ExpectMedianOfSamples(const Measurement& m, std::size_t n) {
  ASSERT_EQ(m.samples.size(), n) << m.metric;
  EXPECT_DOUBLE_EQ(m.value, Median(m.samples)) << m.metric;
  for (double s : m.samples) EXPECT_GT(s, 0) << m.metric;
}

TEST(StorageProbes, KeysDescriptionsAndParams) {
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(MakeStorageReadProbe());
  probes.push_back(MakeStorageCheckpointProbe());
  probes.push_back(MakeStorageMetadataProbe());
  const std::vector<std::string> keys = {"storage.read", "storage.checkpoint", "storage.metadata"};
  for (std::size_t i = 0; i < probes.size(); ++i) {
    EXPECT_EQ(probes[i]->key(), keys[i]);
    EXPECT_FALSE(probes[i]->description().empty());
    std::set<std::string> names;
    for (const Param& p : probes[i]->params()) {
      EXPECT_TRUE(names.insert(p.name).second) << "duplicate " << p.name;
      EXPECT_FALSE(p.doc.empty()) << p.name;
    }
    EXPECT_TRUE(names.count("path")) << keys[i];
    // Without a path there is nothing to measure: SKIP with the reason code, no fake figure.
    ProbeResult r = RunWith(*probes[i], {});
    EXPECT_EQ(r.outcome, Outcome::kSkip) << Describe(r);
    EXPECT_EQ(r.code, "storage.no_path");
    EXPECT_TRUE(r.measurements.empty());
    EXPECT_EQ(r.probe, keys[i]);
  }
}

TEST(StorageRead, MeasuresVerifiedReadsAndRemovesItsFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto p = MakeStorageReadProbe();
  ProbeResult r = RunWith(*p, SmallRead(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  ASSERT_EQ(r.measurements.size(), 1u);
  const Measurement& m = r.measurements[0];
  EXPECT_EQ(m.entity, dir.path());
  EXPECT_EQ(m.metric, "read_bandwidth");
  EXPECT_EQ(m.unit, "GB/s");
  ExpectMedianOfSamples(m, 3);
  EXPECT_EQ(m.info.at("size"), std::to_string(8 * kMiB));
  EXPECT_EQ(m.info.at("threads"), "2");
  EXPECT_EQ(m.info.at("block"), std::to_string(kMiB));
  if (m.info.at("direct") == "0") {
    EXPECT_FALSE(m.info.at("direct_reason").empty());
  }
  EXPECT_EQ(r.params.at("min_size"), "1GiB");  // defaults are filled in and recorded
  EXPECT_GT(r.seconds, 0);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageRead, FallsBackToBufferedReadsWhereDirectIsRefused) {
  TempDir dir;
  StorageReadTestHooks hooks;
  hooks.refuse_direct = true;
  auto p = MakeStorageReadProbeForTest(hooks);
  ProbeResult r = RunWith(*p, SmallRead(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  const Measurement& m = r.measurements.at(0);
  EXPECT_EQ(m.info.at("direct"), "0");
  EXPECT_NE(m.info.at("direct_reason").find("O_DIRECT"), std::string::npos);
  EXPECT_NE(m.info.at("direct_reason").find("posix_fadvise(DONTNEED)"), std::string::npos);
  ExpectMedianOfSamples(m, 3);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageRead, RunsOnTmpfs) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  TempDir dir("/dev/shm");
  ASSERT_FALSE(dir.path().empty());
  auto p = MakeStorageReadProbe();
  ProbeResult r = RunWith(*p, SmallRead(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  const Measurement& m = r.measurements.at(0);
  EXPECT_EQ(m.info.at("filesystem"), "tmpfs");
  // tmpfs refused O_DIRECT before Linux 6.6 and takes it since; either way the result says.
  if (m.info.at("direct") == "0") {
    EXPECT_NE(m.info.at("direct_reason").find("Invalid argument"), std::string::npos);
  } else {
    EXPECT_EQ(m.info.count("direct_reason"), 0u);
  }
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageRead, DirectZeroIsBufferedAndSaysSo) {
  TempDir dir;
  Params params = SmallRead(dir.path());
  params["direct"] = "0";
  auto p = MakeStorageReadProbe();
  ProbeResult r = RunWith(*p, params);
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  EXPECT_EQ(r.measurements.at(0).info.at("direct"), "0");
  EXPECT_NE(r.measurements.at(0).info.at("direct_reason").find("direct=0"), std::string::npos);
}

// Storage that hands back the wrong bytes (zeros, a stale page) must fail, not be timed.
TEST(StorageRead, WrongDataIsAnError) {
  for (bool refuse_direct : {false, true}) {
    TempDir dir;
    StorageReadTestHooks hooks;
    hooks.refuse_direct = refuse_direct;
    const std::uint64_t at = 3 * kMiB + 4096;
    hooks.after_write = [&](const std::string& file) {
      int fd = ::open(file.c_str(), O_WRONLY);
      ASSERT_GE(fd, 0);
      std::vector<char> zeros(4096, 0);
      ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(at)), 4096);
      ASSERT_EQ(::fsync(fd), 0);
      ::close(fd);
    };
    auto p = MakeStorageReadProbeForTest(hooks);
    ProbeResult r = RunWith(*p, SmallRead(dir.path()));
    EXPECT_EQ(r.outcome, Outcome::kError) << Describe(r);
    EXPECT_EQ(r.code, "storage.wrong_data");
    EXPECT_NE(r.reason.find("at offset " + std::to_string(at) + " read back 0x0000000000000000"),
              std::string::npos)
        << r.reason;
    EXPECT_TRUE(r.measurements.empty());
    EXPECT_TRUE(dir.Entries().empty());
  }
}

TEST(StorageRead, CancelFromAnotherThreadRemovesTheFile) {
  TempDir dir;
  std::atomic<bool> cancel{false};
  std::atomic<bool> written{false};
  bool file_existed = false;
  StorageReadTestHooks hooks;
  hooks.after_write = [&](const std::string& file) {
    file_existed = std::filesystem::exists(file);
    written = true;
    // Hold here until the canceller has acted, so the cancel lands in the timed passes.
    for (int i = 0; i < 500 && !cancel.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  std::thread canceller([&] {
    while (!written.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cancel = true;
  });
  auto p = MakeStorageReadProbeForTest(hooks);
  Params params = SmallRead(dir.path());
  params["repeats"] = "1000";
  ProbeResult r = RunWith(*p, params, &cancel);
  canceller.join();
  EXPECT_TRUE(file_existed);
  EXPECT_EQ(r.outcome, Outcome::kError) << Describe(r);
  EXPECT_EQ(r.code, "probe.cancelled");
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageRead, CancelWhileWritingRemovesTheFile) {
  TempDir dir;
  std::atomic<bool> cancel{true};
  auto p = MakeStorageReadProbe();
  ProbeResult r = RunWith(*p, SmallRead(dir.path()), &cancel);
  EXPECT_EQ(r.code, "probe.cancelled") << Describe(r);
  EXPECT_NE(r.reason.find("writing"), std::string::npos) << r.reason;
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageRead, BadParamsNameTheParameter) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"threads", "-1"},  {"threads", "abc"},    {"threads", "1.5"}, {"threads", "0"},
      {"size", "-8MiB"},  {"size", "8"},         {"size", "lots"},   {"size", "100B"},
      {"block", "1000B"}, {"block", "0B"},       {"block", "1GiB"},  {"direct", "2"},
      {"repeats", "0"},   {"min_size", "-1GiB"}, {"min_size", "x"},
  };
  auto p = MakeStorageReadProbe();
  for (const auto& [name, value] : bad) {
    Params params = SmallRead(dir.path());
    params[name] = value;
    ProbeResult r = RunWith(*p, params);
    EXPECT_EQ(r.outcome, Outcome::kError) << name << "=" << value;
    EXPECT_EQ(r.code, "probe.bad_param") << name << "=" << value << ": " << Describe(r);
    EXPECT_NE(r.reason.find("parameter " + name), std::string::npos) << r.reason;
  }
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageRead, PathErrorsNameThePath) {
  TempDir dir;
  auto p = MakeStorageReadProbe();
  ProbeResult missing = RunWith(*p, SmallRead(dir.path() + "/missing"));
  EXPECT_EQ(missing.code, "sys.stat_failed") << Describe(missing);
  EXPECT_NE(missing.reason.find(dir.path() + "/missing): No such file or directory"),
            std::string::npos)
      << missing.reason;
  const std::string file = dir.path() + "/plain";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  ProbeResult not_dir = RunWith(*p, SmallRead(file));
  EXPECT_EQ(not_dir.code, "storage.not_a_directory") << Describe(not_dir);
}

TEST(StorageRead, RefusesToFillTheFileSystem) {
  TempDir dir;
  auto p = MakeStorageReadProbe();
  Params huge = SmallRead(dir.path());
  huge["size"] = "1PiB";
  ProbeResult r = RunWith(*p, huge);
  EXPECT_EQ(r.code, "storage.no_space") << Describe(r);
  Params autos = SmallRead(dir.path());
  autos["size"] = "auto";
  autos["min_size"] = "1PiB";
  r = RunWith(*p, autos);
  EXPECT_EQ(r.code, "storage.no_space") << Describe(r);
  EXPECT_NE(r.reason.find("min_size"), std::string::npos) << r.reason;
  EXPECT_TRUE(dir.Entries().empty());
}

// #15 item 19: size=auto is bounded (32 GiB, not 2 x RAM: ~4 TiB on a 2 TiB node), and no size
// may take the file system below 10% of its size free.
TEST(StorageRead, AutoSizeIsBoundedAndKeepsAFreeMargin) {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  std::string why;
  // A 100 TiB Lustre with 50 TiB free: 32 GiB, whatever the node's memory.
  Result<std::uint64_t> a = internal::AutoReadSize(100 * 1024 * gib, 50 * 1024 * gib, gib, kMiB, &why);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 32 * gib);
  EXPECT_NE(why.find("direct I/O"), std::string::npos) << why;
  // 1 TiB, 130 GiB free: 102.4 GiB must stay free, 27.6 GiB of room, in whole blocks.
  Result<std::uint64_t> b = internal::AutoReadSize(1024 * gib, 130 * gib, gib, kMiB, &why);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (130 * gib - 1024 * gib / 10) / kMiB * kMiB);
  EXPECT_NE(why.find("free-space margin"), std::string::npos) << why;
  // 95% full: no room at all.
  Result<std::uint64_t> c = internal::AutoReadSize(1024 * gib, 51 * gib, gib, kMiB, &why);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("min_size"), std::string::npos) << c.error().message;
  // Small file systems keep at least 1 GiB.
  EXPECT_EQ(internal::FreeMargin(4 * gib), gib);
  EXPECT_EQ(internal::FreeMargin(1000 * gib), 100 * gib);
}

// f_type values from linux/magic.h and the file systems' own sources; WekaFS and FUSE-based
// ones by the mount's type.
TEST(StorageRead, SharedFileSystemsAreNamed) {
  EXPECT_EQ(internal::SharedFsName(0x6969, "nfs4"), "nfs");
  EXPECT_EQ(internal::SharedFsName(0x0BD00BD0, "lustre"), "lustre");
  EXPECT_EQ(internal::SharedFsName(0x47504653, "gpfs"), "gpfs");
  EXPECT_EQ(internal::SharedFsName(0x19830326, "beegfs"), "beegfs");
  EXPECT_EQ(internal::SharedFsName(0x00C36400, "ceph"), "ceph");
  EXPECT_EQ(internal::SharedFsName(0x12345678, "wekafs"), "wekafs");
  EXPECT_EQ(internal::SharedFsName(0x65735546, "fuse.glusterfs"), "fuse.glusterfs");
  EXPECT_EQ(internal::SharedFsName(0xEF53, "ext4"), "");
  EXPECT_EQ(internal::SharedFsName(0x58465342, "xfs"), "");
  EXPECT_EQ(internal::SharedFsName(0x01021994, "tmpfs"), "");
  EXPECT_EQ(internal::SharedFsName(0x65735546, "fuse.rclone-local"), "");
}

TEST(StorageCheckpoint, MeasuresWriteAndFsync) {
  TempDir dir;
  auto p = MakeStorageCheckpointProbe();
  ProbeResult r =
      RunWith(*p, {{"path", dir.path()}, {"size", "8MiB"}, {"threads", "2"}, {"repeats", "2"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  ASSERT_EQ(r.measurements.size(), 2u);
  const Measurement& bw = r.measurements[0];
  const Measurement& secs = r.measurements[1];
  EXPECT_EQ(bw.metric, "write_bandwidth");
  EXPECT_EQ(bw.unit, "GB/s");
  EXPECT_EQ(secs.metric, "checkpoint_seconds");
  EXPECT_EQ(secs.unit, "s");
  ExpectMedianOfSamples(bw, 2);
  ExpectMedianOfSamples(secs, 2);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(bw.samples[i] * secs.samples[i], 8.0 * kMiB / 1e9, 1e-12);  // GB/s x s = GB
  }
  EXPECT_EQ(bw.info.at("size"), std::to_string(8 * kMiB));
  EXPECT_EQ(r.params.at("block"), "1MiB");
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageCheckpoint, CancelAndBadParams) {
  TempDir dir;
  auto p = MakeStorageCheckpointProbe();
  std::atomic<bool> cancel{true};
  ProbeResult r = RunWith(*p, {{"path", dir.path()}, {"size", "8MiB"}}, &cancel);
  EXPECT_EQ(r.code, "probe.cancelled") << Describe(r);
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"size", "-1GiB"}, {"size", "1.5"}, {"threads", "many"}, {"repeats", "-3"}}) {
    ProbeResult b = RunWith(*p, {{"path", dir.path()}, {name, value}});
    EXPECT_EQ(b.code, "probe.bad_param") << name << "=" << value;
    EXPECT_NE(b.reason.find("parameter " + name), std::string::npos) << b.reason;
  }
  ProbeResult huge = RunWith(*p, {{"path", dir.path()}, {"size", "1PiB"}});
  EXPECT_EQ(huge.code, "storage.no_space") << Describe(huge);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageMetadata, MeasuresRatesAndLatencies) {
  TempDir dir;
  auto p = MakeStorageMetadataProbe();
  ProbeResult r = RunWith(*p, {{"path", dir.path()}, {"files", "200"}, {"latency_ops", "20"}});
  ASSERT_EQ(r.outcome, Outcome::kOk) << Describe(r);
  ASSERT_EQ(r.measurements.size(), 5u);
  const std::vector<std::pair<std::string, std::string>> want = {{"create_rate", "ops/s"},
                                                                 {"stat_rate", "ops/s"},
                                                                 {"unlink_rate", "ops/s"},
                                                                 {"p50_latency", "s"},
                                                                 {"p99_latency", "s"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.measurements[i].metric, want[i].first);
    EXPECT_EQ(r.measurements[i].unit, want[i].second);
    EXPECT_GT(r.measurements[i].value, 0);
    EXPECT_EQ(r.measurements[i].entity, dir.path());
  }
  const Measurement& p50 = r.measurements[3];
  const Measurement& p99 = r.measurements[4];
  ASSERT_EQ(p50.samples.size(), 20u);
  EXPECT_EQ(p50.samples, p99.samples);
  EXPECT_EQ(p50.value, Percentile(p50.samples, 50));
  EXPECT_EQ(p99.value, Percentile(p99.samples, 99));
  EXPECT_LE(p50.value, p99.value);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(StorageMetadata, CancelFromAnotherThreadAndBadParams) {
  TempDir dir;
  auto p = MakeStorageMetadataProbe();
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel = true;
  });
  // Far more files than 20 ms allow; the loop sees the flag and removes what it made.
  ProbeResult r = RunWith(*p, {{"path", dir.path()}, {"files", "10000000"}}, &cancel);
  canceller.join();
  EXPECT_EQ(r.code, "probe.cancelled") << Describe(r);
  EXPECT_TRUE(dir.Entries().empty());
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"files", "0"}, {"files", "-5"}, {"latency_ops", "5000"}, {"latency_ops", "ten"}}) {
    ProbeResult b = RunWith(*p, {{"path", dir.path()}, {name, value}});
    EXPECT_EQ(b.code, "probe.bad_param") << name << "=" << value;
    EXPECT_NE(b.reason.find("parameter " + name), std::string::npos) << b.reason;
  }
}

TEST(StorageProbes, RealResultsSurviveTheJsonLine) {
  TempDir dir;
  std::vector<ProbeResult> results;
  auto read = MakeStorageReadProbe();
  results.push_back(RunWith(*read, SmallRead(dir.path())));
  auto meta = MakeStorageMetadataProbe();
  results.push_back(RunWith(*meta, {{"path", dir.path()}, {"files", "50"}, {"latency_ops", "20"}}));
  auto ckpt = MakeStorageCheckpointProbe();
  results.push_back(RunWith(*ckpt, {{"path", dir.path()}, {"size", "4MiB"}}));
  results.push_back(RunWith(*read, {}));  // a SKIP travels too
  for (const ProbeResult& r : results) {
    const std::string line = ToJsonLine(r);
    Result<ProbeResult> back = ParseJsonLine("test", line);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, r) << line.substr(0, 300);
  }
  EXPECT_EQ(results[0].outcome, Outcome::kOk);
  EXPECT_EQ(results[1].outcome, Outcome::kOk);
  EXPECT_EQ(results[3].outcome, Outcome::kSkip);
}

// latency_ops is capped at 2000 because every latency is a sample, twice (p50 and p99), and
// a result line once had to fit 64 KiB (now 1 MiB). The worst case: 2000 latencies of 1-10 s, each
// with nine decimals (the probe rounds to nanoseconds).
TEST(StorageMetadata, LargestResultFitsTheJsonLine) {
  ProbeResult r;
  r.probe = "storage.metadata";
  r.params = {
      {"path", "/mnt/" + std::string(200, 'p')}, {"files", "2000"}, {"latency_ops", "2000"}};
  std::vector<double> latencies;
  for (int i = 0; i < 2000; ++i) latencies.push_back((1000000000.0 + 4499999.0 * i + 123) / 1e9);
  const std::map<std::string, std::string> info = {
      {"operation", "open O_CREAT + 4KiB write + fsync + close"},
      {"ops", "2000"},
      {"filesystem", "lustre"}};
  const std::string entity = "/mnt/" + std::string(120, 'p');
  for (const char* metric : {"create_rate", "stat_rate", "unlink_rate"}) {
    r.measurements.push_back({entity, metric, 12345.678901234, "ops/s", {12345.678901234}, info});
  }
  r.measurements.push_back(
      {entity, "p50_latency", Percentile(latencies, 50), "s", latencies, info});
  r.measurements.push_back(
      {entity, "p99_latency", Percentile(latencies, 99), "s", latencies, info});
  const std::string line = ToJsonLine(r);
  EXPECT_LT(line.size(), 64u * 1024) << line.size();
  Result<ProbeResult> back = ParseJsonLine("test", line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

}  // namespace
}  // namespace gpuforge::probe
