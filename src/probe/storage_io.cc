// The storage probes' shared parts (storage_io.h).

#include "probe/storage_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <random>

namespace gpuforge::probe::internal::storage {

namespace {

Buffer Allocate(std::uint64_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kPage, bytes) != 0) return nullptr;
  return Buffer(static_cast<std::uint64_t*>(p));
}

// splitmix64's finaliser: every word of the test file differs, and differs between runs.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t PatternWord(std::uint64_t seed, std::uint64_t offset) { return Mix(seed ^ offset); }

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

std::optional<Failure> Inspect(const std::string& path, Dir* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return SysFailure("stat", path, errno);
  if (!S_ISDIR(st.st_mode)) {
    return Failure{"storage.not_a_directory", fmt::format("{} is not a directory; set path= to one", path)};
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

}  // namespace

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double Nanos(double seconds) { return std::round(seconds * 1e9) / 1e9; }

std::pair<std::uint64_t, std::uint64_t> Share(std::uint64_t blocks, int t, int n) {
  const auto u = static_cast<std::uint64_t>(t);
  const auto m = static_cast<std::uint64_t>(n);
  return {blocks * u / m, blocks * (u + 1) / m};
}

Failure Cancelled(std::string_view what) {
  return {"probe.cancelled", fmt::format("cancelled {}; its files were removed", what)};
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
          "storage.short_read",
          fmt::format("pread({}): end of file at offset {}, {} bytes early", file, off, len)};
    }
    p += n;
    len -= static_cast<std::uint64_t>(n);
    off += static_cast<std::uint64_t>(n);
  }
  return std::nullopt;
}

void FillPattern(std::uint64_t* buf, std::uint64_t seed, std::uint64_t offset, std::uint64_t len) {
  for (std::uint64_t i = 0; i < len / 8; ++i) buf[i] = PatternWord(seed, offset + 8 * i);
}

std::optional<Failure> CheckPattern(const std::uint64_t* buf, std::uint64_t seed,
                                    std::uint64_t offset, std::uint64_t len,
                                    const std::string& file) {
  for (std::uint64_t page = 0; page < len; page += kPage) {
    for (std::uint64_t at : {page, page + kPage - 8}) {
      const std::uint64_t want = PatternWord(seed, offset + at);
      const std::uint64_t got = buf[at / 8];
      if (got != want) {
        return Failure{"storage.wrong_data",
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

std::string Entity(std::string_view path) {
  std::string out(path.substr(0, 128));
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '/' || c == ' ' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

std::uint64_t PhysicalMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
             : 0;
}

std::optional<Failure> AllocateBuffers(int threads, std::uint64_t block, std::vector<Buffer>* out) {
  for (int t = 0; t < threads; ++t) {
    Buffer b = Allocate(block);
    if (!b) return SysFailure("posix_memalign", fmt::format("{} bytes", block), ENOMEM);
    out->push_back(std::move(b));
  }
  return std::nullopt;
}

std::optional<ProbeResult> ReadCommon(const std::string& key, const Context& ctx, bool blocks,
                                      Common* out) {
  Result<std::string> path = ctx.Text("path");
  if (!path.ok()) return Fail(key, "probe.bad_param", path.error().message);
  if (path->empty()) {
    return Skip(key, "storage.no_path",
                "no path= given: name a directory on the storage to measure (a training data or "
                "checkpoint mount)");
  }
  if (blocks) {
    Result<std::uint64_t> block = Bytes(ctx, kBlockParam);
    if (!block.ok()) return Fail(key, "probe.bad_param", block.error().message);
    if (*block % kPage != 0) {
      return Fail(key, "probe.bad_param",
                  fmt::format("parameter block: '{}' is not a multiple of 4096 bytes (direct I/O "
                              "needs whole pages)",
                              ctx.params.at("block")));
    }
    Result<std::int64_t> threads = Whole(ctx, kThreadsParam);
    if (!threads.ok()) return Fail(key, "probe.bad_param", threads.error().message);
    Result<std::int64_t> repeats = Whole(ctx, kRepeatsParam);
    if (!repeats.ok()) return Fail(key, "probe.bad_param", repeats.error().message);
    out->block = *block;
    out->threads = static_cast<int>(*threads);
    out->repeats = static_cast<int>(*repeats);
  }
  if (auto f = Inspect(*path, &out->dir)) return FailWith(key, std::move(*f));
  return std::nullopt;
}

}  // namespace gpuforge::probe::internal::storage
