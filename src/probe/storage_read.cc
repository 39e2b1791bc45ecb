// storage.read: sequential read bandwidth of a directory's file system, from a test file of
// bounded size read back with direct I/O and checked.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
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

namespace {

// size=auto. Direct I/O reads from the device whatever the page cache holds, so the file need
// not outgrow memory (the old 2 x RAM rule wrote ~4 TiB per 2 TiB node, and that times every
// node into a shared file system). 32 GiB streams for 4 s at the pass mark of an 8-GPU node
// (8 GB/s) and over 0.5 s at 50 GB/s, a 400 Gb/s client's line rate: long enough that thread
// start and the first request's latency stay under 1%. Where O_DIRECT is refused, the pages are
// dropped before each pass (posix_fadvise DONTNEED), so the cache still serves nothing.
constexpr std::uint64_t kAutoReadSize = std::uint64_t{32} << 30;
// The test file never takes the file system below 10% of its size free (at least 1 GiB):
// other users' jobs keep room, and nearly full file systems (ext4, XFS, Lustre OSTs) allocate
// slowly, which would be measured instead of the storage.
constexpr std::uint64_t kMinFreeMargin = std::uint64_t{1} << 30;
constexpr const char* kMarginRule = "10% of the file system's size, at least 1 GiB";

}  // namespace

namespace storage {
namespace {

// size is a kBytes row read only when it is not "auto".
const ParamSpec kSize{"size", ParamKind::kBytes, "auto", 0, kMaxBytes,
                      "test file size (\"64GiB\"), or auto: 32GiB, less where the free-space margin needs it"};
const ParamSpec kMinSize{"min_size", ParamKind::kBytes, "1GiB", kPage, kMaxBytes,
                         "smallest file size=auto may choose; a file system without room for it is an error"};

// What the margin and the shared-file-system note need beyond storage_io's Dir: the file
// system's size and its type.
struct Space {
  std::uint64_t total = 0;
  long magic = 0;
};
std::optional<Failure> SpaceOf(const std::string& path, Space* out) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return SysFailure("statvfs", path, errno);
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return SysFailure("statfs", path, errno);
  out->total = std::uint64_t{vfs.f_blocks} * vfs.f_frsize;
  out->magic = static_cast<long>(fs.f_type);
  return std::nullopt;
}

// The type /proc/self/mountinfo gives the mount holding `path` ("nfs4", "wekafs",
// "fuse.glusterfs"): the longest mount point that contains it. "" when unreadable.
std::string MountType(const std::string& path) {
  std::error_code ec;
  const std::string real = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) return "";
  std::ifstream in("/proc/self/mountinfo");
  std::string line, best_type;
  std::size_t best = 0;
  while (std::getline(in, line)) {
    // "36 35 98:0 /root /mnt/point rw,noatime shared:1 - ext4 /dev/sda1 rw": the fifth field is
    // the mount point (spaces as \040), the first after " - " the type (proc_pid_mountinfo(5)).
    std::size_t at = 0;
    for (int field = 0; field < 4 && at != std::string::npos; ++field) at = line.find(' ', at + 1);
    const std::size_t dash = line.find(" - ");
    if (at == std::string::npos || dash == std::string::npos) continue;
    const std::size_t end = line.find(' ', at + 1);
    std::string mount = line.substr(at + 1, end - at - 1);
    for (std::size_t sp; (sp = mount.find("\\040")) != std::string::npos;) mount.replace(sp, 4, " ");
    const bool inside = real == mount || mount == "/" ||
                        (real.starts_with(mount) && real.size() > mount.size() && real[mount.size()] == '/');
    if (!inside || mount.size() < best) continue;
    best = mount.size();
    const std::size_t type_end = line.find(' ', dash + 3);
    best_type = line.substr(dash + 3, type_end == std::string::npos ? std::string::npos : type_end - dash - 3);
  }
  return best_type;
}
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
        kThreadsParam.Documented("threads reading disjoint ranges of the file at once"),
        kBlockParam.Documented("bytes per read call, a multiple of 4KiB"),
        kDirect,
        kRepeatsParam.Documented("timed passes over the file; the value is their median"),
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

    Space space;
    if (auto f = SpaceOf(c.dir.path, &space)) return FailWith(key(), std::move(*f));
    const std::string shared = SharedFsName(space.magic, MountType(c.dir.path));
    std::uint64_t size = 0;
    std::string size_rule;
    if (*size_text == "auto") {
      Result<std::uint64_t> s = AutoReadSize(space.total, c.dir.free_space, *min_size, c.block, &size_rule);
      if (!s.ok()) {
        return Fail(key(), "storage.no_space", fmt::format("{}: {}", c.dir.path, s.error().message));
      }
      size = *s;
    } else {
      Result<std::uint64_t> s = Bytes(ctx, kSize.Within(c.block, kMaxBytes));
      if (!s.ok()) return Fail(key(), "probe.bad_param", s.error().message);
      size = *s / c.block * c.block;
      size_rule = "as given, in whole blocks";
      const std::uint64_t margin = FreeMargin(space.total);
      if (size > c.dir.free_space || c.dir.free_space - size < margin) {
        return Fail(key(), "storage.no_space",
                    fmt::format("{}: a {}-byte test file would leave less than {} bytes free ({}), of the {} "
                                "bytes free now",
                                c.dir.path, size, margin, kMarginRule, c.dir.free_space));
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
              {"free_space", std::to_string(c.dir.free_space)},
              {"fs_size", std::to_string(space.total)},
              {"filesystem", c.dir.fs},
              {"threads", std::to_string(threads)},
              {"block", std::to_string(c.block)},
              {"direct", direct ? "1" : "0"},
              {"verified", "first and last word of every 4KiB page"}};
    if (!direct) m.info["direct_reason"] = direct_note;
    if (!shared.empty()) m.info["shared_fs"] = shared;
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

std::uint64_t FreeMargin(std::uint64_t total_space) {
  return std::max(total_space / 10, kMinFreeMargin);
}

Result<std::uint64_t> AutoReadSize(std::uint64_t total_space, std::uint64_t free_space,
                                   std::uint64_t min_size, std::uint64_t block, std::string* why) {
  const std::uint64_t margin = FreeMargin(total_space);
  const std::uint64_t room = free_space > margin ? free_space - margin : 0;
  std::uint64_t size = std::min(kAutoReadSize, room);
  size = block == 0 ? size : size / block * block;
  if (size < min_size || size == 0) {
    return Error{fmt::format(
        "size=auto: {} bytes free, and {} must stay free ({}), leaves room for {} bytes, less than "
        "min_size {}",
        free_space, margin, kMarginRule, size, min_size)};
  }
  *why = size == kAutoReadSize
             ? fmt::format("auto: {} bytes (direct I/O needs no file larger than memory)", kAutoReadSize)
             : fmt::format("auto: the room above the free-space margin ({} bytes kept free, {})", margin,
                           kMarginRule);
  return size;
}

// Network and cluster file systems by statfs(2) f_type, and by the mount's type for those that
// publish no magic (WekaFS) or hide behind FUSE. Sources: linux/magic.h (NFS_SUPER_MAGIC,
// SMB_SUPER_MAGIC, CIFS_SUPER_MAGIC, SMB2_SUPER_MAGIC, CEPH_SUPER_MAGIC, AFS_SUPER_MAGIC,
// AFS_FS_MAGIC, CODA_SUPER_MAGIC, V9FS_MAGIC, OCFS2_SUPER_MAGIC); linux/gfs2_ondisk.h
// (GFS2_MAGIC); Lustre's lustre/include/uapi/linux/lustre/lustre_user.h (LL_SUPER_MAGIC);
// BeeGFS's client_module/source/filesystem/FhgfsOpsSuper.h (BEEGFS_MAGIC); "GPFS" as IBM
// Storage Scale sets it (MPICH ROMIO's ad_gpfs: GPFS_SUPER_MAGIC); ROMIO's PVFS2_SUPER_MAGIC
// (OrangeFS); IBRIX_SUPER_MAGIC (HPE IBRIX, as coreutils' stat lists it).
std::string SharedFsName(long f_type, std::string_view mount_type) {
  struct Magic {
    unsigned long value;
    const char* name;
  };
  static constexpr std::array<Magic, 16> kMagics = {{
      {0x6969, "nfs"},        {0x517B, "smb"},       {0xFF534D42, "cifs"},   {0xFE534D42, "smb2"},
      {0x00C36400, "ceph"},   {0x5346414F, "afs"},   {0x6B414653, "kafs"},   {0x73757245, "coda"},
      {0x01021997, "9p"},     {0x7461636F, "ocfs2"}, {0x01161970, "gfs2"},   {0x0BD00BD0, "lustre"},
      {0x19830326, "beegfs"}, {0x47504653, "gpfs"},  {0x20030528, "orangefs"}, {0x013111A8, "ibrix"},
  }};
  for (const Magic& m : kMagics) {
    if (static_cast<unsigned long>(f_type) == m.value) return m.name;
  }
  static constexpr std::array<std::string_view, 12> kTypes = {
      "wekafs", "nfs4", "lustre", "beegfs", "gpfs", "ceph", "fuse.glusterfs", "fuse.ceph-fuse",
      "fuse.juicefs", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse"};
  for (std::string_view t : kTypes) {
    if (mount_type == t) return std::string(t);
  }
  return "";
}

std::unique_ptr<Probe> MakeStorageReadProbe() {
  return std::make_unique<storage::StorageReadProbe>(StorageReadTestHooks{});
}

std::unique_ptr<Probe> MakeStorageReadProbeForTest(StorageReadTestHooks hooks) {
  return std::make_unique<storage::StorageReadProbe>(std::move(hooks));
}

}  // namespace gpuforge::probe::internal
