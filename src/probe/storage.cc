// storage.read, storage.checkpoint and storage.metadata: what training asks of the file system
// it reads data from and writes checkpoints to.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "probe/probes.h"

namespace gpuforge::probe::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 50;  // 1 PiB
constexpr std::uint64_t kMaxBlock = std::uint64_t{256} << 20;
constexpr double kFreeShare = 0.9;  // never fill a file system past 90% of its free space

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Timer figures below a nanosecond are noise, and shorter numbers keep a result line small.
double Nanos(double seconds) { return std::round(seconds * 1e9) / 1e9; }

// Aligned memory: O_DIRECT needs buffers aligned to the logical block size; a page covers all.
struct FreeDeleter {
  void operator()(std::uint64_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::uint64_t[], FreeDeleter>;

Buffer Allocate(std::uint64_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kPage, bytes) != 0) return nullptr;
  return Buffer(static_cast<std::uint64_t*>(p));
}

// Removes a file or directory tree however the probe leaves: result, error or cancel.
class RemoveOnExit {
 public:
  RemoveOnExit() = default;
  explicit RemoveOnExit(std::string path) : path_(std::move(path)) {}
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  void Set(std::string path) { RemoveOnExit old(std::exchange(path_, std::move(path))); }
  // Removes now, so a failure can be reported rather than left behind quietly.
  std::optional<Failure> Now() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    std::string path = std::exchange(path_, {});
    if (ec) return SysFailure("unlink", path, ec.value());
    return std::nullopt;
  }

 private:
  std::string path_;
};

template <class F>
void RunThreads(int n, F fn) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int t = 0; t < n; ++t) threads.emplace_back(fn, t);
  for (std::thread& t : threads) t.join();
}

// Blocks [first, last) of `blocks` that thread t of n handles: disjoint, contiguous ranges.
std::pair<std::uint64_t, std::uint64_t> Share(std::uint64_t blocks, int t, int n) {
  const auto u = static_cast<std::uint64_t>(t);
  const auto m = static_cast<std::uint64_t>(n);
  return {blocks * u / m, blocks * (u + 1) / m};
}

Failure Cancelled(std::string_view what) {
  return {"cancelled", fmt::format("cancelled {}; its files were removed", what)};
}

std::optional<Failure> PwriteAll(int fd, const void* buf, std::uint64_t len, std::uint64_t off,
                                 const std::string& file) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysFailure("pwrite", fmt::format("{} at offset {}", file, off), errno);
    if (n == 0) return SysFailure("pwrite", fmt::format("{} at offset {}", file, off), ENOSPC);
    p += n;
    len -= static_cast<std::uint64_t>(n);
    off += static_cast<std::uint64_t>(n);
  }
  return std::nullopt;
}

std::optional<Failure> PreadAll(int fd, void* buf, std::uint64_t len, std::uint64_t off,
                                const std::string& file) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysFailure("pread", fmt::format("{} at offset {}", file, off), errno);
    if (n == 0) {
      return Failure{
          "short_read",
          fmt::format("pread({}): end of file at offset {}, {} bytes early", file, off, len)};
    }
    p += n;
    len -= static_cast<std::uint64_t>(n);
    off += static_cast<std::uint64_t>(n);
  }
  return std::nullopt;
}

// splitmix64's finaliser: every word of the test file differs, and differs between runs.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t PatternWord(std::uint64_t seed, std::uint64_t offset) { return Mix(seed ^ offset); }

void FillPattern(std::uint64_t* buf, std::uint64_t seed, std::uint64_t offset, std::uint64_t len) {
  for (std::uint64_t i = 0; i < len / 8; ++i) buf[i] = PatternWord(seed, offset + 8 * i);
}

// Checks the first and last word of every page: cheap enough to run inside the timed loop, and
// a page of zeros, a page from elsewhere in the file or one left by an earlier run all show.
std::optional<Failure> CheckPattern(const std::uint64_t* buf, std::uint64_t seed,
                                    std::uint64_t offset, std::uint64_t len,
                                    const std::string& file) {
  for (std::uint64_t page = 0; page < len; page += kPage) {
    for (std::uint64_t at : {page, page + kPage - 8}) {
      const std::uint64_t want = PatternWord(seed, offset + at);
      const std::uint64_t got = buf[at / 8];
      if (got != want) {
        return Failure{"wrong_data",
                       fmt::format("{} at offset {} read back {:#018x}, not the {:#018x} written",
                                   file, offset + at, got, want)};
      }
    }
  }
  return std::nullopt;
}

std::uint64_t RandomSeed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

// Result entities must fit the result line's alphabet; the exact path stays in params.
std::string Entity(std::string_view path) {
  std::string out(path.substr(0, 128));
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '/' || c == ' ' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

std::string FsName(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlay";
    case 0x6969:
      return "nfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x19830326:
      return "beegfs";
    case 0x47504653:
      return "gpfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xFF534D42:
      return "cifs";
    case 0x65735546:
      return "fuse";
    case 0x00C36400:
      return "ceph";
    case 0x5346414F:
      return "afs";
    case 0x013111A8:
      return "ibm_wekafs";
  }
  return fmt::format("{:#x}", static_cast<unsigned long>(type));
}

// The directory under test: it exists, is a directory, and has this much free space.
struct Dir {
  std::string path;
  std::uint64_t free_space = 0;
  std::string fs;
};

std::optional<Failure> Inspect(const std::string& path, Dir* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return SysFailure("stat", path, errno);
  if (!S_ISDIR(st.st_mode)) {
    return Failure{"not_a_directory", fmt::format("{} is not a directory; set path= to one", path)};
  }
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return SysFailure("statvfs", path, errno);
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return SysFailure("statfs", path, errno);
  out->path = path;
  out->free_space = std::uint64_t{vfs.f_bavail} * vfs.f_frsize;
  out->fs = FsName(static_cast<long>(fs.f_type));
  return std::nullopt;
}

std::uint64_t PhysicalMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
             : 0;
}

// Writes [0, size) of fd from `threads` threads, a block at a time; fill(t, buf, offset)
// prepares thread t's buffer for the block at `offset`.
template <class Fill>
std::optional<Failure> WriteBlocks(int fd, const std::string& file, std::uint64_t size,
                                   std::uint64_t block, std::vector<Buffer>& buffers,
                                   const Context& ctx, Fill fill) {
  FirstFailure first;
  const int threads = static_cast<int>(buffers.size());
  RunThreads(threads, [&](int t) {
    auto [from, to] = Share(size / block, t, threads);
    for (std::uint64_t b = from; b < to; ++b) {
      if (ctx.Cancelled() || first.failed()) return;
      fill(t, buffers[static_cast<std::size_t>(t)].get(), b * block);
      if (auto f =
              PwriteAll(fd, buffers[static_cast<std::size_t>(t)].get(), block, b * block, file)) {
        first.Set(std::move(*f));
        return;
      }
    }
  });
  if (auto f = first.Take()) return f;
  return std::nullopt;
}

std::optional<Failure> AllocateBuffers(int threads, std::uint64_t block, std::vector<Buffer>* out) {
  for (int t = 0; t < threads; ++t) {
    Buffer b = Allocate(block);
    if (!b) return SysFailure("posix_memalign", fmt::format("{} bytes", block), ENOMEM);
    out->push_back(std::move(b));
  }
  return std::nullopt;
}

// Parameters every storage probe shares.
struct Common {
  Dir dir;
  std::uint64_t block = 0;
  int threads = 0;
  int repeats = 0;
};

// SKIP without a path; bad_param names the parameter; stat/statvfs failures name the path.
std::optional<ProbeResult> ReadCommon(const std::string& key, const Context& ctx, bool blocks,
                                      Common* out) {
  Result<std::string> path = ctx.Text("path");
  if (!path.ok()) return Fail(key, "bad_param", path.error().message);
  if (path->empty()) {
    return Skip(key, "no_path",
                "no path= given: name a directory on the storage to measure (a training data or "
                "checkpoint mount)");
  }
  if (blocks) {
    Result<std::uint64_t> block = BytesParam(ctx, "block", kPage, kMaxBlock);
    if (!block.ok()) return Fail(key, "bad_param", block.error().message);
    if (*block % kPage != 0) {
      return Fail(key, "bad_param",
                  fmt::format("parameter block: '{}' is not a multiple of 4096 bytes (direct I/O "
                              "needs whole pages)",
                              ctx.params.at("block")));
    }
    Result<std::int64_t> threads = WholeParam(ctx, "threads", 1, 256);
    if (!threads.ok()) return Fail(key, "bad_param", threads.error().message);
    Result<std::int64_t> repeats = WholeParam(ctx, "repeats", 1, 1000);
    if (!repeats.ok()) return Fail(key, "bad_param", repeats.error().message);
    out->block = *block;
    out->threads = static_cast<int>(*threads);
    out->repeats = static_cast<int>(*repeats);
  }
  if (auto f = Inspect(*path, &out->dir)) return FailWith(key, std::move(*f));
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

class StorageReadProbe : public Probe {
 public:
  explicit StorageReadProbe(StorageReadTestHooks hooks) : hooks_(std::move(hooks)) {}

  std::string key() const override { return "storage.read"; }
  std::string description() const override {
    return "Sequential read bandwidth of the file system holding a directory, in GB/s";
  }
  std::vector<Param> params() const override {
    return {
        {"path", "", "directory on the storage to measure; without it the probe is skipped"},
        {"size", "auto",
         "test file size (\"64GiB\"), or auto: 2 x physical memory, at most 90% of the free "
         "space"},
        {"min_size", "1GiB", "smallest file size=auto may choose; less free space is an error"},
        {"threads", "4", "threads reading disjoint ranges of the file at once"},
        {"block", "1MiB", "bytes per read call, a multiple of 4KiB"},
        {"direct", "1",
         "1: O_DIRECT reads (buffered with the cache dropped where refused); 0: buffered"},
        {"repeats", "3", "timed passes over the file; the value is their median"},
    };
  }

  ProbeResult Run(const Context& ctx) override {
    try {
      return Measure(ctx);
    } catch (const std::exception& e) {
      return Fail(key(), "internal_error", e.what());
    }
  }

 private:
  ProbeResult Measure(const Context& ctx) {
    Common c;
    if (auto r = ReadCommon(key(), ctx, true, &c)) return std::move(*r);
    Result<std::uint64_t> min_size = BytesParam(ctx, "min_size", kPage, kMaxBytes);
    if (!min_size.ok()) return Fail(key(), "bad_param", min_size.error().message);
    Result<std::int64_t> direct_param = WholeParam(ctx, "direct", 0, 1);
    if (!direct_param.ok()) return Fail(key(), "bad_param", direct_param.error().message);
    Result<std::string> size_text = ctx.Text("size");
    if (!size_text.ok()) return Fail(key(), "bad_param", size_text.error().message);

    const std::uint64_t ram = PhysicalMemory();
    const auto usable =
        static_cast<std::uint64_t>(static_cast<double>(c.dir.free_space) * kFreeShare);
    std::uint64_t size = 0;
    std::string size_rule;
    if (*size_text == "auto") {
      Result<std::uint64_t> s = AutoReadSize(ram, c.dir.free_space, *min_size, c.block, &size_rule);
      if (!s.ok()) {
        return Fail(key(), "no_space", fmt::format("{}: {}", c.dir.path, s.error().message));
      }
      size = *s;
    } else {
      Result<std::uint64_t> s = BytesParam(ctx, "size", c.block, kMaxBytes);
      if (!s.ok()) return Fail(key(), "bad_param", s.error().message);
      size = *s / c.block * c.block;
      size_rule = "as given, in whole blocks";
      if (size > usable) {
        return Fail(key(), "no_space",
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

// ---------------------------------------------------------------------------------------------

class StorageCheckpointProbe : public Probe {
 public:
  std::string key() const override { return "storage.checkpoint"; }
  std::string description() const override {
    return "Checkpoint write: write a file from several threads and fsync it, in GB/s and seconds";
  }
  std::vector<Param> params() const override {
    return {
        {"path", "", "directory checkpoints are written to; without it the probe is skipped"},
        {"size", "1GiB", "bytes per checkpoint written"},
        {"threads", "4", "threads writing disjoint ranges of the file at once"},
        {"block", "1MiB", "bytes per write call, a multiple of 4KiB"},
        {"repeats", "3", "checkpoints written; the values are their medians"},
    };
  }

  ProbeResult Run(const Context& ctx) override {
    try {
      return Measure(ctx);
    } catch (const std::exception& e) {
      return Fail(key(), "internal_error", e.what());
    }
  }

 private:
  ProbeResult Measure(const Context& ctx) {
    Common c;
    if (auto r = ReadCommon(key(), ctx, true, &c)) return std::move(*r);
    Result<std::uint64_t> given = BytesParam(ctx, "size", c.block, kMaxBytes);
    if (!given.ok()) return Fail(key(), "bad_param", given.error().message);
    const std::uint64_t size = *given / c.block * c.block;
    if (static_cast<double>(size) > static_cast<double>(c.dir.free_space) * kFreeShare) {
      return Fail(key(), "no_space",
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

// ---------------------------------------------------------------------------------------------

class StorageMetadataProbe : public Probe {
 public:
  std::string key() const override { return "storage.metadata"; }
  std::string description() const override {
    return "File system metadata: create/stat/unlink rates and small synced-write latency";
  }
  std::vector<Param> params() const override {
    return {
        {"path", "", "directory on the storage to measure; without it the probe is skipped"},
        {"files", "2000", "empty files created, stated and unlinked, one thread"},
        {"latency_ops", "200",
         "timed open + 4KiB write + fsync + close operations (at most 2000, each one a sample)"},
    };
  }

  ProbeResult Run(const Context& ctx) override {
    try {
      return Measure(ctx);
    } catch (const std::exception& e) {
      return Fail(key(), "internal_error", e.what());
    }
  }

 private:
  ProbeResult Measure(const Context& ctx) {
    Common c;
    if (auto r = ReadCommon(key(), ctx, false, &c)) return std::move(*r);
    Result<std::int64_t> files = WholeParam(ctx, "files", 1, 10'000'000);
    if (!files.ok()) return Fail(key(), "bad_param", files.error().message);
    // Each latency is a sample in the result line, which the controller caps at 64 KiB.
    Result<std::int64_t> ops = WholeParam(ctx, "latency_ops", 1, 2000);
    if (!ops.ok()) return Fail(key(), "bad_param", ops.error().message);

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
  return std::make_unique<StorageReadProbe>(StorageReadTestHooks{});
}

std::unique_ptr<Probe> MakeStorageReadProbeForTest(StorageReadTestHooks hooks) {
  return std::make_unique<StorageReadProbe>(std::move(hooks));
}

std::unique_ptr<Probe> MakeStorageCheckpointProbe() {
  return std::make_unique<StorageCheckpointProbe>();
}

std::unique_ptr<Probe> MakeStorageMetadataProbe() {
  return std::make_unique<StorageMetadataProbe>();
}

}  // namespace gpuforge::probe::internal
