// storage.checkpoint: time to write and fsync a checkpoint-sized file.

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

const ParamSpec kSize{"size", ParamKind::kBytes, "1GiB", 0, kMaxBytes, "bytes per checkpoint written"};

class StorageCheckpointProbe : public Probe {
 public:
  std::string key() const override { return "storage.checkpoint"; }
  std::string description() const override {
    return "Checkpoint write: write a file from several threads and fsync it, in GB/s and seconds";
  }
  std::vector<Param> params() const override {
    return {
        {"path", ParamKind::kText, "", 0, 0, "directory checkpoints are written to; without it the probe is skipped"},
        kSize,
        kThreadsParam.Documented("threads writing disjoint ranges of the file at once"),
        kBlockParam.Documented("bytes per write call, a multiple of 4KiB"),
        kRepeatsParam.Documented("checkpoints written; the values are their medians"),
    };
  }

  // RunProbe catches what a slip throws.
  ProbeResult Run(const Context& ctx) override { return Measure(ctx); }

 private:
  ProbeResult Measure(const Context& ctx) {
    Common c;
    if (auto r = ReadCommon(key(), ctx, true, &c)) return std::move(*r);
    Result<std::uint64_t> given = Bytes(ctx, kSize.Within(c.block, kMaxBytes));
    if (!given.ok()) return Fail(key(), "probe.bad_param", given.error().message);
    const std::uint64_t size = *given / c.block * c.block;
    if (static_cast<double>(size) > static_cast<double>(c.dir.free_space) * kFreeShare) {
      return Fail(key(), "storage.no_space",
                  fmt::format("{}: a {}-byte checkpoint does not fit in 90% of the {} bytes free",
                              c.dir.path, size, c.dir.free_space));
    }
    const std::uint64_t blocks = size / c.block;
    const int threads =
        static_cast<int>(std::min<std::uint64_t>(blocks, static_cast<std::uint64_t>(c.threads)));

    // Random bytes, with each page stamped with its block number, so neither compression nor
    // deduplication can shortcut the write.
    std::vector<Buffer> buffers;
    if (auto f = AllocateBuffers(threads, c.block, &buffers)) return FailWith(key(), std::move(*f));
    std::mt19937_64 rng(RandomSeed());
    for (Buffer& b : buffers) {
      for (std::uint64_t i = 0; i < c.block / 8; ++i) b[i] = rng();
    }
    auto fill = [&](int, std::uint64_t* buf, std::uint64_t offset) {
      for (std::uint64_t page = 0; page < c.block; page += kPage) buf[page / 8] = offset + page;
    };

    std::vector<double> bandwidth;
    std::vector<double> seconds;
    for (int rep = 0; rep < c.repeats; ++rep) {
      if (ctx.Cancelled()) {
        return FailWith(key(),
                        Cancelled(fmt::format("after {} of {} checkpoints", rep, c.repeats)));
      }
      const std::string file =
          fmt::format("{}/.gpuforge-storage-checkpoint-{}-{:016x}", c.dir.path, ::getpid(), rng());
      RemoveOnExit remove;
      const auto start = Clock::now();
      Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!fd.ok()) {
        return FailWith(key(), SysFailure("open", fmt::format("{}, O_CREAT", file), errno));
      }
      remove.Set(file);
      if (auto f = WriteBlocks(fd.get(), file, size, c.block, buffers, ctx, fill)) {
        return FailWith(key(), std::move(*f));
      }
      if (ctx.Cancelled()) {
        return FailWith(key(),
                        Cancelled(fmt::format("during checkpoint {} of {}", rep + 1, c.repeats)));
      }
      if (::fsync(fd.get()) != 0) return FailWith(key(), SysFailure("fsync", file, errno));
      const double s = Seconds(start, Clock::now());
      fd.Reset();
      if (auto f = remove.Now()) return FailWith(key(), std::move(*f));
      seconds.push_back(s);
      bandwidth.push_back(static_cast<double>(size) / 1e9 / s);
    }

    const std::map<std::string, std::string> info = {
        {"size", std::to_string(size)},
        {"threads", std::to_string(threads)},
        {"block", std::to_string(c.block)},
        {"filesystem", c.dir.fs},
        {"free_space", std::to_string(c.dir.free_space)},
        {"timed", "open to fsync done"}};
    ProbeResult r;
    r.measurements.push_back(
        {Entity(c.dir.path), "write_bandwidth", Median(bandwidth), "GB/s", bandwidth, info});
    r.measurements.push_back(
        {Entity(c.dir.path), "checkpoint_seconds", Median(seconds), "s", seconds, info});
    return r;
  }
};

}  // namespace
}  // namespace storage

std::unique_ptr<Probe> MakeStorageCheckpointProbe() {
  return std::make_unique<storage::StorageCheckpointProbe>();
}

}  // namespace gpuforge::probe::internal
