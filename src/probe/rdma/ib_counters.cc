#include "probe/rdma/ib_counters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <vector>

#include "probe/gpu/failure.h"

namespace gpuforge::probe::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "ib.counters";
constexpr std::array<const char*, 7> kCounters = {
    "link_downed",       "link_error_recovery",
    "symbol_error",      "port_rcv_errors",
    "port_xmit_discards", "excessive_buffer_overrun_errors",
    "local_link_integrity_errors",
};
// sysfs attributes are at most a page; anything longer is not what the kernel wrote.
constexpr std::size_t kMaxFile = 4096;

bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

bool AllOf(std::string_view s, std::string_view allowed) {
  return std::all_of(s.begin(), s.end(), [&](char c) { return allowed.find(c) != std::string_view::npos; });
}

constexpr std::string_view kDigits = "0123456789";

// The file's one line, without its newline. Errors name the file.
gpuforge::Result<std::string> ReadLine(const fs::path& file) {
  std::error_code ec;
  // A FIFO or device node in place of an attribute would block or stream forever.
  const fs::file_status st = fs::status(file, ec);
  if (st.type() == fs::file_type::not_found) return Error{fmt::format("{}: missing", file.string())};
  if (ec) return Error{fmt::format("{}: {}", file.string(), ec.message())};
  if (st.type() != fs::file_type::regular) {
    return Error{fmt::format("{}: not a regular file", file.string())};
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot be opened", file.string())};
  std::string text(kMaxFile + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxFile) return Error{fmt::format("{}: longer than {} bytes", file.string(), kMaxFile)};
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty()) return Error{fmt::format("{}: empty", file.string())};
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return Error{fmt::format("{}: holds a control or non-ASCII byte", file.string())};
    }
  }
  return text;
}

Error Unexpected(const fs::path& file, std::string_view text, std::string_view want) {
  return Error{fmt::format("{}: '{}' is not {}", file.string(), text.substr(0, 60), want)};
}

// A counter: a decimal integer that fits 64 bits.
gpuforge::Result<std::uint64_t> ReadCounter(const fs::path& file) {
  gpuforge::Result<std::string> text = ReadLine(file);
  if (!text.ok()) return text.error();
  const std::string& t = *text;
  if (t.size() > 20 || !AllOf(t, kDigits)) return Unexpected(file, t, "a decimal counter");
  std::uint64_t v = 0;
  for (char c : t) {
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return Unexpected(file, t, "a counter that fits 64 bits");
    v = v * 10 + d;
  }
  return v;
}

// "4: ACTIVE", "5: LinkUp": the number and the name.
struct State {
  int code = 0;
  std::string name;
};
gpuforge::Result<State> ReadState(const fs::path& file) {
  gpuforge::Result<std::string> text = ReadLine(file);
  if (!text.ok()) return text.error();
  const std::string& t = *text;
  const std::size_t sep = t.find(": ");
  const std::string_view code = std::string_view(t).substr(0, sep);
  if (sep == std::string::npos || code.empty() || code.size() > 3 || !AllOf(code, kDigits)) {
    return Unexpected(file, t, "'<number>: <name>'");
  }
  const std::string name = t.substr(sep + 2);
  if (name.empty() || name.size() > 40 ||
      !AllOf(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ <>-")) {
    return Unexpected(file, t, "'<number>: <name>'");
  }
  return State{std::stoi(std::string(code)), name};
}

// "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X)": Gb/s, width and speed name.
struct Rate {
  double gbps = 0;
  std::string width;
  std::string speed;
};
gpuforge::Result<Rate> ReadRate(const fs::path& file) {
  gpuforge::Result<std::string> text = ReadLine(file);
  if (!text.ok()) return text.error();
  const std::string& t = *text;
  auto bad = [&] { return Unexpected(file, t, "'<Gb> Gb/sec (<width>X[ <speed>])'"); };
  const std::size_t unit = t.find(" Gb/sec (");
  if (unit == std::string::npos || t.back() != ')') return bad();
  const std::string number = t.substr(0, unit);
  const std::size_t dot = number.find('.');
  const std::string whole = number.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : number.substr(dot + 1);
  if (whole.empty() || whole.size() > 6 || !AllOf(whole, kDigits) ||
      (dot != std::string::npos && (frac.empty() || frac.size() > 6 || !AllOf(frac, kDigits)))) {
    return bad();
  }
  Rate r;
  r.gbps = std::stod(number);
  const std::string inner = t.substr(unit + 9, t.size() - unit - 10);  // "4X NDR"
  const std::size_t x = inner.find('X');
  if (x == std::string::npos || x == 0 || x > 2 || !AllOf(inner.substr(0, x), kDigits)) return bad();
  r.width = inner.substr(0, x + 1);
  const std::string rest = inner.substr(x + 1);
  if (!rest.empty()) {
    if (rest.size() < 2 || rest.size() > 12 || rest[0] != ' ' ||
        !AllOf(rest.substr(1), "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")) {
      return bad();
    }
    r.speed = rest.substr(1);
  }
  return r;
}

class IbCountersProbe : public Probe {
 public:
  explicit IbCountersProbe(std::string root) : root_(std::move(root)) {}

  std::string key() const override { return kKey; }
  std::string description() const override {
    return "InfiniBand/RoCE port state, rate and error counters from sysfs";
  }
  std::vector<Param> params() const override {
    return {{"devices", ParamKind::kText, "all", 0, 0, "RDMA devices to read: all, or a comma list (mlx5_0,mlx5_1)"}};
  }

  ProbeResult Run(const Context& ctx) override {
    gpuforge::Result<std::string> devices = ctx.Text("devices");
    if (!devices.ok()) return Fail(kKey, "probe.bad_param", devices.error().message);
    std::vector<std::string> wanted;
    if (*devices != "all") {
      std::string_view rest = *devices;
      while (true) {
        const std::size_t comma = rest.find(',');
        const std::string_view name = rest.substr(0, comma);
        if (!PlainName(name)) {
          return Fail(kKey, "probe.bad_param",
                      fmt::format("parameter devices must be all or a comma list of device names "
                                  "([A-Za-z0-9_-], at most 64 characters each), not '{}'",
                                  *devices));
        }
        if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) wanted.emplace_back(name);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }

    std::error_code ec;
    const fs::path root(root_);
    if (!fs::is_directory(root, ec)) {
      return Skip(kKey, "ib.no_devices", fmt::format("{} is absent: no RDMA device or driver here", root_));
    }
    std::vector<std::string> present;
    std::vector<Failure> failures;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!PlainName(name)) {
        failures.push_back({"ib.sysfs_error", fmt::format("{}: an entry with an unexpected name",
                                                       (root / name).string().substr(0, 200))});
        continue;
      }
      present.push_back(name);
    }
    if (ec) return Fail(kKey, "ib.sysfs_error", fmt::format("{}: {}", root_, ec.message()));
    std::sort(present.begin(), present.end());
    if (present.empty() && failures.empty()) {
      return Skip(kKey, "ib.no_devices", fmt::format("{} is empty: no RDMA device here", root_));
    }
    if (wanted.empty()) {
      wanted = present;
    } else {
      for (const std::string& w : wanted) {
        if (std::find(present.begin(), present.end(), w) == present.end()) {
          failures.push_back({"rdma.no_such_device",
                              fmt::format("no RDMA device {} in {}; there is {}", w, root_,
                                          present.empty() ? "none" : fmt::format("{}", fmt::join(present, ", ")))});
        }
      }
    }
    std::vector<Measurement> ms;
    for (const std::string& dev : wanted) {
      if (std::find(present.begin(), present.end(), dev) == present.end()) continue;
      ReadDevice(dev, &ms, &failures);
    }
    return Finish(kKey, std::move(ms), failures);
  }

 private:
  void ReadDevice(const std::string& dev, std::vector<Measurement>* ms, std::vector<Failure>* failures) const {
    const fs::path ports = fs::path(root_) / dev / "ports";
    std::error_code ec;
    std::vector<int> numbers;
    for (fs::directory_iterator it(ports, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.empty() || n.size() > 3 || !AllOf(n, kDigits) || n[0] == '0') {
        failures->push_back({"ib.sysfs_error", fmt::format("{}: not a port number", (ports / n).string().substr(0, 200))});
        continue;
      }
      numbers.push_back(std::stoi(n));
    }
    if (ec) {
      failures->push_back({"ib.sysfs_error", fmt::format("{}: {}", ports.string(), ec.message())});
      return;
    }
    if (numbers.empty()) {
      failures->push_back({"ib.sysfs_error", fmt::format("{}: no ports", ports.string())});
      return;
    }
    std::sort(numbers.begin(), numbers.end());
    for (int n : numbers) ReadPort(dev, n, ports / std::to_string(n), ms, failures);
  }

  void ReadPort(const std::string& dev, int port, const fs::path& dir, std::vector<Measurement>* ms,
                std::vector<Failure>* failures) const {
    const std::string entity = fmt::format("{}:{}", dev, port);
    auto fail = [&](const Error& e) { failures->push_back({"ib.sysfs_error", e.message}); };
    std::vector<std::string> missing;
    for (const char* counter : kCounters) {
      const fs::path file = dir / "counters" / counter;
      std::error_code ec;
      // Some providers leave counters out (RoCE ports lack several): absent is not an error.
      if (!fs::exists(fs::symlink_status(file, ec))) {
        missing.push_back(counter);
        continue;
      }
      gpuforge::Result<std::uint64_t> v = ReadCounter(file);
      if (!v.ok()) {
        fail(v.error());
        continue;
      }
      Measurement m;
      m.entity = entity;
      m.metric = counter;
      m.value = static_cast<double>(*v);
      m.unit = "count";
      m.info = {{"exact", std::to_string(*v)}};
      ms->push_back(std::move(m));
    }
    gpuforge::Result<State> state = ReadState(dir / "state");
    gpuforge::Result<State> phys = ReadState(dir / "phys_state");
    gpuforge::Result<Rate> rate = ReadRate(dir / "rate");
    gpuforge::Result<std::string> link = ReadLine(dir / "link_layer");
    if (link.ok() && (link->size() > 32 || !AllOf(*link, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))) {
      link = Unexpected(dir / "link_layer", *link, "a link layer name (InfiniBand, Ethernet)");
    }
    bool ok = true;
    if (!state.ok()) ok = false, fail(state.error());
    if (!phys.ok()) ok = false, fail(phys.error());
    if (!rate.ok()) ok = false, fail(rate.error());
    if (!link.ok()) ok = false, fail(link.error());
    if (!ok) return;
    Measurement m;
    m.entity = entity;
    m.metric = "rate";
    m.value = rate->gbps;
    m.unit = "Gb/s";
    m.info = {
        {"state", state->name},
        {"state_code", std::to_string(state->code)},
        {"phys_state", phys->name},
        {"phys_state_code", std::to_string(phys->code)},
        {"link_layer", *link},
        {"width", rate->width},
    };
    if (!rate->speed.empty()) m.info["speed"] = rate->speed;
    if (!missing.empty()) m.info["missing_counters"] = fmt::format("{}", fmt::join(missing, ","));
    ms->push_back(std::move(m));
  }

  std::string root_;
};

}  // namespace

std::unique_ptr<Probe> MakeIbCountersProbe(std::string sysfs_root) {
  return std::make_unique<IbCountersProbe>(std::move(sysfs_root));
}

std::unique_ptr<Probe> MakeIbCountersProbe() { return MakeIbCountersProbe("/sys/class/infiniband"); }

}  // namespace gpuforge::probe::internal
