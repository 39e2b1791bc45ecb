#include "probe/nccl/allreduce.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "gpuforge/base/quantity.h"
#include "probe/gpu/failure.h"
#include "probe/gpu/kernels.h"
#include "probe/gpu/kernels/nccl_check_abi.h"
#include "probe/gpu/params.h"

namespace gpuforge::probe::internal {

// ---------------------------------------------------------------------------------------------
// NCCL's log

namespace {

std::string Printable(std::string_view line, std::size_t max) {
  std::string out;
  for (char c : line) {
    if (out.size() >= max) break;
    if (c == '\r' || c == '\n') continue;
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

constexpr std::size_t kKeptLines = 100;
constexpr std::size_t kKeptLineChars = 300;

// NCCL opens NCCL_DEBUG_FILE once per process, at its first initialisation, and keeps it open,
// so the file is per process and each run reads only what was appended during it.
struct SharedLogFile {
  std::mutex m;
  bool decided = false;  // whether NCCL_DEBUG_FILE has been looked at
  int fd = -1;           // ours, when we chose the file
  std::string path;      // "" once unlinked
};

SharedLogFile& Shared() {
  static SharedLogFile* shared = new SharedLogFile;  // never destroyed: used at exit
  return *shared;
}

void RemoveLogAtExit() {
  SharedLogFile& sh = Shared();
  std::lock_guard lock(sh.m);
  if (!sh.path.empty()) unlink(sh.path.c_str());
  sh.path.clear();
}

class NcclLogFile : public NcclLogCapture {
 public:
  void Start(const std::string& level) override {
    SharedLogFile& sh = Shared();
    std::lock_guard lock(sh.m);
    if (!sh.decided) {
      sh.decided = true;
      if (std::getenv("NCCL_DEBUG_FILE") == nullptr) {
        const char* tmp = std::getenv("TMPDIR");
        // NCCL expands %h and %p in the name; a directory with a % would be mangled.
        std::string dir = tmp != nullptr && *tmp != '\0' &&
                                  std::string_view(tmp).find('%') == std::string_view::npos
                              ? tmp
                              : "/tmp";
        std::string name = dir + "/gpuforge-nccl-log-XXXXXX";
        const int fd = mkstemp(name.data());
        if (fd >= 0) {
          sh.fd = fd;
          sh.path = name;
          std::atexit(RemoveLogAtExit);
        }
      }
    }
    // setenv is not thread-safe against getenv elsewhere, which is acceptable because probes
    // run one at a time. Once the file is NCCL's (sh.path cleared) the variable stays as it is.
    const NcclLogEnv env{std::getenv("NCCL_DEBUG"), std::getenv("NCCL_DEBUG_SUBSYS"),
                         std::getenv("NCCL_DEBUG_FILE")};
    for (const auto& [name, value] : NcclLogSettings(level, env, sh.path)) {
      setenv(name.c_str(), value.c_str(), 1);
    }
    struct stat st {};
    start_ = sh.fd >= 0 && fstat(sh.fd, &st) == 0 ? static_cast<off_t>(st.st_size) : 0;
  }

  std::vector<std::string> Finish() override {
    SharedLogFile& sh = Shared();
    std::lock_guard lock(sh.m);
    std::vector<std::string> lines;
    if (sh.fd < 0) return lines;
    std::string text;
    char buf[65536];
    off_t at = start_;
    // Bounded: a TRACE log can be huge and only the first lines matter here.
    while (text.size() < (std::size_t{16} << 20)) {
      const ssize_t n = pread(sh.fd, buf, sizeof buf, at);
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    // Something was written, so NCCL has the file open: the name can go now.
    if (at > 0 && !sh.path.empty()) {
      unlink(sh.path.c_str());
      sh.path.clear();
    }
    std::size_t begin = 0;
    while (begin < text.size()) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(begin, end - begin));
      begin = end + 1;
    }
    return lines;
  }

 private:
  off_t start_ = 0;
};

bool Contains(std::string_view s, std::string_view what) { return s.find(what) != s.npos; }

// The word after `marker`, up to white space.
std::string WordAfter(std::string_view line, std::string_view marker) {
  std::size_t at = line.find(marker);
  if (at == line.npos) return "";
  std::string_view rest = line.substr(at + marker.size());
  return std::string(rest.substr(0, rest.find_first_of(" \t")));
}

}  // namespace

std::unique_ptr<NcclLogCapture> MakeNcclLogFile() { return std::make_unique<NcclLogFile>(); }

std::vector<std::pair<std::string, std::string>> NcclLogSettings(const std::string& level,
                                                                 const NcclLogEnv& env,
                                                                 const std::string& own_file) {
  std::vector<std::pair<std::string, std::string>> out;
  const bool ours = env.file == nullptr && !own_file.empty();
  // Without a file NCCL logs to stdout, which is the agent's result channel: no level then.
  if (env.file == nullptr && !ours) return out;
  if (ours) out.emplace_back("NCCL_DEBUG_FILE", own_file);
  // A setting in the environment is the user's and wins.
  if (env.debug == nullptr) out.emplace_back("NCCL_DEBUG", level);
  if (env.subsys == nullptr) out.emplace_back("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV");
  return out;
}

NcclLogSummary ParseNcclLog(std::span<const std::string> lines) {
  static constexpr std::string_view kWorthKeeping[] = {
      "NET/", "Using network", "via ", "WARN", "version", "Init COMPLETE", "Bootstrap"};
  NcclLogSummary out;
  for (const std::string& raw : lines) {
    const std::string line = Printable(raw, kKeptLineChars);
    if (std::string net = WordAfter(line, "Using network "); !net.empty() && out.network.empty()) {
      out.network = net;
    }
    if (Contains(line, "NET/IB : No device found") && !out.ib_no_device) {
      out.ib_no_device = true;
      out.ib_no_device_line = line;
    }
    if (std::string v = WordAfter(line, "NCCL version "); !v.empty() && out.version.empty()) {
      out.version = v;
    }
    if (out.kept.size() < kKeptLines &&
        std::any_of(std::begin(kWorthKeeping), std::end(kWorthKeeping),
                    [&](std::string_view w) { return Contains(line, w); })) {
      out.kept.push_back(line);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parameters

namespace {

constexpr const char* kKey = "nccl.allreduce";
constexpr std::uint64_t kMaxBytes = std::uint64_t{64} << 30;
constexpr std::uint64_t kQuickBytes = std::uint64_t{4} << 20;  // 1024 x 1024 floats
constexpr int kQuickIters = 100;
constexpr int kQuickWarmup = 5;
constexpr std::size_t kElementBytes = 4;  // float, the one type supported
constexpr std::size_t kIdBytes = 128;
constexpr std::size_t kLogBudget = 12 * 1024;  // characters of NCCL's log in one result      //
                                               // NCCL_UNIQUE_ID_BYTES, the same in every NCCL 2

struct Settings {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 0;
  std::uint64_t step_factor = 2;
  int warmup = 5;
  int iters = 20;
  bool check = true;
  std::string op = "sum";
  std::string type = "float";
  int gpus = 0;  // 0: all
  int nodes = 1;
  int node_index = 0;
  bool quick = false;
  std::string nccl_debug = "INFO";
};

// A byte count: plain ("8") or with a unit ("64MiB"), whole, in [lo, hi]. SizeParam wants a
// unit and a multiple of 4, while nccl-tests takes any count and rounds it down per size.
gpuforge::Result<std::uint64_t> Bytes(const Context& ctx, const std::string& name, std::uint64_t lo,
                                      std::uint64_t hi) {
  gpuforge::Result<std::string> text = ctx.Text(name);
  if (!text.ok()) return text.error();
  double b = 0;
  const std::string& t = *text;
  if (!t.empty() && t.size() <= 15 &&
      std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    b = static_cast<double>(std::stoull(t));
  } else {
    gpuforge::Result<double> parsed = quantity::Parse(t, quantity::Dimension::kSize);
    if (!parsed.ok()) return Error{fmt::format("parameter {}: {}", name, parsed.error().message)};
    b = *parsed;
  }
  if (b != std::floor(b) || b < static_cast<double>(lo) || b > static_cast<double>(hi)) {
    return Error{fmt::format("parameter {} must be a whole number of bytes from {} to {}, not '{}'",
                             name, lo, hi, t)};
  }
  return static_cast<std::uint64_t>(b);
}

gpuforge::Result<Settings> ParseSettings(const Context& ctx) {
  Settings s;
  auto text = [&](const char* name) -> gpuforge::Result<std::string> { return ctx.Text(name); };
  gpuforge::Result<std::string> preset = text("preset");
  if (!preset.ok()) return preset.error();
  if (*preset != "" && *preset != "quick") {
    return Error{fmt::format("parameter preset must be empty or 'quick', not '{}'", *preset)};
  }
  s.quick = *preset == "quick";
  gpuforge::Result<std::uint64_t> lo = Bytes(ctx, "min_bytes", kElementBytes, kMaxBytes);
  if (!lo.ok()) return lo.error();
  gpuforge::Result<std::uint64_t> hi = Bytes(ctx, "max_bytes", kElementBytes, kMaxBytes);
  if (!hi.ok()) return hi.error();
  if (*hi < *lo) {
    return Error{fmt::format("parameter max_bytes ({}) is smaller than min_bytes ({})", *hi, *lo)};
  }
  s.min_bytes = *lo;
  s.max_bytes = *hi;
  gpuforge::Result<std::int64_t> step = IntParam(ctx, "step_factor", 2, 1024);
  if (!step.ok()) return step.error();
  s.step_factor = static_cast<std::uint64_t>(*step);
  gpuforge::Result<std::int64_t> warmup = IntParam(ctx, "warmup", 0, 1000);
  if (!warmup.ok()) return warmup.error();
  s.warmup = static_cast<int>(*warmup);
  gpuforge::Result<std::int64_t> iters = IntParam(ctx, "iters", 1, 100000);
  if (!iters.ok()) return iters.error();
  s.iters = static_cast<int>(*iters);
  gpuforge::Result<std::int64_t> check = IntParam(ctx, "check", 0, 1);
  if (!check.ok()) return check.error();
  s.check = *check == 1;
  gpuforge::Result<std::string> op = text("op");
  if (!op.ok()) return op.error();
  if (*op != "sum" && *op != "prod" && *op != "max" && *op != "min") {
    return Error{fmt::format("parameter op must be sum, prod, max or min, not '{}'", *op)};
  }
  s.op = *op;
  gpuforge::Result<std::string> type = text("datatype");
  if (!type.ok()) return type.error();
  if (*type != "float") {
    return Error{
        fmt::format("parameter datatype must be float (the one type supported), not '{}'", *type)};
  }
  gpuforge::Result<std::string> gpus = text("gpus");
  if (!gpus.ok()) return gpus.error();
  if (*gpus != "all") {
    gpuforge::Result<std::int64_t> n = IntParam(ctx, "gpus", 1, 1024);
    if (!n.ok())
      return Error{
          fmt::format("parameter gpus must be 'all' or a count from 1 to 1024, not '{}'", *gpus)};
    s.gpus = static_cast<int>(*n);
  }
  gpuforge::Result<std::int64_t> nodes = IntParam(ctx, "nodes", 1, 1024);
  if (!nodes.ok()) return nodes.error();
  s.nodes = static_cast<int>(*nodes);
  gpuforge::Result<std::int64_t> index = IntParam(ctx, "node_index", 0, s.nodes - 1);
  if (!index.ok()) return index.error();
  s.node_index = static_cast<int>(*index);
  if (s.nodes > 1 && s.warmup < 1) {
    // Without a barrier of its own, the warm-up op is what lines the nodes up before the timer.
    return Error{"parameter warmup must be at least 1 when nodes > 1: the warm-up operation lines the nodes up "
                 "before timing starts"};
  }
  gpuforge::Result<std::string> debug = text("nccl_debug");
  if (!debug.ok()) return debug.error();
  std::string level = *debug;
  std::transform(level.begin(), level.end(), level.begin(),
                 [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; });
  if (level != "VERSION" && level != "WARN" && level != "INFO" && level != "TRACE") {
    return Error{
        fmt::format("parameter nccl_debug must be VERSION, WARN, INFO or TRACE, not '{}'", *debug)};
  }
  s.nccl_debug = level;
  if (s.quick) {
    // The guides' quick check: one size, 100 operations; it overrides the sweep parameters.
    s.min_bytes = s.max_bytes = kQuickBytes;
    s.iters = kQuickIters;
    s.warmup = kQuickWarmup;
  }
  return s;
}

}  // namespace

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

namespace {

// nccl-tests' sizes: min, min*f, ... up to max, each rounded down to whole elements.
std::vector<std::uint64_t> Sizes(const Settings& s) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = s.min_bytes; b <= s.max_bytes; b *= s.step_factor) {
    const std::uint64_t whole = b / kElementBytes * kElementBytes;
    if (whole > 0 && (out.empty() || out.back() != whole)) out.push_back(whole);
    if (b > s.max_bytes / s.step_factor) break;
  }
  return out;
}

// One timed row of nccl-tests' table.
struct Row {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  bool in_place = false;
  double seconds = 0;           // per operation; the mean over agents when multi-node
  std::vector<double> samples;  // per agent, microseconds
  std::uint64_t wrong = 0;
};

struct Sweep {
  int nranks = 0;
  int version = 0;  // ncclGetVersion's code
  std::vector<Row> rows;
  std::string first_wrong;  // the first wrong element, for the reason
  std::string check;        // where the data were checked: "gpu", "host", "off"
};

std::string Entity(const Row& r) {
  return fmt::format("{} {}", r.in_place ? "in-place" : "out-of-place", r.bytes);
}

// ---------------------------------------------------------------------------------------------
// The exchange between agents (pure: tested through the probe)

std::string Cut(std::string_view s) {
  return std::string(s.substr(0, 80)) + (s.size() > 80 ? "..." : "");
}

// "gpus=N[,id=HEX]" from part `k`.
struct Offer {
  int gpus = 0;
  std::string id_hex;
};

gpuforge::Result<Offer> ParseOffer(std::string_view part, int k) {
  auto bad = [&](const std::string& why) {
    return Error{fmt::format("exchange part {} ('{}'): {}", k, Cut(part), why)};
  };
  Offer o;
  bool have_gpus = false;
  std::size_t begin = 0;
  while (begin <= part.size()) {
    std::size_t end = part.find(',', begin);
    if (end == part.npos) end = part.size();
    std::string_view field = part.substr(begin, end - begin);
    const std::size_t eq = field.find('=');
    if (eq == field.npos) return bad(fmt::format("'{}' is not key=value", Cut(field)));
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "gpus" && !have_gpus) {
      int n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 1 || n > 1024) {
        return bad("gpus must be a count from 1 to 1024");
      }
      o.gpus = n;
      have_gpus = true;
    } else if (key == "id" && o.id_hex.empty() && k == 0) {
      if (value.size() != 2 * kIdBytes || !std::all_of(value.begin(), value.end(), [](char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
          })) {
        return bad(fmt::format("the NCCL id must be {} lower-case hex digits", 2 * kIdBytes));
      }
      o.id_hex = value;
    } else {
      return bad(fmt::format("unexpected field '{}'", Cut(key)));
    }
    begin = end + 1;
  }
  if (!have_gpus) return bad("gpus is missing");
  if (k == 0 && o.id_hex.empty()) return bad("node 0's part has no NCCL id (id=...)");
  return o;
}

// Round 2: "t=US:US:...,w=N:N:..." (time per operation in microseconds and #wrong, per row in
// sweep order), with fewer digits until it fits in a part.
std::string TimesPart(const std::vector<Row>& rows) {
  std::string part;
  for (int digits = 7; digits >= 2; --digits) {
    std::string t, w;
    for (const Row& r : rows) {
      t += fmt::format("{}{:.{}g}", t.empty() ? "" : ":", r.seconds * 1e6, digits);
      w += fmt::format("{}{}", w.empty() ? "" : ":", r.wrong);
    }
    part = "t=" + t + ",w=" + w;
    if (part.size() <= kExchangePartMax) break;
  }
  return part;
}

struct Times {
  std::vector<double> us;
  std::vector<std::uint64_t> wrong;
};

gpuforge::Result<Times> ParseTimesPart(std::string_view part, int k, std::size_t rows) {
  auto bad = [&](const std::string& why) {
    return Error{fmt::format("exchange part {} ('{}'): {}", k, Cut(part), why)};
  };
  const std::size_t comma = part.find(",w=");
  if (!part.starts_with("t=") || comma == part.npos) return bad("expected t=...,w=...");
  auto split = [](std::string_view list) {
    std::vector<std::string_view> out;
    std::size_t begin = 0;
    while (begin <= list.size()) {
      std::size_t end = list.find(':', begin);
      if (end == list.npos) end = list.size();
      out.push_back(list.substr(begin, end - begin));
      begin = end + 1;
    }
    return out;
  };
  const std::vector<std::string_view> t = split(part.substr(2, comma - 2));
  const std::vector<std::string_view> w = split(part.substr(comma + 3));
  if (t.size() != rows || w.size() != rows) {
    return bad(
        fmt::format("{} times and {} counts where this agent has {} rows (do all agents run "
                    "with the same sizes?)",
                    t.size(), w.size(), rows));
  }
  Times out;
  for (std::size_t i = 0; i < rows; ++i) {
    double us = 0;
    auto [p, ec] = std::from_chars(t[i].data(), t[i].data() + t[i].size(), us);
    if (ec != std::errc() || p != t[i].data() + t[i].size() || !std::isfinite(us) || !(us > 0)) {
      return bad(fmt::format("time {} ('{}') is not a positive number", i + 1, Cut(t[i])));
    }
    std::uint64_t n = 0;
    auto [q, ec2] = std::from_chars(w[i].data(), w[i].data() + w[i].size(), n);
    if (ec2 != std::errc() || q != w[i].data() + w[i].size()) {
      return bad(fmt::format("count {} ('{}') is not a whole number", i + 1, Cut(w[i])));
    }
    out.us.push_back(us);
    out.wrong.push_back(n);
  }
  return out;
}

// Every agent's times: the figures become the mean over agents (nccl-tests averages over
// ranks; each agent's time already covers all of its ranks), #wrong the sum.
std::optional<Failure> ShareTimes(const Context& ctx, const Settings& s, Sweep* sweep) {
  gpuforge::Result<std::vector<std::string>> parts = ctx.exchange(TimesPart(sweep->rows));
  if (!parts.ok()) return Failure{"exchange_error", "sharing the times: " + parts.error().message};
  if (parts->size() != static_cast<std::size_t>(s.nodes)) {
    return Failure{"exchange_error",
                   fmt::format("sharing the times: {} parts for {} nodes", parts->size(), s.nodes)};
  }
  std::vector<Times> all;
  for (std::size_t k = 0; k < parts->size(); ++k) {
    gpuforge::Result<Times> t =
        ParseTimesPart((*parts)[k], static_cast<int>(k), sweep->rows.size());
    if (!t.ok()) return Failure{"exchange_error", "sharing the times: " + t.error().message};
    all.push_back(std::move(*t));
  }
  for (std::size_t i = 0; i < sweep->rows.size(); ++i) {
    Row& r = sweep->rows[i];
    r.samples.clear();
    r.wrong = 0;
    double sum = 0;
    for (const Times& t : all) {
      r.samples.push_back(t.us[i]);
      sum += t.us[i];
      r.wrong += t.wrong[i];
    }
    r.seconds = sum / static_cast<double>(all.size()) / 1e6;
  }
  return std::nullopt;
}

std::string VersionText(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::vector<Measurement> Measurements(const Settings& s, const Sweep& sweep,
                                      const NcclLogSummary& log) {
  std::vector<Measurement> out;
  if (sweep.rows.empty()) return out;
  const int n = sweep.nranks;
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  double busbw_sum = 0, last_out_busbw = 0, quick_ms = 0;
  std::uint64_t wrong_total = 0, last_out_bytes = 0;
  for (const Row& r : sweep.rows) {
    const std::map<std::string, std::string> info = {{"size", std::to_string(r.bytes)},
                                                     {"count", std::to_string(r.count)},
                                                     {"type", s.type},
                                                     {"redop", s.op}};
    const double algbw = static_cast<double>(r.bytes) / 1e9 / r.seconds;
    const double busbw = algbw * bus_factor;
    const double us = r.seconds * 1e6;
    out.push_back({Entity(r), "time_us", us, "us",
                   r.samples.empty() ? std::vector<double>{us} : r.samples, info});
    out.push_back({Entity(r), "algbw", algbw, "GB/s", {}, info});
    out.push_back({Entity(r), "busbw", busbw, "GB/s", {}, info});
    out.push_back({Entity(r), "wrong", static_cast<double>(r.wrong), "count", {}, info});
    busbw_sum += busbw;
    wrong_total += r.wrong;
    quick_ms = std::max(quick_ms, r.seconds * 1e3);
    if (!r.in_place) {
      last_out_busbw = busbw;
      last_out_bytes = r.bytes;
    }
  }
  std::map<std::string, std::string> info = {
      {"network", log.network.empty() ? "unknown" : log.network},
      {"nccl_version", log.version.empty() ? VersionText(sweep.version) : log.version},
      {"ib_no_device", log.ib_no_device ? "1" : "0"},
      {"ranks", std::to_string(n)},
      {"nodes", std::to_string(s.nodes)},
      {"check", sweep.check},
  };
  if (log.ib_no_device) info["ib_no_device_line"] = log.ib_no_device_line;
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(info.begin(), info.end());
    return more;
  };
  out.push_back({"allreduce",
                 "busbw",
                 last_out_busbw,
                 "GB/s",
                 {},
                 with({{"size", std::to_string(last_out_bytes)}, {"placement", "out-of-place"}})});
  out.push_back({"allreduce",
                 "avg_busbw",
                 busbw_sum / static_cast<double>(sweep.rows.size()),
                 "GB/s",
                 {},
                 info});
  out.push_back({"allreduce", "wrong_total", static_cast<double>(wrong_total), "count", {}, info});
  out.push_back({"allreduce", "ranks", static_cast<double>(n), "count", {}, info});
  if (s.quick) {
    out.push_back(
        {"allreduce",
         "quick_op_ms",
         quick_ms,
         "ms",
         {},
         with({{"size", std::to_string(kQuickBytes)}, {"iters", std::to_string(s.iters)}})});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Running NCCL

static_assert(sizeof(ncclUniqueId) == kIdBytes);

std::string Hex(const ncclUniqueId& id) {
  std::string out;
  for (char c : id.internal) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

ncclUniqueId FromHex(std::string_view hex) {  // checked by ParseOffer
  ncclUniqueId id{};
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < kIdBytes; ++i) {
    id.internal[i] = static_cast<char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  }
  return id;
}

ncclRedOp_t RedOp(const std::string& op) {
  if (op == "prod") return ncclProd;
  if (op == "max") return ncclMax;
  if (op == "min") return ncclMin;
  return ncclSum;
}

// The GPUs this agent drives, one rank each: the primary context, a stream, send and receive
// buffers of the largest size and, when the check runs on the GPU, the check kernels and their
// two counters. Everything is released on every path.
class Devices {
 public:
  struct Rank {
    CudaGpu gpu;
    CUcontext ctx = nullptr;
    CUstream stream = nullptr;
    CUdeviceptr send = 0;
    CUdeviceptr recv = 0;
    CUmodule module = nullptr;
    CUfunction fill = nullptr;
    CUfunction verify = nullptr;
    CUdeviceptr counters = 0;  // wrong, first_bad: two unsigned long long
  };

  explicit Devices(const CudaApi& cu) : cu_(cu) {}
  ~Devices() {
    for (auto it = ranks_.rbegin(); it != ranks_.rend(); ++it) {
      if (it->ctx == nullptr) continue;
      cu_.cuCtxSetCurrent(it->ctx);
      if (it->counters != 0) cu_.cuMemFree(it->counters);
      if (it->module != nullptr) cu_.cuModuleUnload(it->module);
      if (it->recv != 0) cu_.cuMemFree(it->recv);
      if (it->send != 0) cu_.cuMemFree(it->send);
      if (it->stream != nullptr) cu_.cuStreamDestroy(it->stream);
      cu_.cuCtxSetCurrent(nullptr);
      cu_.cuDevicePrimaryCtxRelease(it->gpu.device);
    }
  }
  Devices(const Devices&) = delete;
  Devices& operator=(const Devices&) = delete;

  // Buffers hold data before anything is timed (nccl-tests never times zeros): the send
  // buffer the rank's number, the receive buffer ones. Memsets run on the device already; the
  // check's data come from the fill kernel (or the host without kernels).
  std::optional<Failure> Add(const CudaGpu& gpu, std::uint64_t bytes) {
    ranks_.push_back({gpu});
    Rank& r = ranks_.back();
    if (auto f = GPUFORGE_CU(cu_, cuDevicePrimaryCtxRetain, &r.ctx, gpu.device)) {
      r.ctx = nullptr;
      return f;
    }
    if (auto f = GPUFORGE_CU(cu_, cuCtxSetCurrent, r.ctx)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuStreamCreate, &r.stream, CU_STREAM_NON_BLOCKING)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuMemAlloc, &r.send, bytes)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuMemAlloc, &r.recv, bytes)) return f;
    const float own = static_cast<float>(ranks_.size());
    if (auto f = GPUFORGE_CU(cu_, cuMemsetD32, r.send, std::bit_cast<unsigned>(own), bytes / 4))
      return f;
    if (auto f = GPUFORGE_CU(cu_, cuMemsetD32, r.recv, std::bit_cast<unsigned>(1.0f), bytes / 4))
      return f;
    return SettleDefaultStream(ranks_.size() - 1);
  }

  // The fill and verify kernels in rank i's context, and the verify kernel's counters.
  std::optional<Failure> LoadKernels(std::size_t i, std::span<const unsigned char> image) {
    Rank& r = ranks_[i];
    if (auto f = Enter(i)) return f;
    if (auto f = GPUFORGE_CU(cu_, cuModuleLoadData, &r.module, image.data())) {
      r.module = nullptr;
      return f;
    }
    if (auto f = GPUFORGE_CU(cu_, cuModuleGetFunction, &r.fill, r.module, kNcclFillKernel))
      return f;
    if (auto f = GPUFORGE_CU(cu_, cuModuleGetFunction, &r.verify, r.module, kNcclVerifyKernel))
      return f;
    return GPUFORGE_CU(cu_, cuMemAlloc, &r.counters, 2 * sizeof(std::uint64_t));
  }

  // Memsets and pageable copies run on the legacy default stream, which the non-blocking
  // streams NCCL works on do not wait for: wait here before NCCL touches the buffers.
  std::optional<Failure> SettleDefaultStream(std::size_t i) {
    if (auto f = Enter(i)) return f;
    return GPUFORGE_CU(cu_, cuStreamSynchronize, nullptr);
  }

  std::optional<Failure> Enter(std::size_t i) {
    return GPUFORGE_CU(cu_, cuCtxSetCurrent, ranks_[i].ctx);
  }
  std::size_t size() const { return ranks_.size(); }
  const Rank& operator[](std::size_t i) const { return ranks_[i]; }

 private:
  const CudaApi& cu_;
  std::vector<Rank> ranks_;
};

// This agent's communicators (one per GPU) and a watchdog thread that, while they live, polls
// ncclCommGetAsyncError and the cancel flag and aborts them all on either. The CudaApi has no
// cuStreamQuery, so waiting is a blocking cuStreamSynchronize; the abort is what ends a wait on
// a peer that is gone (ncclCommAbort stops NCCL's kernels).
//
// No lock is held across an NCCL call: with NCCL_RUNTIME_CONNECT=1 (the default since 2.22)
// ncclGroupEnd connects to the peers and blocks when one is gone, and the watchdog must be able
// to poll and abort then. ncclCommGetAsyncError may be called while another thread uses the
// communicator, and ncclCommAbort from another thread is how NCCL breaks a hang. The watchdog
// raises `aborted_` before it aborts, so no NCCL call starts on an aborted communicator after
// the flag is seen; one already inside NCCL (the hang) is what the abort is for. A hang inside
// ncclCommInitRank (bootstrap waiting for a node that never comes) comes before the watchdog
// and the communicators exist: the agent's timeout has to end that one.
class Clique {
 public:
  Clique(const NcclApi& nc, const CudaApi& cu, Devices& dev, const Context& ctx)
      : nc_(nc), cu_(cu), dev_(dev), ctx_(ctx) {}
  ~Clique() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    // After the watchdog's abort every communicator is gone.
    for (std::size_t i = 0; i < comms_.size() && !aborted_.load(); ++i) {
      if (comms_[i] == nullptr) continue;
      dev_.Enter(i);
      // Destroy waits for outstanding work and may talk to peers; after a failure that could
      // hang, so failures abort instead.
      if (healthy_) {
        nc_.ncclCommDestroy(comms_[i]);
      } else {
        nc_.ncclCommAbort(comms_[i]);
      }
    }
    cu_.cuCtxSetCurrent(nullptr);
  }
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;

  // One ncclCommInitRank per GPU inside a group, each with its GPU's context current. Before
  // Watch(): comms_ is written here only.
  std::optional<Failure> Init(const ncclUniqueId& id, int nranks, int base) {
    comms_.assign(dev_.size(), nullptr);
    std::optional<Failure> failure = GPUFORGE_NCCL(nc_, ncclGroupStart);
    if (failure) return failure;
    for (std::size_t i = 0; i < dev_.size() && !failure; ++i) {
      failure = dev_.Enter(i);
      if (!failure) {
        failure = GPUFORGE_NCCL(nc_, ncclCommInitRank, &comms_[i], nranks, id,
                                base + static_cast<int>(i));
        if (failure) failure->reason = dev_[i].gpu.Label() + ": " + failure->reason;
      }
    }
    std::optional<Failure> end = GPUFORGE_NCCL(nc_, ncclGroupEnd);
    return failure ? failure : end;
  }

  void Watch() {
    watchdog_ = std::thread([this] { Guard(); });
  }

  // One all-reduce on every GPU, as one group.
  std::optional<Failure> AllReduce(std::uint64_t count, ncclRedOp_t op, bool in_place) {
    if (auto why = Tripped()) return why;
    std::optional<Failure> failure = GPUFORGE_NCCL(nc_, ncclGroupStart);
    if (failure) return failure;
    for (std::size_t i = 0; i < dev_.size() && !failure; ++i) {
      const Devices::Rank& r = dev_[i];
      failure = dev_.Enter(i);
      if (!failure) {
        const void* send = reinterpret_cast<const void*>(in_place ? r.recv : r.send);
        failure = GPUFORGE_NCCL(nc_, ncclAllReduce, send, reinterpret_cast<void*>(r.recv), count,
                                ncclFloat, op, comms_[i], r.stream);
      }
    }
    // The group is closed even after a failed call, so NCCL's group depth stays balanced.
    std::optional<Failure> end = GPUFORGE_NCCL(nc_, ncclGroupEnd);
    // An abort while NCCL ran makes its calls fail: what the watchdog saw is the cause.
    if (auto why = Tripped()) return why;
    return failure ? failure : end;
  }

  // Waits for every stream. What the watchdog saw comes first: a CUDA error after an abort
  // is its consequence, not its cause.
  std::optional<Failure> Wait() {
    std::optional<Failure> failure;
    for (std::size_t i = 0; i < dev_.size() && !failure; ++i) {
      failure = GPUFORGE_CU(cu_, cuStreamSynchronize, dev_[i].stream);
    }
    if (auto why = Tripped()) return why;
    return failure;
  }

  // Why the watchdog aborted, once it has.
  std::optional<Failure> Tripped() const {
    // The acquire pairs with the watchdog's release: tripped_ is complete once the flag is up.
    if (!aborted_.load(std::memory_order_acquire)) return std::nullopt;
    return tripped_;
  }

  void Healthy() { healthy_ = true; }

 private:
  // m_ guards stop_ only, for the wake-up at destruction; NCCL is polled and aborted outside
  // any lock the sweep takes.
  void Guard() {
    std::unique_lock lock(m_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(2));
      if (stop_) break;
      std::optional<Failure> why;
      if (ctx_.Cancelled()) {
        why = Failure{"cancelled", "cancelled while NCCL operations were in flight"};
      }
      for (std::size_t i = 0; i < comms_.size() && !why; ++i) {
        ncclResult_t async = ncclSuccess;
        if (auto f = GPUFORGE_NCCL(nc_, ncclCommGetAsyncError, comms_[i], &async)) {
          why = f;
        } else if (async != ncclSuccess && async != ncclInProgress) {
          why = Failure{"nccl_error", NcclCallError(nc_, "an operation in flight", async)};
        }
        if (why) why->reason = dev_[i].gpu.Label() + ": " + why->reason;
      }
      if (!why) continue;
      why->reason += "; the communicators were aborted";
      tripped_ = std::move(why);
      aborted_.store(true, std::memory_order_release);
      for (ncclComm_t c : comms_) {
        if (c != nullptr) nc_.ncclCommAbort(c);
      }
      return;
    }
  }

  const NcclApi& nc_;
  const CudaApi& cu_;
  Devices& dev_;
  const Context& ctx_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool healthy_ = false;
  std::atomic<bool> aborted_{false};
  std::optional<Failure> tripped_;  // written by the watchdog before aborted_ is raised
  std::vector<ncclComm_t> comms_;   // fixed once Init returns
  std::thread watchdog_;
};

// Validation data: rank r's element i is 1 + (i + r + seed) % P, small integers whose sum,
// product (P = 2: powers of two), max and min are exact in float whatever order NCCL adds in.
int Period(const std::string& op) { return op == "prod" ? 2 : 3; }

float Expected(const std::string& op, int nranks, int phase) {
  const int period = Period(op);
  double acc = op == "prod" ? 1 : op == "min" ? 1e300 : op == "max" ? -1e300 : 0;
  for (int r = 0; r < nranks; ++r) {
    const double v = 1 + (phase + r) % period;
    if (op == "sum") acc += v;
    if (op == "prod") acc *= v;
    if (op == "max") acc = std::max(acc, v);
    if (op == "min") acc = std::min(acc, v);
  }
  return static_cast<float>(acc);
}

// Host check only (a build without kernels): the copies go through a buffer of this size.
constexpr std::uint64_t kChunkElements = std::uint64_t{4} << 20;  // 16 MiB of floats

// Blocks for a check kernel over n elements: enough to fill every SM once, fewer for small n
// (the kernels loop over the rest).
unsigned CheckBlocks(const CudaGpu& gpu, std::uint64_t n) {
  const std::uint64_t per_sm =
      static_cast<std::uint64_t>(std::max(1, gpu.threads_per_sm / kNcclCheckBlockThreads));
  const std::uint64_t full = static_cast<std::uint64_t>(std::max(1, gpu.sms)) * per_sm;
  const std::uint64_t needed = (n + kNcclCheckBlockThreads - 1) / kNcclCheckBlockThreads;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(full, needed)));
}

struct Sweeper {
  const CudaApi& cu;
  const NcclApi& nc;
  const Settings& s;
  const Context& ctx;
  Devices& dev;
  Clique& clique;
  int nranks = 0;
  int base = 0;
  bool on_gpu = false;  // fill and verify with the kernels (Devices::LoadKernels ran)

  // Out-of-place, then in-place, for one size.
  std::optional<Failure> MeasureSize(std::uint64_t bytes, std::uint32_t seed, Sweep* sweep) {
    for (bool in_place : {false, true}) {
      if (ctx.Cancelled())
        return Failure{"cancelled", fmt::format("cancelled before {} bytes", bytes)};
      Row row;
      row.bytes = bytes;
      row.count = bytes / kElementBytes;
      row.in_place = in_place;
      if (auto f = Time(row.count, in_place, &row.seconds)) return f;
      if (s.check) {
        if (auto f = Check(row.count, in_place, seed + (in_place ? 1 : 0), &row.wrong, sweep))
          return f;
      }
      sweep->rows.push_back(row);
    }
    return std::nullopt;
  }

  std::optional<Failure> Time(std::uint64_t count, bool in_place, double* seconds) {
    const ncclRedOp_t op = RedOp(s.op);
    for (int i = 0; i < s.warmup; ++i) {
      if (auto f = clique.AllReduce(count, op, in_place)) return f;
    }
    if (auto f = clique.Wait()) return f;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < s.iters; ++i) {
      if (auto f = clique.AllReduce(count, op, in_place)) return f;
    }
    if (auto f = clique.Wait()) return f;
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (!(took.count() > 0)) {
      return Failure{"bad_timing",
                     fmt::format("{} operations of {} elements took no time", s.iters, count)};
    }
    *seconds = took.count() / s.iters;
    return std::nullopt;
  }

  // Fresh data, one operation, every element of every rank's result compared.
  std::optional<Failure> Check(std::uint64_t count, bool in_place, std::uint32_t seed,
                               std::uint64_t* wrong, Sweep* sweep) {
    const int period = Period(s.op);
    std::vector<float> expected(static_cast<std::size_t>(period));
    for (int p = 0; p < period; ++p)
      expected[static_cast<std::size_t>(p)] = Expected(s.op, nranks, p);
    if (auto f = on_gpu ? FillOnGpu(count, in_place, seed) : FillOnHost(count, in_place, seed))
      return f;
    if (auto f = clique.AllReduce(count, RedOp(s.op), in_place)) return f;
    // Queued behind the all-reduce on each rank's stream, so one wait covers both.
    if (on_gpu) {
      if (auto f = LaunchVerify(count, seed, expected)) return f;
    }
    if (auto f = clique.Wait()) return f;
    const Placed where{in_place, count};
    return on_gpu ? ReadCounters(where, seed, expected, wrong, sweep)
                  : CompareOnHost(where, seed, expected, wrong, sweep);
  }

 private:
  struct Placed {
    bool in_place = false;
    std::uint64_t count = 0;
  };

  // Everything on the rank's own stream, in the order NCCL then sees it.
  std::optional<Failure> FillOnGpu(std::uint64_t count, bool in_place, std::uint32_t seed) {
    for (std::size_t i = 0; i < dev.size(); ++i) {
      const Devices::Rank& r = dev[i];
      if (auto f = dev.Enter(i)) return f;
      if (auto f = GPUFORGE_CU(cu, cuMemsetD32Async, r.counters, 0u, 2, r.stream)) return f;
      if (auto f = GPUFORGE_CU(cu, cuMemsetD32Async, r.counters + sizeof(std::uint64_t),
                               static_cast<unsigned>(kNcclNoBadElement), 2, r.stream))
        return f;
      CUdeviceptr target = in_place ? r.recv : r.send;
      unsigned long long n = count;
      unsigned long long phase = static_cast<unsigned long long>(base) + i + seed;
      unsigned period = static_cast<unsigned>(Period(s.op));
      void* args[] = {&target, &n, &phase, &period};
      if (auto f = GPUFORGE_CU(cu, cuLaunchKernel, r.fill, CheckBlocks(r.gpu, count), 1, 1,
                               kNcclCheckBlockThreads, 1, 1, 0, r.stream, args, nullptr))
        return f;
      // A result that never arrives must not pass for one.
      if (!in_place) {
        if (auto f = GPUFORGE_CU(cu, cuMemsetD32Async, r.recv, std::bit_cast<unsigned>(-1.0f),
                                 count, r.stream))
          return f;
      }
    }
    return std::nullopt;
  }

  std::optional<Failure> LaunchVerify(std::uint64_t count, std::uint32_t seed,
                                      const std::vector<float>& expected) {
    for (std::size_t i = 0; i < dev.size(); ++i) {
      const Devices::Rank& r = dev[i];
      if (auto f = dev.Enter(i)) return f;
      CUdeviceptr result = r.recv;
      unsigned long long n = count;
      unsigned long long phase = seed;
      unsigned period = static_cast<unsigned>(expected.size());
      float want[kNcclCheckMaxPeriod];
      for (std::size_t p = 0; p < kNcclCheckMaxPeriod; ++p)
        want[p] = expected[p < expected.size() ? p : 0];
      CUdeviceptr wrong = r.counters, first_bad = r.counters + sizeof(std::uint64_t);
      void* args[] = {&result,  &n,       &phase, &period,   &want[0],
                      &want[1], &want[2], &wrong, &first_bad};
      if (auto f = GPUFORGE_CU(cu, cuLaunchKernel, r.verify, CheckBlocks(r.gpu, count), 1, 1,
                               kNcclCheckBlockThreads, 1, 1, 0, r.stream, args, nullptr))
        return f;
    }
    return std::nullopt;
  }

  // Two counters per rank, and the first wrong element's value for the reason.
  std::optional<Failure> ReadCounters(const Placed& where, std::uint32_t seed,
                                      const std::vector<float>& expected, std::uint64_t* wrong,
                                      Sweep* sweep) {
    *wrong = 0;
    for (std::size_t i = 0; i < dev.size(); ++i) {
      if (auto f = dev.Enter(i)) return f;
      std::uint64_t counters[2] = {0, 0};
      if (auto f = GPUFORGE_CU(cu, cuMemcpyDtoH, counters, dev[i].counters, sizeof counters))
        return f;
      const std::uint64_t first = counters[1];
      if (counters[0] > 0 && *wrong == 0 && sweep->first_wrong.empty() && first < where.count) {
        float got = 0;
        if (auto f = GPUFORGE_CU(cu, cuMemcpyDtoH, &got, dev[i].recv + first * kElementBytes,
                                 kElementBytes))
          return f;
        NoteFirstWrong(i, where, first, got, expected[(first + seed) % expected.size()], sweep);
      }
      *wrong += counters[0];
    }
    return std::nullopt;
  }

  // Without kernels: the same data through pageable copies, chunk by chunk.
  std::optional<Failure> FillOnHost(std::uint64_t count, bool in_place, std::uint32_t seed) {
    const std::size_t period = static_cast<std::size_t>(Period(s.op));
    // 1, 2, .., P, 1, 2, ..: a chunk of phase k starts at pattern[k].
    std::vector<float> pattern(static_cast<std::size_t>(std::min(count, kChunkElements)) + period);
    for (std::size_t j = 0, ph = 0; j < pattern.size(); ++j, ph = ph + 1 == period ? 0 : ph + 1)
      pattern[j] = static_cast<float>(1 + ph);
    for (std::size_t i = 0; i < dev.size(); ++i) {
      const Devices::Rank& r = dev[i];
      const std::uint64_t rank = static_cast<std::uint64_t>(base) + i;
      if (auto f = dev.Enter(i)) return f;
      const CUdeviceptr target = in_place ? r.recv : r.send;
      for (std::uint64_t at = 0; at < count; at += kChunkElements) {
        const std::uint64_t n = std::min(kChunkElements, count - at);
        const std::size_t phase = (at + rank + seed) % period;
        if (auto f = GPUFORGE_CU(cu, cuMemcpyHtoD, target + at * kElementBytes,
                                 pattern.data() + phase, n * kElementBytes))
          return f;
      }
      // A result that never arrives must not pass for one.
      if (!in_place) {
        if (auto f = GPUFORGE_CU(cu, cuMemsetD32, r.recv, std::bit_cast<unsigned>(-1.0f), count))
          return f;
      }
      if (auto f = dev.SettleDefaultStream(i)) return f;
    }
    return std::nullopt;
  }

  std::optional<Failure> CompareOnHost(const Placed& where, std::uint32_t seed,
                                       const std::vector<float>& expected, std::uint64_t* wrong,
                                       Sweep* sweep) {
    const std::size_t period = expected.size();
    std::vector<float> got(static_cast<std::size_t>(std::min(where.count, kChunkElements)));
    *wrong = 0;
    for (std::size_t i = 0; i < dev.size(); ++i) {
      if (auto f = dev.Enter(i)) return f;
      for (std::uint64_t at = 0; at < where.count; at += kChunkElements) {
        const std::uint64_t n = std::min(kChunkElements, where.count - at);
        if (auto f = GPUFORGE_CU(cu, cuMemcpyDtoH, got.data(), dev[i].recv + at * kElementBytes,
                                 n * kElementBytes))
          return f;
        // The phase steps with the element: no division per element.
        std::size_t ph = (at + seed) % period;
        for (std::uint64_t j = 0; j < n; ++j, ph = ph + 1 == period ? 0 : ph + 1) {
          if (got[j] == expected[ph]) continue;
          if ((*wrong)++ == 0 && sweep->first_wrong.empty())
            NoteFirstWrong(i, where, at + j, got[j], expected[ph], sweep);
        }
      }
    }
    return std::nullopt;
  }

  void NoteFirstWrong(std::size_t i, const Placed& where, std::uint64_t element, float got,
                      float want, Sweep* sweep) const {
    sweep->first_wrong = fmt::format(
        "{}, rank {}, {} of {} bytes, element {}: {} where {} was expected", dev[i].gpu.Label(),
        base + static_cast<int>(i), where.in_place ? "in-place" : "out-of-place",
        where.count * kElementBytes, element, got, want);
  }
};

// Round 1 of a multi-node run: the GPU counts and node 0's NCCL id.
std::optional<Failure> Meet(const NcclApi& nc, const Settings& s, const Context& ctx, int local,
                            ncclUniqueId* id, int* nranks, int* base) {
  std::string mine = fmt::format("gpus={}", local);
  if (s.node_index == 0) {
    // The id holds this process's bootstrap socket address: only this process can be node 0.
    if (auto f = GPUFORGE_NCCL(nc, ncclGetUniqueId, id)) return f;
    mine += ",id=" + Hex(*id);
  }
  gpuforge::Result<std::vector<std::string>> parts = ctx.exchange(mine);
  if (!parts.ok())
    return Failure{"exchange_error", "meeting the other nodes: " + parts.error().message};
  if (parts->size() != static_cast<std::size_t>(s.nodes)) {
    return Failure{"exchange_error", fmt::format("meeting the other nodes: {} parts for {} nodes",
                                                 parts->size(), s.nodes)};
  }
  *nranks = 0;
  *base = 0;
  for (std::size_t k = 0; k < parts->size(); ++k) {
    gpuforge::Result<Offer> o = ParseOffer((*parts)[k], static_cast<int>(k));
    if (!o.ok()) return Failure{"exchange_error", "meeting the other nodes: " + o.error().message};
    if (k == 0) *id = FromHex(o->id_hex);
    if (static_cast<int>(k) < s.node_index) *base += o->gpus;
    *nranks += o->gpus;
  }
  if ((*parts)[s.node_index] != mine) {
    return Failure{"exchange_error",
                   fmt::format("meeting the other nodes: part {} is not what this "
                               "node offered",
                               s.node_index)};
  }
  return std::nullopt;
}

std::optional<Failure> RunSweep(const CudaApi& cu, const NcclApi& nc, const Settings& s,
                                const Context& ctx, const std::vector<CudaGpu>& gpus,
                                std::span<const unsigned char> kernels, Sweep* sweep) {
  if (auto f = GPUFORGE_NCCL(nc, ncclGetVersion, &sweep->version)) return f;
  const std::vector<std::uint64_t> sizes = Sizes(s);
  // The fatbin has SASS from sm_80 up (and compute_90 PTX): older GPUs are checked on the host.
  const bool on_gpu =
      s.check && !kernels.empty() &&
      std::all_of(gpus.begin(), gpus.end(), [](const CudaGpu& g) { return g.cc_major >= 8; });
  sweep->check = !s.check ? "off" : on_gpu ? "gpu" : "host";
  Devices dev(cu);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::optional<Failure> f = dev.Add(gpus[i], sizes.back());
    if (!f && on_gpu) f = dev.LoadKernels(i, kernels);
    if (f) {
      f->reason = gpus[i].Label() + ": " + f->reason;
      return f;
    }
  }
  ncclUniqueId id{};
  int nranks = static_cast<int>(gpus.size()), base = 0;
  if (s.nodes == 1) {
    if (auto f = GPUFORGE_NCCL(nc, ncclGetUniqueId, &id)) return f;
  } else if (auto f = Meet(nc, s, ctx, static_cast<int>(gpus.size()), &id, &nranks, &base)) {
    return f;
  }
  sweep->nranks = nranks;
  if (ctx.Cancelled()) return Failure{"cancelled", "cancelled before NCCL started"};
  Clique clique(nc, cu, dev, ctx);
  if (auto f = clique.Init(id, nranks, base)) return f;
  clique.Watch();
  Sweeper sweeper{cu, nc, s, ctx, dev, clique, nranks, base, on_gpu};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (auto f = sweeper.MeasureSize(sizes[i], static_cast<std::uint32_t>(2 * i + 1), sweep))
      return f;
  }
  clique.Healthy();
  return std::nullopt;
}

}  // namespace

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

namespace {

class AllReduceProbe : public Probe {
 public:
  AllReduceProbe(CudaLoader cuda, NcclLoader nccl, NcclLogFactory log,
                 std::span<const unsigned char> kernels)
      : cuda_(std::move(cuda)), nccl_(std::move(nccl)), log_(std::move(log)), kernels_(kernels) {}

  std::string key() const override { return kKey; }
  std::string description() const override {
    return "NCCL all-reduce bus bandwidth and correctness over this node's GPUs (or several "
           "nodes'), as nccl-tests' all_reduce_perf";
  }
  std::vector<Param> params() const override {
    return {
        {"min_bytes", "8", "smallest size, in bytes or with a unit (8, 1MiB)"},
        {"max_bytes", "8GiB", "largest size; send and receive buffers of this size per GPU"},
        {"step_factor", "2", "each size is the previous times this"},
        {"warmup", "5", "untimed operations before timing, per size and placement"},
        {"iters", "20", "timed operations per size and placement"},
        {"check", "1", "1: after timing, one more operation on fresh data, every element checked"},
        {"op", "sum", "reduction: sum, prod, max or min"},
        {"datatype", "float", "element type: float"},
        {"gpus", "all", "'all' or N: the first N GPUs in PCI bus order"},
        {"nodes", "1", "agents taking part; more than 1 meets the others through the controller"},
        {"node_index", "0", "this agent's place among the nodes (0 makes the NCCL id)"},
        {"preset", "", "'quick': one size of 4 MiB, 100 operations (overrides the sweep)"},
        {"nccl_debug", "INFO",
         "NCCL_DEBUG unless the environment sets it: VERSION, WARN, INFO, TRACE"},
    };
  }

  ProbeResult Run(const Context& ctx) override {
    gpuforge::Result<Settings> s = ParseSettings(ctx);
    if (!s.ok()) return Fail(kKey, "bad_param", s.error().message);
    if (s->nodes > 1 && !ctx.exchange) {
      return Fail(
          kKey, "no_exchange",
          fmt::format("nodes={} needs the controller's exchange; this agent runs alone", s->nodes));
    }
    CudaLoad cuda = cuda_();
    if (!cuda.api) return Skip(kKey, cuda.code, cuda.reason);
    NcclLoad nccl = nccl_();
    if (!nccl.api) return Skip(kKey, nccl.code, nccl.reason);
#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
    return Measure(*cuda.api, *nccl.api, *s, ctx);
#else
    return Skip(kKey, "no_nccl_headers", "this build has no NCCL support");
#endif
  }

 private:
#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
  ProbeResult Measure(const CudaApi& cu, const NcclApi& nc, const Settings& s,
                      const Context& ctx) const {
    std::vector<CudaGpu> gpus;
    if (auto stop = OpenCuda(cu, kKey, &gpus)) return *stop;
    if (s.gpus > static_cast<int>(gpus.size())) {
      return Fail(kKey, "bad_param",
                  fmt::format("gpus={} but the CUDA driver sees {} GPU(s)", s.gpus, gpus.size()));
    }
    if (s.gpus > 0) gpus.resize(static_cast<std::size_t>(s.gpus));
    std::unique_ptr<NcclLogCapture> log = log_();
    log->Start(s.nccl_debug);
    Sweep sweep;
    std::vector<Failure> failures;
    if (auto f = RunSweep(cu, nc, s, ctx, gpus, kernels_, &sweep)) failures.push_back(*f);
    const NcclLogSummary summary = ParseNcclLog(log->Finish());
    // Only a node whose own sweep succeeded trades times; the others are stuck in NCCL or
    // gone, and the controller's timeout ends their round.
    if (failures.empty() && s.nodes > 1) {
      if (auto f = ShareTimes(ctx, s, &sweep)) failures.push_back(*f);
    }
    std::uint64_t wrong = 0, elements = 0;
    for (const internal::Row& r : sweep.rows) {
      wrong += r.wrong;
      elements += r.count * static_cast<std::uint64_t>(sweep.nranks);
    }
    if (wrong > 0) {
      failures.push_back(
          {"wrong_data",
           fmt::format("{} of {} checked elements were wrong over all "
                       "ranks; first here: {}",
                       wrong, elements,
                       sweep.first_wrong.empty() ? "on another node" : sweep.first_wrong)});
    }
    ProbeResult r = Finish(kKey, Measurements(s, sweep, summary), failures);
    // A whole sweep's measurements already take most of the 64 KiB a result line may have.
    std::size_t chars = 0;
    for (const std::string& line : summary.kept) {
      if ((chars += line.size() + 4) > kLogBudget) break;
      r.log.push_back(line);
    }
    return r;
  }
#endif

  CudaLoader cuda_;
  NcclLoader nccl_;
  NcclLogFactory log_;
  std::span<const unsigned char> kernels_;
};

}  // namespace

std::unique_ptr<Probe> MakeNcclAllReduceProbe(CudaLoader cuda, NcclLoader nccl, NcclLogFactory log,
                                              std::span<const unsigned char> kernels) {
  return std::make_unique<AllReduceProbe>(std::move(cuda), std::move(nccl), std::move(log),
                                          kernels);
}

std::unique_ptr<Probe> MakeNcclAllReduceProbe() {
  return MakeNcclAllReduceProbe(LoadCudaDriver, LoadNccl, MakeNcclLogFile, EmbeddedKernels());
}

}  // namespace gpuforge::probe::internal
