#include "gpuforge/probe/gpu_stream.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "gpuforge/base/text.h"

namespace gpuforge::probe {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// A window line with every field is under 1 KiB; a line 64 times that is not an agent's.
constexpr std::size_t kMaxLine = 64 * 1024;
// The largest integer a double holds exactly: counters beyond it are not counts.
constexpr double kMaxCount = 9007199254740992.0;
constexpr std::string_view kCodeChars = "abcdefghijklmnopqrstuvwxyz0123456789_.";
constexpr std::string_view kPhaseChars = "abcdefghijklmnopqrstuvwxyz0123456789_";

// The counters by their JSON names, in the order they are written.
constexpr std::pair<const char*, std::optional<double> GpuCounters::*> kCounters[] = {
    {"ecc_uncorrectable", &GpuCounters::ecc_uncorrectable},
    {"ecc_correctable", &GpuCounters::ecc_correctable},
    {"remap_failed", &GpuCounters::remap_failed},
    {"remap_pending", &GpuCounters::remap_pending},
    {"pcie_replay", &GpuCounters::pcie_replay},
    {"nvlink_errors", &GpuCounters::nvlink_errors},
};
constexpr std::pair<const char*, std::optional<Spread> GpuWindow::*> kSpreads[] = {
    {"power_w", &GpuWindow::power_w},           {"power_limit_w", &GpuWindow::power_limit_w},
    {"sm_clock_mhz", &GpuWindow::sm_clock_mhz}, {"mem_clock_mhz", &GpuWindow::mem_clock_mhz},
    {"gpu_temp_c", &GpuWindow::gpu_temp_c},     {"hbm_temp_c", &GpuWindow::hbm_temp_c},
};

// The parser's ranges, which FitForStream holds the agent to.
constexpr double kGaugeMax = 1e6;  // every gauge is at most a few thousand (MHz, W, C)
constexpr double kTflopsMax = 1e6;
constexpr int kPcieGenMax = 16;
constexpr int kPcieWidthMax = 32;
constexpr int kXidMax = 999999;  // as the kernel log parser takes them (probe/gpu/xid.cc)

std::string BitName(std::uint64_t bit) { return fmt::format("{:#x}", bit); }

OrderedJson CountersJson(const GpuCounters& c) {
  OrderedJson o = OrderedJson::object();
  for (const auto& [name, field] : kCounters) {
    if (c.*field) o[name] = *(c.*field);
  }
  return o;
}

void PutLink(OrderedJson& o, const char* gen_key, const std::optional<int>& gen, const char* width_key,
             const std::optional<int>& width) {
  if (gen) o[gen_key] = *gen;
  if (width) o[width_key] = *width;
}

OrderedJson WindowJson(const GpuWindow& w) {
  OrderedJson o = {{"start_s", w.start_s}, {"samples", w.samples}, {"phase", w.phase}};
  for (const auto& [name, field] : kSpreads) {
    if (const std::optional<Spread>& s = w.*field) o[name] = {s->min, s->median, s->max};
  }
  if (w.tflops) o["tflops"] = *w.tflops;
  if (w.wrong_elements) o["wrong_elements"] = *w.wrong_elements;
  PutLink(o, "pcie_gen", w.pcie_gen, "pcie_width", w.pcie_width);
  OrderedJson reasons = OrderedJson::object();
  for (const auto& [bit, s] : w.reasons) reasons[BitName(bit)] = {s.set, s.longest, s.head, s.tail};
  o["reasons"] = std::move(reasons);
  o["counters"] = CountersJson(w.counters);
  return o;
}

// The checks of one parsed line: each returns false after setting `why`.
class Reader {
 public:
  std::string why;

  bool Fail(std::string text) {
    why = std::move(text);
    return false;
  }
  const Json* Field(const Json& o, const char* key) {
    auto it = o.find(key);
    return it == o.end() ? nullptr : &*it;
  }
  bool Number(const Json& o, const char* key, double lo, double hi, double* out) {
    const Json* v = Field(o, key);
    if (v == nullptr || !v->is_number()) return Fail(fmt::format("'{}' is missing or not a number", key));
    *out = v->get<double>();
    if (!std::isfinite(*out) || *out < lo || *out > hi) {
      return Fail(fmt::format("'{}' is {}, outside {} to {}", key, *out, lo, hi));
    }
    return true;
  }
  bool Int(const Json& o, const char* key, int lo, int hi, int* out) {
    double d = 0;
    if (!Number(o, key, lo, hi, &d)) return false;
    if (d != std::floor(d)) return Fail(fmt::format("'{}' is not a whole number", key));
    *out = static_cast<int>(d);
    return true;
  }
  bool OptionalInt(const Json& o, const char* key, int lo, int hi, std::optional<int>* out) {
    if (Field(o, key) == nullptr) return true;
    int v = 0;
    if (!Int(o, key, lo, hi, &v)) return false;
    *out = v;
    return true;
  }
  bool OptionalNumber(const Json& o, const char* key, double lo, double hi, std::optional<double>* out) {
    if (Field(o, key) == nullptr) return true;
    double v = 0;
    if (!Number(o, key, lo, hi, &v)) return false;
    *out = v;
    return true;
  }
  bool Text(const Json& o, const char* key, std::string_view alphabet, std::size_t max, std::string* out) {
    const Json* v = Field(o, key);
    if (v == nullptr || !v->is_string()) return Fail(fmt::format("'{}' is missing or not text", key));
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() > max) return Fail(fmt::format("'{}' is longer than {} characters", key, max));
    if (!alphabet.empty() && s.find_first_not_of(alphabet) != std::string::npos) {
      return Fail(fmt::format("'{}' has a character outside [{}]", key, alphabet));
    }
    *out = alphabet.empty() ? text::Printable(s, max) : s;
    return true;
  }
  bool Counters(const Json& o, const char* key, GpuCounters* out) {
    const Json* c = Field(o, key);
    if (c == nullptr || !c->is_object()) return Fail(fmt::format("'{}' is missing or not an object", key));
    for (const auto& [name, field] : kCounters) {
      if (!OptionalNumber(*c, name, 0, kMaxCount, &(out->*field))) return false;
      if (out->*field && *(out->*field) != std::floor(*(out->*field))) {
        return Fail(fmt::format("counter '{}' is not a whole number", name));
      }
    }
    return true;
  }
  bool Window(const Json& o, GpuWindow* w) {
    if (!Number(o, "start_s", 0, kBurninMaxSeconds, &w->start_s)) return false;
    if (!Int(o, "samples", 0, static_cast<int>(kGpuWindowSeconds), &w->samples)) return false;
    if (!Text(o, "phase", kPhaseChars, 16, &w->phase)) return false;
    if (w->phase.empty()) return Fail("'phase' is empty");
    for (const auto& [name, field] : kSpreads) {
      const Json* s = Field(o, name);
      if (s == nullptr) continue;
      if (!s->is_array() || s->size() != 3 || !(*s)[0].is_number() || !(*s)[1].is_number() || !(*s)[2].is_number()) {
        return Fail(fmt::format("'{}' is not [min, median, max]", name));
      }
      const Spread v{(*s)[0].get<double>(), (*s)[1].get<double>(), (*s)[2].get<double>()};
      // Every gauge here is at most a few thousand (MHz, W, C); a million is no reading.
      for (double x : {v.min, v.median, v.max}) {
        if (!std::isfinite(x) || x < -kGaugeMax || x > kGaugeMax) return Fail(fmt::format("'{}' has {}, not a reading", name, x));
      }
      if (!(v.min <= v.median && v.median <= v.max)) return Fail(fmt::format("'{}' is not in order min <= median <= max", name));
      w->*field = v;
    }
    if (!OptionalNumber(o, "tflops", 0, kTflopsMax, &w->tflops)) return false;
    if (!OptionalNumber(o, "wrong_elements", 0, kMaxCount, &w->wrong_elements)) return false;
    if (w->wrong_elements && *w->wrong_elements != std::floor(*w->wrong_elements)) {
      return Fail("'wrong_elements' is not a whole number");
    }
    if (!OptionalInt(o, "pcie_gen", 1, kPcieGenMax, &w->pcie_gen)) return false;
    if (!OptionalInt(o, "pcie_width", 1, kPcieWidthMax, &w->pcie_width)) return false;
    const Json* r = Field(o, "reasons");
    if (r == nullptr || !r->is_object()) return Fail("'reasons' is missing or not an object");
    for (const auto& [name, value] : r->items()) {
      std::uint64_t bit = 0;
      for (std::uint64_t kept : kClocksEventKept) {
        if (name == BitName(kept)) bit = kept;
      }
      if (bit == 0) return Fail(fmt::format("reason '{}' is not one burn-in keeps", text::Printable(name, 20)));
      if (!value.is_array() || value.size() != 4) return Fail(fmt::format("reason {} is not [set, longest, head, tail]", name));
      int v[4] = {};
      for (std::size_t i = 0; i < 4; ++i) {
        const Json& x = value[i];
        if (!x.is_number_integer() || x.get<long long>() < 0 || x.get<long long>() > w->samples) {
          return Fail(fmt::format("reason {} has a count outside 0 to the window's {} samples", name, w->samples));
        }
        v[i] = static_cast<int>(x.get<long long>());
      }
      const BitStreaks s{v[0], v[1], v[2], v[3]};
      // A run is at most as long as the longest, the longest at most the samples set, and a bit
      // that was never set is not written.
      // The runs at the start and the end are apart unless every sample had the bit.
      if (s.set == 0 || s.longest == 0 || s.longest > s.set || s.head > s.longest || s.tail > s.longest ||
          (s.set < w->samples && s.head + s.tail > s.set)) {
        return Fail(fmt::format("reason {} has streaks that cannot be", name));
      }
      w->reasons.emplace_back(bit, s);
    }
    // In the order FoldWindow keeps them, whatever order the object had.
    std::vector<std::pair<std::uint64_t, BitStreaks>> ordered;
    for (std::uint64_t kept : kClocksEventKept) {
      for (const auto& r2 : w->reasons) {
        if (r2.first == kept) ordered.push_back(r2);
      }
    }
    w->reasons = std::move(ordered);
    return Counters(o, "counters", &w->counters);
  }
};

}  // namespace

std::optional<int> StreamGpuIndex(std::string_view gpu) {
  if (!gpu.starts_with("gpu") || gpu.size() < 4 || gpu.size() > 6) return std::nullopt;
  const std::string_view digits = gpu.substr(3);
  if (digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;  // "gpu01" is not gpu1's name
  int i = 0;
  for (char c : digits) i = i * 10 + (c - '0');
  return i;
}

std::string ToStreamLine(const StreamLine& line) {
  OrderedJson j = {{"schema", kGpuStreamSchema}};
  std::visit(
      [&j](const auto& l) {
        using T = std::decay_t<decltype(l)>;
        if constexpr (std::is_same_v<T, StreamStart>) {
          j["type"] = "start";
          j["gpu"] = l.gpu;
          j["model"] = l.model;
          PutLink(j, "pcie_gen_max", l.pcie_gen_max, "pcie_width_max", l.pcie_width_max);
          j["planned_s"] = l.planned_s;
          j["start_counters"] = CountersJson(l.start_counters);
          if (!l.xid_unread.empty()) j["xid_unread"] = l.xid_unread;
        } else if constexpr (std::is_same_v<T, StreamWindow>) {
          j["type"] = "window";
          j["gpu"] = l.gpu;
          j["window"] = WindowJson(l.window);
        } else if constexpr (std::is_same_v<T, StreamEvent>) {
          j["type"] = "event";
          j["gpu"] = l.gpu;
          j["at_s"] = l.event.at_s;
          j["xid"] = l.event.xid;
          j["detail"] = l.event.detail;
        } else {
          j["type"] = "ended";
          j["gpu"] = l.gpu;
          j["code"] = l.code;
          j["reason"] = l.reason;
        }
      },
      line);
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

gpuforge::Result<StreamLine> ParseStreamLine(std::string_view source, std::string_view line) {
  auto bad = [&](std::string_view why) {
    return Error{fmt::format("{}: not a burn-in stream line ({}): '{}'", source, why, text::Printable(line, 80))};
  };
  if (line.size() > kMaxLine) return bad("longer than 64 KiB");
  const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  Reader r;
  std::string schema, type, gpu;
  if (!r.Text(j, "schema", "", 64, &schema)) return bad(r.why);
  if (schema != kGpuStreamSchema) return bad(fmt::format("schema is not {}", kGpuStreamSchema));
  if (!r.Text(j, "type", kPhaseChars, 16, &type)) return bad(r.why);
  if (!r.Text(j, "gpu", kPhaseChars, 8, &gpu)) return bad(r.why);
  if (!StreamGpuIndex(gpu)) return bad("'gpu' is not gpu0 to gpu999");
  if (type == "start") {
    StreamStart s;
    s.gpu = gpu;
    // NVML's name buffer is 96 bytes (NVML_DEVICE_NAME_V2_BUFFER_SIZE).
    if (!r.Text(j, "model", "", 96, &s.model)) return bad(r.why);
    if (!r.OptionalInt(j, "pcie_gen_max", 1, kPcieGenMax, &s.pcie_gen_max)) return bad(r.why);
    if (!r.OptionalInt(j, "pcie_width_max", 1, kPcieWidthMax, &s.pcie_width_max)) return bad(r.why);
    if (!r.Number(j, "planned_s", 1, kBurninMaxSeconds, &s.planned_s)) return bad(r.why);
    if (!r.Counters(j, "start_counters", &s.start_counters)) return bad(r.why);
    if (r.Field(j, "xid_unread") != nullptr && !r.Text(j, "xid_unread", "", 400, &s.xid_unread)) return bad(r.why);
    return StreamLine{std::move(s)};
  }
  if (type == "window") {
    StreamWindow w;
    w.gpu = gpu;
    const Json* o = r.Field(j, "window");
    if (o == nullptr || !o->is_object()) return bad("'window' is missing or not an object");
    if (!r.Window(*o, &w.window)) return bad(r.why);
    return StreamLine{std::move(w)};
  }
  if (type == "event") {
    StreamEvent e;
    e.gpu = gpu;
    if (!r.Number(j, "at_s", 0, kBurninMaxSeconds, &e.event.at_s)) return bad(r.why);
    // Xid codes are small positive numbers (NVIDIA's catalog ends in the 100s); the kernel log
    // parser takes up to 999999.
    if (!r.Int(j, "xid", 1, kXidMax, &e.event.xid)) return bad(r.why);
    if (!r.Text(j, "detail", "", 512, &e.event.detail)) return bad(r.why);
    return StreamLine{std::move(e)};
  }
  if (type == "ended") {
    StreamEnded e;
    e.gpu = gpu;
    if (!r.Text(j, "code", kCodeChars, 64, &e.code)) return bad(r.why);
    if (e.code.empty()) return bad("'code' is empty");
    if (!r.Text(j, "reason", "", 2000, &e.reason)) return bad(r.why);
    return StreamLine{std::move(e)};
  }
  return bad("'type' is not start, window, event or ended");
}

namespace {

void FitCounters(GpuCounters& c) {
  for (const auto& [name, field] : kCounters) {
    std::optional<double>& v = c.*field;
    if (v && (!std::isfinite(*v) || *v < 0 || *v > kMaxCount || *v != std::floor(*v))) v.reset();
  }
}
void FitInt(std::optional<int>& v, int hi) {
  if (v && (*v < 1 || *v > hi)) v.reset();
}

}  // namespace

void FitForStream(StreamLine& line) {
  if (auto* s = std::get_if<StreamStart>(&line)) {
    FitInt(s->pcie_gen_max, kPcieGenMax);
    FitInt(s->pcie_width_max, kPcieWidthMax);
    FitCounters(s->start_counters);
  } else if (auto* w = std::get_if<StreamWindow>(&line)) {
    GpuWindow& x = w->window;
    for (const auto& [name, field] : kSpreads) {
      std::optional<Spread>& v = x.*field;
      if (!v) continue;
      bool fits = v->min <= v->median && v->median <= v->max;
      for (double d : {v->min, v->median, v->max}) fits = fits && std::isfinite(d) && std::abs(d) <= kGaugeMax;
      if (!fits) v.reset();
    }
    if (x.tflops && (!std::isfinite(*x.tflops) || *x.tflops < 0 || *x.tflops > kTflopsMax)) x.tflops.reset();
    if (x.wrong_elements && (!std::isfinite(*x.wrong_elements) || *x.wrong_elements < 0 ||
                             *x.wrong_elements > kMaxCount || *x.wrong_elements != std::floor(*x.wrong_elements))) {
      x.wrong_elements.reset();
    }
    FitInt(x.pcie_gen, kPcieGenMax);
    FitInt(x.pcie_width, kPcieWidthMax);
    FitCounters(x.counters);
  } else if (auto* e = std::get_if<StreamEvent>(&line)) {
    e->event.xid = std::clamp(e->event.xid, 1, kXidMax);
    e->event.detail = text::Printable(e->event.detail, 512);
  }
}

gpuforge::Status StreamFold::Take(StreamLine line) {
  const std::string& gpu = std::visit([](const auto& l) -> const std::string& { return l.gpu; }, line);
  const std::optional<int> index = StreamGpuIndex(gpu);
  if (!index) return Error{fmt::format("node {}: burn-in stream names '{}', not a GPU", node_, text::Printable(gpu, 16))};
  auto bad = [&](std::string_view why) { return Error{fmt::format("node {}, {}: burn-in stream {}", node_, gpu, why)}; };
  auto it = gpus_.find(*index);
  if (auto* s = std::get_if<StreamStart>(&line)) {
    if (it != gpus_.end()) return bad("starts the GPU twice");
    if (std::abs(s->planned_s - planned_s_) > 0.5) {
      return bad(fmt::format("plans {} s, not the {} s of this burn-in", s->planned_s, planned_s_));
    }
    if (gpus_.size() >= kStreamMaxGpus) return bad(fmt::format("names more than {} GPUs", kStreamMaxGpus));
    GpuSeries g;
    g.node = node_;
    g.gpu = std::move(s->gpu);
    g.model = std::move(s->model);
    g.pcie_gen_max = s->pcie_gen_max;
    g.pcie_width_max = s->pcie_width_max;
    g.planned_s = s->planned_s;
    g.start_counters = s->start_counters;
    g.xid_unread = std::move(s->xid_unread);
    gpus_.emplace(*index, Gpu{std::move(g), false});
    return {};
  }
  if (it == gpus_.end()) return bad("sends data before the GPU's start line");
  Gpu& g = it->second;
  if (g.ended) return bad("sends data after the GPU's end");
  if (auto* w = std::get_if<StreamWindow>(&line)) {
    const GpuWindow& x = w->window;
    if (!g.series.windows.empty() && x.start_s < g.series.windows.back().start_s + kGpuWindowSeconds) {
      return bad(fmt::format("sends a window at {} s, before the previous one ended", x.start_s));
    }
    // One window per 10 s of the planned run: none starts at or after its end.
    if (x.start_s >= g.series.planned_s) {
      return bad(fmt::format("sends a window at {} s, past the planned {} s", x.start_s, g.series.planned_s));
    }
    g.series.windows.push_back(std::move(w->window));
    return {};
  }
  if (auto* e = std::get_if<StreamEvent>(&line)) {
    if (!g.series.events.empty() && e->event.at_s < g.series.events.back().at_s) {
      return bad(fmt::format("sends an Xid at {} s, before the previous one", e->event.at_s));
    }
    if (e->event.at_s > g.series.planned_s) {
      return bad(fmt::format("sends an Xid at {} s, past the planned {} s", e->event.at_s, g.series.planned_s));
    }
    // Beyond a thousand Xids the GPU has long failed; more only costs the controller memory.
    if (g.series.events.size() >= 1000) return {};
    g.series.events.push_back(std::move(e->event));
    return {};
  }
  auto& end = std::get<StreamEnded>(line);
  g.series.ended_code = std::move(end.code);
  g.series.ended_reason = std::move(end.reason);
  g.ended = true;
  return {};
}

std::vector<GpuSeries> StreamFold::Series() const {
  std::vector<GpuSeries> out;
  out.reserve(gpus_.size());
  for (const auto& [index, g] : gpus_) out.push_back(g.series);
  return out;
}

}  // namespace gpuforge::probe
