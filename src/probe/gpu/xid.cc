#include "probe/gpu/xid.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <cstring>

#include "gpuforge/base/text.h"
#include "probe/gpu/bus_id.h"

namespace gpuforge::probe::internal {
namespace {

constexpr std::string_view kMarker = "NVRM: Xid (";

// One line; false when the marker is there but the rest is not an Xid report.
bool ParseLine(std::string_view line, XidEvent* out) {
  std::string_view rest = line.substr(line.find(kMarker) + kMarker.size());
  if (rest.starts_with("PCI:")) rest.remove_prefix(4);
  const std::size_t close = rest.find(')');
  if (close == std::string_view::npos || close > 24) return false;
  out->bus_id = CanonicalBusId(rest.substr(0, close));
  if (out->bus_id.empty()) return false;
  rest.remove_prefix(close + 1);
  if (!rest.starts_with(": ")) return false;
  rest.remove_prefix(2);
  std::size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  // Codes in use are below 1000; six digits leaves room and keeps a hostile number out.
  if (digits == 0 || digits > 6) return false;
  out->code = 0;
  for (char c : rest.substr(0, digits)) out->code = out->code * 10 + (c - '0');
  if (out->code == 0) return false;
  rest.remove_prefix(digits);
  if (!rest.empty() && rest[0] != ',') return false;
  if (rest.starts_with(",")) rest.remove_prefix(1);
  while (rest.starts_with(" ")) rest.remove_prefix(1);
  out->detail = text::Printable(rest, kXidDetailMax);
  return true;
}

}  // namespace

XidScan ParseXid(std::string_view log) {
  XidScan scan;
  while (!log.empty()) {
    const std::size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);  // journalctl exports, copied logs
    if (line.find(kMarker) == std::string_view::npos) continue;
    XidEvent e;
    if (!ParseLine(line, &e)) {
      ++scan.malformed;
    } else if (scan.events.size() < kXidEventsMax) {
      scan.events.push_back(std::move(e));
    } else {
      ++scan.dropped;
    }
  }
  return scan;
}

gpuforge::Result<std::string> ReadKernelLog(const char* path, std::size_t max_bytes) {
  // /dev/kmsg hands out one record per read() from the oldest still in the buffer; with
  // O_NONBLOCK the end shows as EAGAIN instead of waiting for new messages.
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  std::string log;
  char buf[8192];
  std::string error;
  while (log.size() < max_bytes) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      log.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0 || errno == EAGAIN) break;
    if (errno == EPIPE || errno == EINTR) continue;  // EPIPE: records overwritten under us
    error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    break;
  }
  close(fd);
  if (!error.empty()) return Error{error};
  return log;
}

gpuforge::Result<KernelLogTail> KernelLogTail::Open(const char* path) {
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  // /dev/kmsg: SEEK_END moves to the record after the newest (kernel/printk/printk.c,
  // devkmsg_llseek), so the first read waits for the next message. A regular file (the tests')
  // moves to its end the same way.
  if (lseek(fd, 0, SEEK_END) < 0) {
    const std::string error = fmt::format("cannot seek to the end of {}: {}", path, std::strerror(errno));
    close(fd);
    return Error{error};
  }
  return KernelLogTail(fd);
}

KernelLogTail::~KernelLogTail() {
  if (fd_ >= 0) close(fd_);
}

std::string KernelLogTail::Read(std::size_t max_bytes) {
  std::string log;
  char buf[8192];
  while (fd_ >= 0 && log.size() < max_bytes) {
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) {
      log.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == EINTR)) continue;  // EPIPE: records overwritten under us
    break;  // EAGAIN: nothing newer; 0: a file's end
  }
  return log;
}

}  // namespace gpuforge::probe::internal
