#pragma once

// Xid events: the NVIDIA driver's error reports in the kernel log, one line each:
//   NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
// Older drivers omit "PCI:". The log is read from /dev/kmsg (what dmesg reads), which holds
// the kernel's ring buffer since boot, so an Xid stays visible until reboot or until newer
// messages push it out.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/xid.h"

namespace gpuforge::probe::internal {

struct XidEvent {
  std::string bus_id;  // canonical ("0000:1b:00.0"), see bus_id.h
  int code = 0;        // 1 to 999999
  std::string detail;  // the rest of the line, printable ASCII, at most kXidDetailMax characters
  bool operator==(const XidEvent&) const = default;
};

inline constexpr std::size_t kXidDetailMax = 160;
inline constexpr std::size_t kXidEventsMax = 10000;

struct XidScan {
  std::vector<XidEvent> events;  // in log order, at most kXidEventsMax
  std::size_t dropped = 0;       // well-formed events past kXidEventsMax
  std::size_t malformed = 0;     // lines with the Xid marker that did not parse
};

// Whether an Xid reports the GPU or its links (fail) rather than an application (warn):
// the one list in model/xid.h, shared with the rendered alert rule.
using model::IsHardwareXid;
using model::IsInformationalXid;

// Scans log text (dmesg, journalctl -k or /dev/kmsg records, one message per line) for Xid
// lines. Hostile text is fine: every field is checked and bounded, nothing is kept raw.
XidScan ParseXid(std::string_view log);

// The kernel log from /dev/kmsg, at most `max_bytes`. An error (naming the file and errno's
// words) when it cannot be read, e.g. kernel.dmesg_restrict=1 without CAP_SYSLOG.
gpuforge::Result<std::string> ReadKernelLog(const char* path = "/dev/kmsg",
                                            std::size_t max_bytes = 32u << 20);

// The kernel log from now on: opened at its end, each Read() gives the records logged since the
// previous one (at most `max_bytes` a call). For a run's Xids, where ReadKernelLog gives the whole
// buffer since boot.
class KernelLogTail {
 public:
  // Opens `path` and moves to its end; an error as ReadKernelLog's.
  static gpuforge::Result<KernelLogTail> Open(const char* path = "/dev/kmsg");
  KernelLogTail(KernelLogTail&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  KernelLogTail& operator=(KernelLogTail&&) = delete;
  ~KernelLogTail();
  std::string Read(std::size_t max_bytes = 1u << 20);

 private:
  explicit KernelLogTail(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpuforge::probe::internal
