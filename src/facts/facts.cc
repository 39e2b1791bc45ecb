#include "gpuforge/facts/facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "facts/text.h"

namespace gpuforge::facts {

const char* ToString(Outcome v) {
  switch (v) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kAbsent:
      return "absent";
    case Outcome::kUnparsed:
      return "unparsed";
    case Outcome::kTooLarge:
      return "too_large";
  }
  return "?";
}

const char* ToString(ServiceState v) {
  switch (v) {
    case ServiceState::kActive:
      return "active";
    case ServiceState::kInactive:
      return "inactive";
    case ServiceState::kFailed:
      return "failed";
    case ServiceState::kActivating:
      return "activating";
    case ServiceState::kAbsent:
      return "absent";
    case ServiceState::kUnknown:
      return "unknown";
  }
  return "?";
}

std::optional<int> PcieGeneration(double gts) {
  struct Gen {
    double gts;
    int gen;
  };
  static constexpr Gen kGens[] = {{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}, {128, 7}};
  for (const Gen& g : kGens) {
    if (std::fabs(gts - g.gts) < 0.01) return g.gen;
  }
  return std::nullopt;
}

std::string TopoMatrix::Link(std::string_view from, std::string_view to) const {
  auto col = std::find(devices.begin(), devices.end(), to);
  if (col == devices.end()) return "";
  for (const TopoRow& r : rows) {
    if (r.device != from) continue;
    auto i = static_cast<std::size_t>(col - devices.begin());
    return i < r.links.size() ? r.links[i] : "";
  }
  return "";
}

std::optional<int> NvLinkCount(std::string_view cell) {
  if (!cell.starts_with("NV")) return std::nullopt;
  return text::ToIntIn(cell.substr(2), 1, 1000);
}

const IbPort* IbDevice::FindPort(int p) const {
  for (const IbPort& x : ports) {
    if (x.port == p) return &x;
  }
  return nullptr;
}

const Section* NodeFacts::FindSection(std::string_view name) const {
  for (const Section& s : sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool NodeFacts::HasNvidiaDriver() const {
  const Section* s = FindSection("nvidia-smi-query");
  return s && s->outcome == Outcome::kOk && !gpus.empty();
}

namespace {

std::string ModuleKey(std::string_view name) {
  std::string k(name);
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

}  // namespace

bool NodeFacts::HasModule(std::string_view name) const {
  if (!modules) return false;
  std::string key = ModuleKey(name);
  return std::any_of(modules->begin(), modules->end(),
                     [&](const std::string& m) { return ModuleKey(m) == key; });
}

const Service* NodeFacts::FindService(std::string_view name) const {
  for (const Service& s : services) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const IbDevice* NodeFacts::FindIbDevice(std::string_view name) const {
  for (const IbDevice& d : ib) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

int NodeFacts::PciGpuCount() const {
  return static_cast<int>(std::count_if(
      pci.begin(), pci.end(), [](const PciDevice& d) { return d.kind == PciKind::kGpu; }));
}

std::optional<std::string> NodeFacts::DriverVersion() const {
  if (driver && !driver->version.empty()) return driver->version;
  for (const Gpu& g : gpus) {
    if (!g.driver_version.empty()) return g.driver_version;
  }
  return std::nullopt;
}

std::optional<std::string> NormalizeBusId(std::string_view id) {
  id = text::Trim(id);
  // domain:bus:device.function, domain 4 or 8 hex digits (nvidia-smi pads to 8).
  std::size_t c1 = id.find(':');
  if (c1 == std::string_view::npos) return std::nullopt;
  std::string_view domain = id.substr(0, c1);
  std::string_view rest = id.substr(c1 + 1);
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return std::nullopt;
  if (domain.size() < 4 || domain.size() > 8) return std::nullopt;
  auto hex = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) != 0;
    });
  };
  if (!hex(domain) || !hex(rest.substr(0, 2)) || !hex(rest.substr(3, 2)) || rest[6] < '0' ||
      rest[6] > '7') {
    return std::nullopt;
  }
  // Linux prints the domain with %04x (VMD domains have 5 digits); nvidia-smi pads to 8.
  std::optional<std::uint64_t> d = text::ToHex(domain);
  if (!d) return std::nullopt;
  std::string out = fmt::format("{:04x}:{}", *d, rest);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace gpuforge::facts
