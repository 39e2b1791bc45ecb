// Parsers for the operating-system sections: os-release, uname, lscpu, meminfo, NUMA sysfs,
// modules, services, memlock and installed versions.

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "facts/text.h"
#include "gpuforge/base/names.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

using text::LineError;
using text::Quote;

constexpr std::uint64_t kKiB = 1024;

// "a\"b" inside double quotes: os-release follows shell quoting.
std::optional<std::string> Unquote(std::string_view v) {
  if (v.empty()) return std::string();
  char q = v.front();
  if (q != '"' && q != '\'') {
    if (v.find_first_of(" \t\"'`$") != std::string_view::npos) return std::nullopt;
    return std::string(v);
  }
  if (v.size() < 2 || v.back() != q) return std::nullopt;
  v = v.substr(1, v.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (q == '"' && v[i] == '\\' && i + 1 < v.size()) {
      out.push_back(v[++i]);
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

bool IsEnvKey(std::string_view k) {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

Result<OsRelease> ParseOsRelease(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  OsRelease os;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = text::Trim(lines[i]);
    if (line.empty() || line.front() == '#') continue;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || !IsEnvKey(line.substr(0, eq))) {
      return LineError(i, fmt::format("expected KEY=value, got {}", Quote(line)));
    }
    std::string_view key = line.substr(0, eq);
    std::optional<std::string> value = Unquote(line.substr(eq + 1));
    if (!value) return LineError(i, fmt::format("{}: badly quoted value", key));
    if (key == "ID") os.id = *value;
    if (key == "VERSION_ID") os.version_id = *value;
    if (key == "PRETTY_NAME") os.pretty_name = *value;
  }
  // os-release(5): ID defaults to "linux".
  if (os.id.empty()) os.id = "linux";
  return os;
}

Result<std::string> ParseUname(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<std::string_view> lines = text::Lines(input);
  if (lines.size() != 1) {
    return Error{fmt::format("expected one line (the kernel release), got {}", lines.size())};
  }
  std::string_view r = text::Trim(lines[0]);
  if (!text::IsToken(r, 128)) {
    return LineError(0, fmt::format("expected a kernel release, got {}", Quote(r)));
  }
  return std::string(r);
}

Result<CpuInfo> ParseLscpu(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  CpuInfo cpu;
  bool saw_cpus = false;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = text::Trim(lines[i]);
    if (line.empty()) continue;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return LineError(i, fmt::format("expected 'key: value', got {}", Quote(line)));
    }
    std::string_view key = text::Trim(line.substr(0, colon));
    std::string_view value = text::Trim(line.substr(colon + 1));
    // A count: "-" (ARM without socket information) reads as unknown.
    auto count = [&](std::optional<int>& out) -> Status {
      if (value == "-" || value.empty()) return Status::Ok();
      out = text::ToIntIn(value, 0, 1 << 20);
      if (!out) return LineError(i, fmt::format("{}: expected a count, got {}", key, Quote(value)));
      return Status::Ok();
    };
    Status st;
    if (key == "CPU(s)") {
      saw_cpus = true;
      st = count(cpu.cpus);
    } else if (key == "On-line CPU(s) list") {
      cpu.online_cpus = std::string(value);
    } else if (key == "Model name" && cpu.model.empty()) {
      cpu.model = std::string(value);  // hybrid and big.LITTLE parts list one per core type
    } else if (key == "Socket(s)" && !cpu.sockets) {
      st = count(cpu.sockets);
    } else if (key == "Core(s) per socket" && !cpu.cores_per_socket) {
      st = count(cpu.cores_per_socket);
    } else if (key == "Thread(s) per core" && !cpu.threads_per_core) {
      st = count(cpu.threads_per_core);
    } else if (key == "NUMA node(s)") {
      st = count(cpu.numa_nodes);
    }
    if (!st) return st.error();
  }
  if (!saw_cpus) return Error{"no 'CPU(s):' line; this is not lscpu output"};
  return cpu;
}

Result<std::uint64_t> ParseMeminfo(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = text::Trim(lines[i]);
    if (!line.starts_with("MemTotal:")) continue;
    std::string_view v = text::Trim(line.substr(9));
    if (!v.ends_with(" kB"))
      return LineError(i, fmt::format("MemTotal: expected '<n> kB', got {}", Quote(v)));
    std::optional<std::uint64_t> kb = text::ToUint(text::Trim(v.substr(0, v.size() - 3)));
    if (!kb || *kb > (std::uint64_t{1} << 50)) {
      return LineError(i, fmt::format("MemTotal: expected '<n> kB', got {}", Quote(v)));
    }
    return *kb * kKiB;
  }
  return Error{"no 'MemTotal:' line"};
}

Result<std::vector<NumaNode>> ParseNumaSysfs(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::map<int, NumaNode> nodes;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    auto [dir, rest] = text::HeadTail(lines[i]);
    auto [attr, value] = text::HeadTail(rest);
    std::optional<int> id =
        dir.starts_with("node") ? text::ToIntIn(dir.substr(4), 0, 4095) : std::nullopt;
    if (!id)
      return LineError(
          i, fmt::format("expected 'node<N> <attribute> <value>', got {}", Quote(lines[i])));
    NumaNode& n = nodes[*id];
    n.id = *id;
    if (attr == "cpulist") {
      bool ok = value.size() <= 4096 && std::all_of(value.begin(), value.end(), [](char c) {
                  return (c >= '0' && c <= '9') || c == ',' || c == '-';
                });
      if (!ok)
        return LineError(
            i, fmt::format("node{} cpulist: expected a CPU list, got {}", *id, Quote(value)));
      n.cpulist = std::string(value);
    } else if (attr == "meminfo") {
      // "Node 0 MemTotal:       65842852 kB"
      std::size_t p = value.find("MemTotal:");
      std::string_view v =
          p == std::string_view::npos ? std::string_view() : text::Trim(value.substr(p + 9));
      std::optional<std::uint64_t> kb;
      if (v.ends_with(" kB")) kb = text::ToUint(text::Trim(v.substr(0, v.size() - 3)));
      if (!kb || *kb > (std::uint64_t{1} << 50)) {
        return LineError(
            i, fmt::format("node{} meminfo: expected 'Node {} MemTotal: <n> kB', got {}", *id, *id,
                           Quote(value)));
      }
      n.memory_bytes = *kb * kKiB;
    }
  }
  std::vector<NumaNode> out;
  for (auto& [id, n] : nodes) out.push_back(std::move(n));
  return out;
}

Result<std::vector<std::string>> ParseModules(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<std::string> out;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    std::string_view name = text::HeadTail(lines[i]).first;
    bool ok = name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
              });
    if (!ok) return LineError(i, fmt::format("expected a module name, got {}", Quote(name)));
    out.emplace_back(name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::vector<Service>> ParseServices(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<Service> out;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = text::Trim(lines[i]);
    if (line.empty()) continue;
    auto [unit, rest] = text::HeadTail(line);
    auto [load, active] = text::HeadTail(rest);
    if (!text::IsToken(unit) || active.find_first_of(" \t") != std::string_view::npos) {
      return LineError(
          i, fmt::format("expected '<unit> <load state> <active state>', got {}", Quote(line)));
    }
    Service s{std::string(unit), ServiceState::kUnknown};
    if (load == "not-found" || load == "masked") {
      s.state = ServiceState::kAbsent;
    } else if (active == "active") {
      s.state = ServiceState::kActive;
    } else if (active == "inactive" || active == "deactivating") {
      s.state = ServiceState::kInactive;
    } else if (active == "failed") {
      s.state = ServiceState::kFailed;
    } else if (active == "activating" || active == "reloading") {
      s.state = ServiceState::kActivating;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<Memlock> ParseMemlock(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::string_view v = text::Trim(input);
  if (v == "unlimited") return Memlock{true, 0};
  std::optional<std::uint64_t> kib = text::ToUint(v);
  if (!kib || *kib > (std::uint64_t{1} << 52)) {
    return Error{fmt::format("expected 'unlimited' or a number of KiB, got {}", Quote(v))};
  }
  return Memlock{false, *kib * kKiB};
}

Result<std::map<std::string, long long>> ParseNetSpeeds(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::map<std::string, long long> out;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    auto [name, value] = text::HeadTail(lines[i]);
    std::optional<std::int64_t> mbps = text::ToInt(text::Trim(value));
    // 1.6 Tb/s is 1,600,000 Mb/s; ten times that is no NIC of this decade.
    if (!text::IsToken(name) || !mbps || *mbps < -1 || *mbps > 16'000'000) {
      return text::LineError(i, fmt::format("expected '<interface> <Mb/s>', got {}", Quote(lines[i])));
    }
    if (*mbps > 0) out[std::string(name)] = *mbps;
  }
  return out;
}

Result<std::vector<NvmeDrive>> ParseNvme(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<NvmeDrive> out;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    auto [name, rest] = text::HeadTail(lines[i]);
    auto [size, model] = text::HeadTail(text::Trim(rest));
    std::optional<std::uint64_t> sectors = text::ToUint(size);
    // 2^44 sectors is 8 PiB: no namespace of this decade; the product stays in 64 bits.
    if (!name.starts_with("nvme") || !text::IsToken(name) || !sectors || *sectors > (std::uint64_t{1} << 44)) {
      return text::LineError(i, fmt::format("expected '<nvme namespace> <512-byte sectors> [model]', got {}",
                                            Quote(lines[i])));
    }
    if (*sectors == 0) continue;
    // The model is printed by the drive's firmware, padded with blanks; kept only when printable.
    std::string m = gpuforge::text::IsPrintable(text::Trim(model)) ? std::string(text::Trim(model)) : std::string();
    out.push_back({std::string(name), *sectors * 512, std::move(m)});
  }
  std::sort(out.begin(), out.end(), [](const NvmeDrive& a, const NvmeDrive& b) { return a.name < b.name; });
  return out;
}

namespace {

// The version in one source's text; "" when none can be read.
std::string_view VersionFrom(std::string_view source, std::string_view t) {
  if (source == "nvcc") {
    // "Cuda compilation tools, release 12.4, V12.4.131"
    std::size_t p = t.rfind(", V");
    if (p != std::string_view::npos) return text::Trim(t.substr(p + 3));
    p = t.find("release ");
    if (p == std::string_view::npos) return {};
    t = t.substr(p + 8);
    return t.substr(0, t.find(','));
  }
  if (source == "cuda_txt")
    return text::Trim(t.substr(t.find_last_of(' ') + 1));  // "CUDA Version 11.2.152"
  if (source == "nccl_lib") {
    std::size_t p = t.rfind("libnccl.so.");  // "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"
    return p == std::string_view::npos ? std::string_view() : t.substr(p + 11);
  }
  if (source == "ofed") return t.ends_with(':') ? t.substr(0, t.size() - 1) : t;
  if (source == "slurmd")
    return t.substr(t.find_last_of(' ') + 1);  // "slurm 23.11.4", "slurm-wlm 22.05.8"
  return t;
}

}  // namespace

Result<Versions> ParseVersions(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  struct Target {
    std::string_view source;
    std::optional<std::string> Versions::*field;
  };
  static constexpr Target kTargets[] = {
      {"nvcc", &Versions::cuda},           {"cuda_json", &Versions::cuda},
      {"cuda_txt", &Versions::cuda},       {"nccl_dpkg", &Versions::nccl},
      {"nccl_rpm", &Versions::nccl},       {"nccl_lib", &Versions::nccl},
      {"rdma_dpkg", &Versions::rdma_core}, {"rdma_rpm", &Versions::rdma_core},
      {"ofed", &Versions::ofed},           {"slurmd", &Versions::slurm},
  };
  Versions v;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto [source, rest] = text::HeadTail(lines[i]);
    if (source.empty() || rest.empty()) continue;
    for (const Target& t : kTargets) {
      if (t.source != source) continue;
      std::string_view ver = text::Trim(VersionFrom(source, rest));
      if (names::CheckVersion(ver)) {
        return LineError(i, fmt::format("{}: cannot read a version from {}", source, Quote(rest)));
      }
      // The script prints sources best first.
      if (!(v.*t.field)) v.*t.field = std::string(ver);
    }
  }
  return v;
}

}  // namespace gpuforge::facts
