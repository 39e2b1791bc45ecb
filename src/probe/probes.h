#pragma once

// Factories for the storage and TCP probes (registry.cc lists them), the test hooks their
// tests reach, and the few helpers the storage probes and tcp.cc share: a file descriptor owner
// and failures that name the call. Their parameters are read through probe/params.h.

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "gpuforge/base/result.h"
#include "gpuforge/probe/probe.h"
#include "probe/gpu/failure.h"  // Failure: why a probe stopped, a stable code and words for people

namespace gpuforge::probe::internal {

// storage.read: sequential read bandwidth of a directory's file system.
std::unique_ptr<Probe> MakeStorageReadProbe();
// storage.checkpoint: time to write and fsync a checkpoint-sized file.
std::unique_ptr<Probe> MakeStorageCheckpointProbe();
// storage.metadata: create/stat/unlink rates and small synced-write latency.
std::unique_ptr<Probe> MakeStorageMetadataProbe();
// tcp.bandwidth: iperf-style TCP bandwidth to a peer agent (or over loopback).
std::unique_ptr<Probe> MakeTcpBandwidthProbe();

// TESTS ONLY. The registry never builds a probe with hooks, so nothing the agent's command
// line accepts can reach them.
struct StorageReadTestHooks {
  // Behave as if open(O_DIRECT) failed with EINVAL (file systems that refuse direct I/O;
  // tmpfs accepts it since Linux 6.6, so a test cannot count on one).
  bool refuse_direct = false;
  // Called with the test file's path once it is written and synced, before the first timed
  // read: a test may corrupt the file or cancel the probe here.
  std::function<void(const std::string& file)> after_write;
};
std::unique_ptr<Probe> MakeStorageReadProbeForTest(StorageReadTestHooks hooks);

// The file size storage.read uses for size=auto: 32 GiB (direct I/O needs no file larger than
// memory), less where the free-space margin needs it, rounded down to whole blocks. An error
// when that leaves less than `min_size`. `why` says which rule won.
Result<std::uint64_t> AutoReadSize(std::uint64_t total_space, std::uint64_t free_space,
                                   std::uint64_t min_size, std::uint64_t block, std::string* why);
// The free space storage.read's test file must leave: 10% of the file system's size, at least
// 1 GiB. A size given that would leave less is refused (storage.no_space).
std::uint64_t FreeMargin(std::uint64_t total_space);
// The name of a network or cluster file system (NFS, SMB, Lustre, GPFS, BeeGFS, CephFS, WekaFS,
// ...) from statfs(2)'s f_type or, where it publishes no magic, the mount's type in
// /proc/self/mountinfo; "" for a file system local to the node.
std::string SharedFsName(long f_type, std::string_view mount_type);

// Owns a file descriptor; closes it once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Gives up ownership, for a caller that closes the descriptor itself and checks the result.
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A failed system call: code "<call>_failed", reason "<call>(<what>): <strerror>".
inline Failure SysFailure(std::string_view call, std::string_view what, int err) {
  return {fmt::format("sys.{}_failed", call),
          fmt::format("{}({}): {}", call, what, std::generic_category().message(err))};
}

// The first failure among worker threads; the others stop when they see one.
class FirstFailure {
 public:
  void Set(Failure f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_) failure_ = std::move(f);
    failed_ = true;
  }
  bool failed() const { return failed_.load(); }
  std::optional<Failure> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(failure_, std::nullopt);
  }

 private:
  std::mutex mu_;
  std::optional<Failure> failure_;
  std::atomic<bool> failed_{false};
};

inline ProbeResult FailWith(const std::string& probe, Failure f) {
  return Fail(probe, std::move(f.code), std::move(f.reason));
}

}  // namespace gpuforge::probe::internal
