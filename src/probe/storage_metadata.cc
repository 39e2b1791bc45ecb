// storage.metadata: create/stat/unlink rates and small synced-write latency.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "probe/storage_io.h"

namespace gpuforge::probe::internal {

namespace storage {
namespace {

const ParamSpec kFiles{"files", ParamKind::kWhole, "2000", 1, 10'000'000,
                       "empty files created, stated and unlinked, one thread"};
// Each latency is a sample in the result line, which the controller caps at 64 KiB.
const ParamSpec kLatencyOps{"latency_ops", ParamKind::kWhole, "200", 1, 2000,
                            "timed open + 4KiB write + fsync + close operations (at most 2000, each one a sample)"};

class StorageMetadataProbe : public Probe {
 public:
  std::string key() const override { return "storage.metadata"; }
  std::string description() const override {
    return "File system metadata: create/stat/unlink rates and small synced-write latency";
  }
  std::vector<Param> params() const override {
    return {
        {"path", ParamKind::kText, "", 0, 0, "directory on the storage to measure; without it the probe is skipped"},
        kFiles,
        kLatencyOps,
    };
  }

  // RunProbe catches what a slip throws.
  ProbeResult Run(const Context& ctx) override { return Measure(ctx); }

 private:
  ProbeResult Measure(const Context& ctx) {
    Common c;
    if (auto r = ReadCommon(key(), ctx, false, &c)) return std::move(*r);
    Result<std::int64_t> files = Whole(ctx, kFiles);
    if (!files.ok()) return Fail(key(), "probe.bad_param", files.error().message);
    Result<std::int64_t> ops = Whole(ctx, kLatencyOps);
    if (!ops.ok()) return Fail(key(), "probe.bad_param", ops.error().message);

    std::string dir = c.dir.path + "/.gpuforge-storage-metadata-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) return FailWith(key(), SysFailure("mkdtemp", dir, errno));
    RemoveOnExit remove(dir);
    auto name = [&](char kind, std::int64_t i) { return fmt::format("{}/{}{}", dir, kind, i); };
    auto cancelled = [&](std::string_view phase) {
      return FailWith(key(), Cancelled(fmt::format("during the {} phase", phase)));
    };

    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < *files; ++i) {
      if (ctx.Cancelled()) return cancelled("create");
      const std::string f = name('f', i);
      Fd fd(::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!fd.ok()) {
        return FailWith(key(), SysFailure("open", fmt::format("{}, O_CREAT", f), errno));
      }
    }
    const auto t1 = Clock::now();
    for (std::int64_t i = 0; i < *files; ++i) {
      if (ctx.Cancelled()) return cancelled("stat");
      const std::string f = name('f', i);
      struct stat st {};
      if (::stat(f.c_str(), &st) != 0) return FailWith(key(), SysFailure("stat", f, errno));
    }
    const auto t2 = Clock::now();
    for (std::int64_t i = 0; i < *files; ++i) {
      if (ctx.Cancelled()) return cancelled("unlink");
      const std::string f = name('f', i);
      if (::unlink(f.c_str()) != 0) return FailWith(key(), SysFailure("unlink", f, errno));
    }
    const auto t3 = Clock::now();

    char page[4096];
    for (std::size_t i = 0; i < sizeof page; ++i) page[i] = static_cast<char>('a' + i % 26);
    std::vector<double> latencies;
    for (std::int64_t i = 0; i < *ops; ++i) {
      if (ctx.Cancelled()) return cancelled("latency");
      const std::string f = name('l', i);
      const auto start = Clock::now();
      Fd fd(::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!fd.ok()) {
        return FailWith(key(), SysFailure("open", fmt::format("{}, O_CREAT", f), errno));
      }
      if (auto fail = PwriteAll(fd.get(), page, sizeof page, 0, f)) {
        return FailWith(key(), std::move(*fail));
      }
      if (::fsync(fd.get()) != 0) return FailWith(key(), SysFailure("fsync", f, errno));
      if (::close(fd.Release()) != 0) {
        return FailWith(key(), SysFailure("close", f, errno));
      }
      latencies.push_back(Nanos(Seconds(start, Clock::now())));
    }
    if (auto f = remove.Now()) return FailWith(key(), std::move(*f));

    const auto n = static_cast<double>(*files);
    auto rate = [&](std::string metric, Clock::time_point from, Clock::time_point to) {
      const double r = n / Seconds(from, to);
      return Measurement{
          Entity(c.dir.path),
          std::move(metric),
          r,
          "ops/s",
          {r},
          {{"files", std::to_string(*files)}, {"filesystem", c.dir.fs}, {"threads", "1"}}};
    };
    const std::map<std::string, std::string> info = {
        {"operation", "open O_CREAT + 4KiB write + fsync + close"},
        {"ops", std::to_string(*ops)},
        {"filesystem", c.dir.fs}};
    ProbeResult r;
    r.measurements.push_back(rate("create_rate", t0, t1));
    r.measurements.push_back(rate("stat_rate", t1, t2));
    r.measurements.push_back(rate("unlink_rate", t2, t3));
    r.measurements.push_back(
        {Entity(c.dir.path), "p50_latency", Percentile(latencies, 50), "s", latencies, info});
    r.measurements.push_back(
        {Entity(c.dir.path), "p99_latency", Percentile(latencies, 99), "s", latencies, info});
    return r;
  }
};

}  // namespace
}  // namespace storage

std::unique_ptr<Probe> MakeStorageMetadataProbe() {
  return std::make_unique<storage::StorageMetadataProbe>();
}

}  // namespace gpuforge::probe::internal
