#include "gpuforge/validate/thresholds.h"

#include "gpuforge/base/read_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "gpuforge/base/diag.h"
#include "gpuforge/base/quantity.h"
#include "gpuforge/inventory/yaml_reader.h"
#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::validate {

std::span<const ThresholdDefault> DefaultThresholds() {
  static constexpr std::array kDefaults = {
      ThresholdDefault{"storage.read.min_gbs_per_gpu", 1.0, "GB/s",
                       "sequential read of a storage tier, per GPU on the node",
                       "guide 000, Storage: \"Sequential read bandwidth: at least 1GB/s per GPU\""},
      ThresholdDefault{"storage.metadata.max_p99_latency_ms", 10.0, "ms",
                       "p99 latency of a 4 KiB write + fsync on a storage tier",
                       "guide 004, Monitoring: \"latency above 10ms kills gradient sync\""},
      ThresholdDefault{"storage.checkpoint.max_seconds", 120.0, "s",
                       "time for this node's share of the workload's checkpoint at the measured write rate",
                       "guide 004: \"If your checkpointing takes more than 2 minutes, optimize your storage\""},
      ThresholdDefault{"tcp.bandwidth.min_fraction", 0.8, "of line rate",
                       "TCP bandwidth between two nodes on a storage or control network",
                       "guide 000: \"If you're below 80% of theoretical, investigate\""},
      ThresholdDefault{"nccl.allreduce.min_fraction", 0.8, "of the reference",
                       "NCCL all-reduce bus bandwidth at the sweep's largest size, against the GPU model's one-node "
                       "figure, or across nodes against the slowest node's compute NIC bandwidth",
                       "guide 000: \"If you're below 80% of theoretical, investigate\""},
      ThresholdDefault{"nccl.quick.max_ms", 30.0, "ms",
                       "the guide's quick check: 1024x1024 float all-reduce, 100 iterations, time per op",
                       "guide 004: \"If any GPU shows >30ms for all-reduce, your topology file is wrong\""},
      ThresholdDefault{"rdma.write.min_fraction", 0.8, "of line rate", "RDMA write bandwidth per HCA pair",
                       "guide 000: 80% of theoretical; NVIDIA's multinode scripts pass at 90%"},
      ThresholdDefault{"rdma.write_lat.max_us", 5.0, "us",
                       "RDMA write ping-pong latency (half round trip, median) per HCA pair",
                       "gpuforge's default, not from the guides: ib_write_lat gives about 1-2 us through one "
                       "InfiniBand switch; set your fabric's own figure"},
      ThresholdDefault{"ib.counters.max_link_downed", 4, "count",
                       "times a compute HCA port went down since its counters were cleared; more fails",
                       "anchors.md: IB link flaps, >= 5 per device in 24 h fail (Azure HPC health checks); the "
                       "counter runs since boot or the last clear, so this is stricter"},
      ThresholdDefault{"ib.counters.max_errors", 0, "count",
                       "symbol, link recovery, receive, integrity, overrun and discard errors of a port; more warns",
                       "gpuforge's default: nonzero error counters deserve a look; the guides give no figure"},
      ThresholdDefault{"gpu.health.max_sram_correctable", 10000, "count",
                       "aggregate correctable SRAM ECC errors per GPU", "anchors.md: Azure HPC health checks"},
      ThresholdDefault{"gpu.health.max_dram_correctable", 2e7, "count",
                       "aggregate correctable DRAM ECC errors per GPU", "anchors.md: Azure HPC health checks"},
      ThresholdDefault{"gpu.health.min_power_under_load_w", 350, "W",
                       "power draw per GPU during the compute probe; below it the GPU is throttled",
                       "guide 004, Monitoring: \"drop below 350W indicates thermal or power throttling\""},
      ThresholdDefault{"gpu.copy.reference_fraction", 0.75, "of the model's figure",
                       "device-to-device copy bandwidth against the model's reference",
                       "anchors.md: DCGM diag SKU table convention (0.75 x a measured reference)"},
      ThresholdDefault{"gpu.compute.reference_fraction", 0.75, "of the model's figure",
                       "gpu.gemm's bf16 TFLOP/s against the model's bf16_tflops (a PyTorch matmul figure)",
                       "same convention as gpu.copy"},
      ThresholdDefault{"gpu.compute.min_peak_fraction", 0.8, "of the GPU's FMA peak",
                       "gpu.compute's fp32 FMA TFLOP/s against the GPU's own peak, SMs x fp32 lanes x 2 x peak "
                       "SM clock (the probe's fp32_peak_fraction)",
                       "gpuforge's default: independent FMA chains reach about 90-95% of the peak at the peak "
                       "clock; a long FMA load may settle the clock below the peak (power), so 20% is left"},
      ThresholdDefault{"gpu.h2d.reference_fraction", 1.0, "of the model's figure",
                       "pinned host-to-device copy bandwidth against the model's pass mark",
                       "anchors.md: Azure HPC health checks (nvbandwidth)"},
      ThresholdDefault{"gpu.d2h.reference_fraction", 1.0, "of the model's figure",
                       "pinned device-to-host copy bandwidth against the model's pass mark",
                       "anchors.md: Azure HPC health checks (nvbandwidth)"},
      // Burn-in (#30, validate/burnin.cc; docs/burnin.md).
      ThresholdDefault{"burnin.power.min_limit_fraction", 0.9, "of the enforced power limit",
                       "a GPU's median power under sustained GEMM against its enforced power limit",
                       "gpuforge's mark, stricter than DCGM targeted_power's 0.75 (anchors.md, Burn-in): guide 004's "
                       "\"GPUs will throttle to 300W\" of 400 W is 0.75 and passes DCGM"},
      ThresholdDefault{"burnin.peers.max_deficit", 0.05, "below the peers' median",
                       "how far a GPU's loaded SM clock or GEMM TFLOPS may fall below the median of the other GPUs of "
                       "its model, on its node and across the run",
                       "gpuforge's default (#30); anchors.md: NVIDIA/DCGM #122, an A100 at 6.7 of 19.2 TFLOPS passed "
                       "--run xlong: only a comparison with peers catches it"},
      ThresholdDefault{"burnin.throttle.hw_consecutive_samples", 3, "samples in a row",
                       "HW slowdown (0x8), HW thermal (0x40) or power brake (0x80) set for this many 1 Hz samples in "
                       "a row fails",
                       "anchors.md: NVSentinel #1666's fix reads bit 0x80 over 3 consecutive polls (a raw watch fired "
                       "on 69% of 288 nodes)"},
      ThresholdDefault{"burnin.throttle.sw_thermal_max_fraction", 0.01, "of the samples",
                       "SW thermal slowdown (0x20) set in more than this share of the samples warns",
                       "gpuforge's default (#30); anchors.md: 0x20 SW thermal is a warning sign, not a failure"},
      ThresholdDefault{"burnin.temperature.max_above_peers_c", 8, "C",
                       "how much hotter than the median of its model's other GPUs a GPU may run under load at equal "
                       "power",
                       "gpuforge's default (#30): guide 004, Thermal throttling: a cooling fault shows as heat before "
                       "it shows as a throttle"},
      ThresholdDefault{"burnin.temperature.equal_power_fraction", 0.05, "above the peers' median power",
                       "a GPU drawing at most this much more power than its peers counts as at equal power; one "
                       "drawing more is not compared on temperature",
                       "gpuforge's default (#30)"},
  };
  return kDefaults;
}

std::span<const std::string_view> ModelFigureNames() {
  static constexpr std::array<std::string_view, 7> kNames = {"h2d_gbs",     "d2h_gbs",     "hbm_copy_gbs",
                                                             "bf16_tflops", "fp32_tflops", "allreduce_busbw_gbs",
                                                             "ib_write_gbits"};
  return kNames;
}

std::span<const ModelMark> ModelMarks() {
  static constexpr std::array kMarks = {
      ModelMark{"gpu.copy", "bandwidth", "hbm_copy_gbs", "gpu.copy.reference_fraction", "GB/s",
                "device-to-device copy bandwidth, per GPU"},
      ModelMark{"gpu.h2d", "bandwidth", "h2d_gbs", "gpu.h2d.reference_fraction", "GB/s",
                "pinned host-to-device copy bandwidth, per GPU"},
      ModelMark{"gpu.d2h", "bandwidth", "d2h_gbs", "gpu.d2h.reference_fraction", "GB/s",
                "pinned device-to-host copy bandwidth, per GPU"},
      ModelMark{"gpu.compute", "fp32_tflops", "fp32_tflops", "gpu.compute.reference_fraction", "TFLOP/s",
                "fp32 FMA TFLOP/s, per GPU"},
      ModelMark{"gpu.gemm", "bf16_tflops", "bf16_tflops", "gpu.compute.reference_fraction", "TFLOP/s",
                "bf16 matmul TFLOP/s, per GPU"},
      ModelMark{"nccl.allreduce", "busbw", "allreduce_busbw_gbs", "nccl.allreduce.min_fraction", "GB/s",
                "NCCL all-reduce bus bandwidth inside the node at the sweep's largest size"},
  };
  return kMarks;
}

const char* ToString(Origin o) {
  switch (o) {
    case Origin::kDefault: return "default";
    case Origin::kInventory: return "inventory";
    case Origin::kParam: return "--param";
  }
  return "?";
}

namespace {

const ThresholdDefault* FindDefault(std::string_view key) {
  for (const ThresholdDefault& row : DefaultThresholds()) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

std::string KnownKeys() {
  std::string known;
  for (const ThresholdDefault& d : DefaultThresholds()) known += (known.empty() ? "" : ", ") + std::string(d.key);
  return known;
}

using inventory::YamlReader;

// One {value, source} entry; nothing when it has a problem, which is reported.
std::optional<ModelFigure> ReadFigure(const YamlReader& r, const YAML::Node& n, const std::string& figure) {
  static constexpr std::array<std::string_view, 2> kKeys = {"value", "source"};
  if (!r.CheckMap(n, figure, kKeys)) return std::nullopt;
  std::optional<double> value =
      r.Num(n, "value", figure, std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max(), true);
  if (value && *value <= 0) {
    r.Error(YamlReader::Get(n, "value"), figure + " must be positive");
    value.reset();
  }
  std::optional<std::string> source = r.Str(n, "source", figure, true);
  if (source && source->empty()) {
    r.Error(YamlReader::Get(n, "source"), figure + " has no source");
    source.reset();
  }
  if (!value || !source) return std::nullopt;
  return ModelFigure{*value, *source};
}

bool IsFigureName(std::string_view key) {
  for (std::string_view k : ModelFigureNames()) {
    if (k == key) return true;
  }
  return false;
}

// Every problem in the table is reported, as the inventory loader reports them.
void ReadModelTable(const YamlReader& r, const YAML::Node& root, ModelTable* t) {
  static constexpr std::array<std::string_view, 2> kTop = {"version", "models"};
  constexpr std::string_view kWhat = "the GPU model table";
  if (!r.CheckMap(root, kWhat, kTop)) return;
  if (std::optional<std::string> v = r.Str(root, "version", kWhat, true); v && *v != "1") {
    r.Error(YamlReader::Get(root, "version"), fmt::format("'version' in {} is '{}'; this gpuforge reads version 1", kWhat, *v));
  }
  const YAML::Node models = YamlReader::Get(root, "models");
  if (!YamlReader::Has(root, "models")) {
    r.Missing(root, "models", kWhat);
    return;
  }
  if (!r.CheckOpenMap(models, "'models'")) return;
  for (const auto& m : models) {
    if (!m.first.IsScalar()) continue;  // reported by CheckOpenMap
    const std::string& name = m.first.Scalar();
    const model::GpuModelInfo* info = model::FindGpuModel(name);
    if (info == nullptr) r.Error(m.first, fmt::format("'{}' is not a GPU model of the catalogue", name));
    if (!r.CheckMap(m.second, "model " + name, ModelFigureNames())) continue;
    for (const auto& f : m.second) {
      // A key that is not a figure name is reported by CheckMap, with the name meant.
      if (!f.first.IsScalar() || !IsFigureName(f.first.Scalar())) continue;
      std::optional<ModelFigure> figure = ReadFigure(r, f.second, name + "." + f.first.Scalar());
      if (info != nullptr && figure) t->models[std::string(info->name)][f.first.Scalar()] = std::move(*figure);
    }
  }
}

}  // namespace

Result<ModelTable> ParseModelTable(std::string_view file, std::string_view yaml) {
  const SourceFile source{std::string(file), std::string(yaml)};
  Diagnostics diags;
  const inventory::YamlReader r(std::string(file), &diags);
  ModelTable t;
  try {
    // yaml-cpp throws on syntax errors; caught here, so no exception leaves validate.
    ReadModelTable(r, YAML::Load(source.text()), &t);
  } catch (const YAML::ParserException& e) {
    inventory::ReportSyntaxError(e, source, &diags);
  } catch (const YAML::Exception& e) {
    SourcePos pos = e.mark.is_null() ? SourcePos{source.path(), 0, 0}
                                     : SourcePos{source.path(), e.mark.line + 1, e.mark.column + 1};
    diags.Error(pos, fmt::format("cannot read this part of the GPU model table: {}", e.msg));
  }
  if (!diags.has_errors()) return t;
  diags.Sort();
  std::string message;
  for (const Diagnostic& d : diags.items()) message += FormatDiagnostic(d, &source);
  const std::size_t errors = diags.error_count();
  message += fmt::format("{} error{} in {}", errors, errors == 1 ? "" : "s", source.path());
  return Error{std::move(message)};
}

std::string DefaultModelTablePath() {
  if (const char* env = std::getenv("GPUFORGE_VALIDATION_DATA"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share" / "gpuforge" / "validation" / "gpu-models.yaml";
    if (std::filesystem::is_regular_file(installed, ec)) return installed.string();
  }
  return std::string(GPUFORGE_SOURCE_DIR) + "/inventories/validation/gpu-models.yaml";
}

Result<ModelTable> LoadModelTable(const std::string& path) {
  Result<std::string> text = base::ReadInputFile({path, "the GPU model pass marks", 16u << 20, false});
  if (!text.ok()) return Error{fmt::format("{}: {}", path, text.error().message)};
  return ParseModelTable(path, *text);
}

Result<Thresholds> Thresholds::For(const model::Cluster& c, ModelTable table) {
  Thresholds t;
  for (const ThresholdDefault& d : DefaultThresholds()) {
    t.values_[std::string(d.key)] = d.value;
    t.sources_[std::string(d.key)] = std::string(d.source);
  }
  for (const auto& [key, value] : c.validation.thresholds.values) {
    auto where = c.validation.thresholds.where.find(key);
    const std::string pos = where != c.validation.thresholds.where.end() ? where->second.ToString() : "inventory";
    if (!t.values_.count(key)) {
      return Error{fmt::format("{}: validation.thresholds: '{}' is not a validate threshold (known: {})", pos, key, KnownKeys())};
    }
    double v = value;
    // In the threshold's own unit: "2GB/s" for a GB/s mark is 2, "10ms" for an ms mark 10, and
    // a quantity of another kind is refused (#28 item 1).
    if (auto text = c.validation.thresholds.text.find(key); text != c.validation.thresholds.text.end()) {
      const ThresholdDefault* d = FindDefault(key);
      Result<double> in_unit = quantity::ParseInUnit(text->second, d != nullptr ? d->unit : std::string_view());
      if (!in_unit.ok()) {
        return Error{fmt::format("{}: validation.thresholds: '{}': {}", pos, key, in_unit.error().message)};
      }
      v = *in_unit;
    }
    if (!std::isfinite(v) || v < 0) {
      return Error{fmt::format("{}: validation.thresholds: '{}' is {}; thresholds must be zero or more", pos, key, v)};
    }
    t.values_[key] = v;
    t.sources_[key] = fmt::format("inventory validation.thresholds.{} ({})", key, pos);
    t.origins_[key] = Origin::kInventory;
  }
  t.table_ = std::move(table);
  return t;
}

bool Thresholds::IsKey(std::string_view key) { return FindDefault(key) != nullptr; }

Status Thresholds::Override(std::string_view key, std::string_view value) {
  const ThresholdDefault* d = FindDefault(key);
  if (d == nullptr) return Error{fmt::format("--param {}: not a validate threshold (known: {})", key, KnownKeys())};
  Result<double> v = quantity::ParseInUnit(value, d->unit);
  if (!v.ok()) return Error{fmt::format("--param {}={}: {}", key, value, v.error().message)};
  if (!std::isfinite(*v) || *v < 0) {
    return Error{fmt::format("--param {}={}: thresholds must be zero or more", key, value)};
  }
  values_[std::string(key)] = *v;
  sources_[std::string(key)] = fmt::format("--param {}={}", key, value);
  origins_[std::string(key)] = Origin::kParam;
  return {};
}

Origin Thresholds::OriginOf(std::string_view key) const {
  auto it = origins_.find(key);
  return it == origins_.end() ? Origin::kDefault : it->second;
}

double Thresholds::Get(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? 0 : it->second;
}

std::string Thresholds::SourceOf(std::string_view key) const {
  auto it = sources_.find(key);
  return it == sources_.end() ? "" : it->second;
}

std::optional<ModelFigure> Thresholds::ForModel(std::string_view gpu_model, std::string_view figure) const {
  const model::GpuModelInfo* info = model::FindGpuModel(gpu_model);
  if (info == nullptr) return std::nullopt;
  auto m = table_.models.find(std::string(info->name));
  if (m == table_.models.end()) return std::nullopt;
  auto f = m->second.find(std::string(figure));
  if (f == m->second.end()) return std::nullopt;
  return f->second;
}

}  // namespace gpuforge::validate
