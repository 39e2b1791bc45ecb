#include "gpuforge/remote/session.h"

#include <csignal>
#include <mutex>

#include <fmt/format.h>

namespace gpuforge::remote {

std::string DescribeEnd(const ExecResult& r, const ExecOptions& o) {
  auto secs = [](std::chrono::milliseconds ms) {
    return ms.count() % 1000 == 0 ? fmt::format("{} s", ms.count() / 1000)
                                  : fmt::format("{:.1f} s", static_cast<double>(ms.count()) / 1000);
  };
  std::string tail = r.remote_stopped ? "" : " (could not confirm the process stopped on the node)";
  switch (r.end) {
    case ExecEnd::kExited:
      return fmt::format("exit {}", r.exit_status);
    case ExecEnd::kSignalled:
      return fmt::format("killed by SIG{}", r.signal);
    case ExecEnd::kTimedOut:
      return fmt::format("timed out after {}{}", secs(o.timeout), tail);
    case ExecEnd::kOutputCap:
      return fmt::format("stopped: output over the cap of {} bytes{}", o.output_cap, tail);
    case ExecEnd::kCancelled:
      return fmt::format("interrupted{}", tail);
  }
  return "?";
}

void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

}  // namespace gpuforge::remote
