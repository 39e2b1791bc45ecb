// storage.read: sequential read bandwidth of a directory's file system, from a file too
// large for the page cache, read back with direct I/O and checked.

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

// size is a kBytes row read only when it is not "auto".
const ParamSpec kSize{"size", ParamKind::kBytes, "auto", 0, kMaxBytes,
                      "test file size (\"64GiB\"), or auto: 2 x physical memory, at most 90% of the free space"};
const ParamSpec kMinSize{"min_size", ParamKind::kBytes, "1GiB", kPage, kMaxBytes,
                         "smallest file size=auto may choose; less free space is an error"};
const ParamSpec kDirect{"direct", ParamKind::kWhole, "1", 0, 1,
                        "1: O_DIRECT reads (buffered with the cache dropped where refused); 0: buffered"};

class StorageReadProbe : public Probe {
 public:
  explicit StorageReadProbe(StorageReadTestHooks hooks) : hooks_(std::move(hooks)) {}

  std::string key() const override { return "storage.read"; }
  std::string description() const override {
    return "Sequential read bandwidth of the file system holding a directory, in GB/s";
  }
  std::vector<Param> params() const override {
    return {
        {"path", ParamKind::kText, "", 0, 0, "directory on the storage to measure; without it the probe is skipped"},
        kSize,
        kMinSize,
        kThreadsParam.Helped("threads reading disjoint ranges of the file at once"),
        kBlockParam.Helped("bytes per read call, a multiple of 4KiB"),
        kDirect,
        kRepeatsParam.Helped("timed passes over the file; the value is their median"),
    };
  }

  // RunProbe catches what a slip throws.
  ProbeResult Run(const Context& ctx) override { return Measure(ctx); }

 private:
  ProbeResult Measure(const Context& ctx) {
    Common c;
    if (auto r = ReadCommon(key(), ctx, true, &c)) return std::move(*r);
    Result<std::uint64_t> min_size = Bytes(ctx, kMinSize);
    if (!min_size.ok()) return Fail(key(), "probe.bad_param", min_size.error().message);
    Result<std::int64_t> direct_param = Whole(ctx, kDirect);
    if (!direct_param.ok()) return Fail(key(), "probe.bad_param", direct_param.error().message);
    Result<std::string> size_text = ctx.Text("size");
    if (!size_text.ok()) return Fail(key(), "probe.bad_param", size_text.error().message);

    const std::uint64_t ram = PhysicalMemory();
    const auto usable =
        static_cast<std::uint64_t>(static_cast<double>(c.dir.free_space) * kFreeShare);
    std::uint64_t size = 0;
    std::string size_rule;
    if (*size_text == "auto") {
      Result<std::uint64_t> s = AutoReadSize(ram, c.dir.free_space, *min_size, c.block, &size_rule);
      if (!s.ok()) {
        return Fail(key(), "storage.no_space", fmt::format("{}: {}", c.dir.path, s.error().message));
      }
      size = *s;
    } else {
      Result<std::uint64_t> s = Bytes(ctx, kSize.Within(c.block, kMaxBytes));
      if (!s.ok()) return Fail(key(), "probe.bad_param", s.error().message);
      size = *s / c.block * c.block;
      size_rule = "as given, in whole blocks";
      if (size > usable) {
        return Fail(key(), "storage.no_space",
                    fmt::format("{}: a {}-byte test file does not fit in 90% of the {} bytes free",
                                c.dir.path, size, c.dir.free_space));
      }
    }
    const std::uint64_t blocks = size / c.block;
    const int threads =
        static_cast<int>(std::min<std::uint64_t>(blocks, static_cast<std::uint64_t>(c.threads)));

    // The file, written untimed and synced, so that every timed byte comes from the device.
    std::string file = c.dir.path + "/.gpuforge-storage-read-XXXXXX";
    Fd wfd(::mkostemp(file.data(), O_CLOEXEC));
    if (!wfd.ok()) return FailWith(key(), SysFailure("mkstemp", file, errno));
    RemoveOnExit remove(file);
    std::vector<Buffer> buffers;
    if (auto f = AllocateBuffers(threads, c.block, &buffers)) return FailWith(key(), std::move(*f));
    const std::uint64_t seed = RandomSeed();
    auto fill = [&](int, std::uint64_t* buf, std::uint64_t offset) {
      FillPattern(buf, seed, offset, c.block);
    };
    if (auto f = WriteBlocks(wfd.get(), file, size, c.block, buffers, ctx, fill)) {
      return FailWith(key(), std::move(*f));
    }
    if (ctx.Cancelled()) return FailWith(key(), Cancelled("while writing the test file"));
    if (::fsync(wfd.get()) != 0) return FailWith(key(), SysFailure("fsync", file, errno));
    wfd.Reset();
    if (hooks_.after_write) hooks_.after_write(file);

    Fd rfd;
    std::string direct_note;
    if (auto f =
            OpenForRead(file, *direct_param == 1, buffers[0].get(), c.block, &rfd, &direct_note)) {
      return FailWith(key(), std::move(*f));
    }
    const bool direct = direct_note.empty();

    std::vector<double> samples;
    for (int rep = 0; rep < c.repeats; ++rep) {
      if (ctx.Cancelled()) {
        return FailWith(key(), Cancelled(fmt::format("after {} of {} passes", rep, c.repeats)));
      }
      // Buffered reads would be served from memory; dropping the (clean) pages sends them to
      // the device again.
      if (!direct) ::posix_fadvise(rfd.get(), 0, 0, POSIX_FADV_DONTNEED);
      FirstFailure first;
      const auto start = Clock::now();
      RunThreads(threads, [&](int t) {
        std::uint64_t* buf = buffers[static_cast<std::size_t>(t)].get();
        auto [from, to] = Share(blocks, t, threads);
        for (std::uint64_t b = from; b < to; ++b) {
          if (ctx.Cancelled() || first.failed()) return;
          std::optional<Failure> f = PreadAll(rfd.get(), buf, c.block, b * c.block, file);
          if (!f) f = CheckPattern(buf, seed, b * c.block, c.block, file);
          if (f) return first.Set(std::move(*f));
        }
      });
      const double seconds = Seconds(start, Clock::now());
      if (auto f = first.Take()) return FailWith(key(), std::move(*f));
      if (ctx.Cancelled()) {
        return FailWith(key(), Cancelled(fmt::format("during pass {} of {}", rep + 1, c.repeats)));
      }
      samples.push_back(static_cast<double>(size) / 1e9 / seconds);
    }
    rfd.Reset();
    if (auto f = remove.Now()) return FailWith(key(), std::move(*f));

    ProbeResult r;
    Measurement m;
    m.entity = Entity(c.dir.path);
    m.metric = "read_bandwidth";
    m.value = Median(samples);
    m.unit = "GB/s";
    m.samples = samples;
    m.info = {{"size", std::to_string(size)},
              {"size_rule", size_rule},
              {"ram", std::to_string(ram)},
              {"free_space", std::to_string(c.dir.free_space)},
              {"filesystem", c.dir.fs},
              {"threads", std::to_string(threads)},
              {"block", std::to_string(c.block)},
              {"direct", direct ? "1" : "0"},
              {"verified", "first and last word of every 4KiB page"}};
    if (!direct) m.info["direct_reason"] = direct_note;
    r.measurements.push_back(std::move(m));
    return r;
  }

  // Opens the file for the timed reads. O_DIRECT when asked and the file system takes it (a
  // first read proves it); otherwise buffered, saying why in `note`.
  std::optional<Failure> OpenForRead(const std::string& file, bool want_direct, std::uint64_t* buf,
                                     std::uint64_t block, Fd* out, std::string* note) const {
    if (!want_direct) {
      *note = "direct=0 was asked for; buffered reads after posix_fadvise(DONTNEED)";
    } else if (hooks_.refuse_direct) {
      *note =
          "open(O_DIRECT): Invalid argument (simulated by a test); buffered reads after "
          "posix_fadvise(DONTNEED)";
    } else {
      Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
      if (fd.ok()) {
        const ssize_t n = ::pread(fd.get(), buf, block, 0);
        if (n >= 0) {
          *out = std::move(fd);
          return std::nullopt;
        }
        if (errno != EINVAL) return SysFailure("pread", fmt::format("{}, O_DIRECT", file), errno);
        *note =
            "pread on an O_DIRECT file: Invalid argument; buffered reads after "
            "posix_fadvise(DONTNEED)";
      } else if (errno == EINVAL) {
        *note =
            "open(O_DIRECT): Invalid argument, the file system refuses direct I/O; buffered "
            "reads after posix_fadvise(DONTNEED)";
      } else {
        return SysFailure("open", fmt::format("{}, O_RDONLY|O_DIRECT", file), errno);
      }
    }
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) return SysFailure("open", fmt::format("{}, O_RDONLY", file), errno);
    *out = std::move(fd);
    return std::nullopt;
  }

  StorageReadTestHooks hooks_;
};

}  // namespace
}  // namespace storage

using storage::kFreeShare;

Result<std::uint64_t> AutoReadSize(std::uint64_t ram, std::uint64_t free_space,
                                   std::uint64_t min_size, std::uint64_t block, std::string* why) {
  const std::uint64_t want = 2 * ram;
  const auto usable = static_cast<std::uint64_t>(static_cast<double>(free_space) * kFreeShare);
  std::uint64_t size = std::min(want, usable);
  size = block == 0 ? size : size / block * block;
  if (size < min_size || size == 0) {
    return Error{fmt::format(
        "size=auto wants 2 x RAM = {} bytes, 90% of the {} bytes free allows {}, less than "
        "min_size {}",
        want, free_space, size, min_size)};
  }
  *why = want <= usable ? fmt::format("auto: 2 x RAM ({} bytes)", ram)
                        : fmt::format("auto: 90% of the free space ({} bytes); 2 x RAM would be {}",
                                      free_space, want);
  return size;
}

std::unique_ptr<Probe> MakeStorageReadProbe() {
  return std::make_unique<storage::StorageReadProbe>(StorageReadTestHooks{});
}

std::unique_ptr<Probe> MakeStorageReadProbeForTest(StorageReadTestHooks hooks) {
  return std::make_unique<storage::StorageReadProbe>(std::move(hooks));
}

}  // namespace gpuforge::probe::internal
