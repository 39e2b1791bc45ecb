#include "gpuforge/report/run_info.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>

namespace gpuforge::report {

std::string Iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", utc);
}

}  // namespace gpuforge::report
