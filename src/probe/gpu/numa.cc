#include "probe/gpu/numa.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gpuforge/base/text.h"

namespace gpuforge::probe::internal {
namespace {

// The first line of a small sysfs file, or "" when it does not read.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

bool Whole(std::string_view s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

gpuforge::Result<std::vector<int>> ParseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::vector<int> cpus;
  std::size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    int lo = 0, hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? Whole(item, &lo) && Whole(item, &hi)
                        : Whole(item.substr(0, dash), &lo) && Whole(item.substr(dash + 1), &hi);
    if (!ok || hi < lo || hi >= CPU_SETSIZE) {
      return Error{fmt::format("'{}' is not a CPU list (like 0-3,8)", text::Printable(text, 80))};
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    at = comma + 1;
    if (comma == text.size()) break;
  }
  if (cpus.empty()) return Error{"the CPU list is empty"};
  return cpus;
}

LocalCpuBinding::LocalCpuBinding(const std::string& sysfs, const std::string& bus_id) {
  const std::string dir = sysfs + "/bus/pci/devices/" + bus_id;
  const std::string list = FirstLine(dir + "/local_cpulist");
  if (list.empty()) {
    note_ = fmt::format("not bound: {}/local_cpulist does not read", dir);
    return;
  }
  gpuforge::Result<std::vector<int>> cpus = ParseCpuList(list);
  if (!cpus.ok()) {
    note_ = fmt::format("not bound: {}/local_cpulist: {}", dir, cpus.error().message);
    return;
  }
  if (sched_getaffinity(0, sizeof previous_, &previous_) != 0) {
    note_ = fmt::format("not bound: sched_getaffinity: {}", std::strerror(errno));
    return;
  }
  // Only CPUs this thread may run on already (a cgroup or taskset may allow fewer).
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : *cpus) {
    if (CPU_ISSET(c, &previous_)) CPU_SET(c, &want);
  }
  if (CPU_COUNT(&want) == 0) {
    note_ = fmt::format("not bound: none of the CPUs local to {} ({}) is allowed to this process",
                        bus_id, list);
    return;
  }
  if (sched_setaffinity(0, sizeof want, &want) != 0) {
    note_ = fmt::format("not bound: sched_setaffinity: {}", std::strerror(errno));
    return;
  }
  bound_ = true;
  const std::string node = FirstLine(dir + "/numa_node");
  note_ = fmt::format("bound to CPUs {} (NUMA node {}), local to {}", list,
                      node.empty() ? "unknown" : node, bus_id);
}

LocalCpuBinding::~LocalCpuBinding() {
  if (bound_) sched_setaffinity(0, sizeof previous_, &previous_);
}

}  // namespace gpuforge::probe::internal
