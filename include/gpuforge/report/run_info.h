#pragma once

// What the machine-read formats (JUnit, Prometheus, saved results) say about the run itself
// beside its verdicts: which cluster, when it started, how long it took, how it was judged.

#include <chrono>
#include <string>

namespace gpuforge::report {

struct RunInfo {
  std::string cluster;
  std::string inventory;  // the inventory file as given
  std::chrono::system_clock::time_point started;
  double seconds = 0;     // wall time of the whole run
  bool strict = false;    // --strict: warnings fail too
};

// "2026-12-01T23:04:05Z" (UTC, whole seconds).
std::string Iso8601(std::chrono::system_clock::time_point t);

}  // namespace gpuforge::report
