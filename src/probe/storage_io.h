#pragma once

// storage.read, storage.checkpoint and storage.metadata: what training asks of the file system
// it reads data from and writes checkpoints to. The parts the three share (one probe a file:
// storage_read.cc, storage_checkpoint.cc, storage_metadata.cc): aligned buffers, whole-file
// reads and writes from several threads, the check pattern, the directory under test and the
// parameters every storage probe takes. Defined in storage_io.cc.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "probe/probes.h"

namespace gpuforge::probe::internal::storage {

using Clock = std::chrono::steady_clock;

inline constexpr std::uint64_t kPage = 4096;
inline constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 50;  // 1 PiB
inline constexpr std::uint64_t kMaxBlock = std::uint64_t{256} << 20;

// The rows ReadCommon reads; each probe lists them with its own help.
inline const ParamSpec kBlockParam{"block", ParamKind::kBytes, "1MiB", kPage, kMaxBlock, ""};
inline const ParamSpec kThreadsParam{"threads", ParamKind::kWhole, "4", 1, 256, ""};
inline const ParamSpec kRepeatsParam{"repeats", ParamKind::kWhole, "3", 1, 1000, ""};
inline constexpr double kFreeShare = 0.9;  // never fill a file system past 90% of its free space

double Seconds(Clock::time_point from, Clock::time_point to);

// Timer figures below a nanosecond are noise, and shorter numbers keep a result line small.
double Nanos(double seconds);

// Aligned memory: O_DIRECT needs buffers aligned to the logical block size; a page covers all.
struct FreeDeleter {
  void operator()(std::uint64_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::uint64_t[], FreeDeleter>;

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
std::pair<std::uint64_t, std::uint64_t> Share(std::uint64_t blocks, int t, int n);

// "cancelled": the probe stopped `what` (and removed its files).
Failure Cancelled(std::string_view what);

// pwrite / pread of all `len` bytes at `off`, retried on EINTR; errors name `file` and the offset.
std::optional<Failure> PwriteAll(int fd, const void* buf, std::uint64_t len, std::uint64_t off,
                                 const std::string& file);
std::optional<Failure> PreadAll(int fd, void* buf, std::uint64_t len, std::uint64_t off,
                                const std::string& file);

// The test file's contents: a word per 8 bytes from `seed` and the word's offset.
void FillPattern(std::uint64_t* buf, std::uint64_t seed, std::uint64_t offset, std::uint64_t len);
// Checks the first and last word of every page: cheap enough to run inside the timed loop, and
// a page of zeros, a page from elsewhere in the file or one left by an earlier run all show.
std::optional<Failure> CheckPattern(const std::uint64_t* buf, std::uint64_t seed,
                                    std::uint64_t offset, std::uint64_t len,
                                    const std::string& file);
std::uint64_t RandomSeed();

// Result entities must fit the result line's alphabet; the exact path stays in params.
std::string Entity(std::string_view path);

// The directory under test: it exists, is a directory, and has this much free space.
struct Dir {
  std::string path;
  std::uint64_t free_space = 0;
  std::string fs;
};

std::uint64_t PhysicalMemory();

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

// One aligned buffer of `block` bytes per thread.
std::optional<Failure> AllocateBuffers(int threads, std::uint64_t block, std::vector<Buffer>* out);

// Parameters every storage probe shares.
struct Common {
  Dir dir;
  std::uint64_t block = 0;
  int threads = 0;
  int repeats = 0;
};

// SKIP without a path; bad_param names the parameter; stat/statvfs failures name the path.
std::optional<ProbeResult> ReadCommon(const std::string& key, const Context& ctx, bool blocks,
                                      Common* out);

}  // namespace gpuforge::probe::internal::storage
