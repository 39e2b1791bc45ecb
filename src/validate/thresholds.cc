#include "gpuforge/validate/thresholds.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

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
                       "bf16 matmul TFLOP/s against the model's reference", "same convention as gpu.copy"},
      ThresholdDefault{"gpu.h2d.reference_fraction", 1.0, "of the model's figure",
                       "pinned host-to-device copy bandwidth against the model's pass mark",
                       "anchors.md: Azure HPC health checks (nvbandwidth)"},
      ThresholdDefault{"gpu.d2h.reference_fraction", 1.0, "of the model's figure",
                       "pinned device-to-host copy bandwidth against the model's pass mark",
                       "anchors.md: Azure HPC health checks (nvbandwidth)"},
  };
  return kDefaults;
}

std::span<const std::string_view> ModelFigureNames() {
  static constexpr std::array<std::string_view, 7> kNames = {"h2d_gbs",     "d2h_gbs",     "hbm_copy_gbs",
                                                             "bf16_tflops", "fp32_tflops", "allreduce_busbw_gbs",
                                                             "ib_write_gbits"};
  return kNames;
}

Result<ModelTable> ParseModelTable(std::string_view file, std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg)};
  }
  auto at = [&](const YAML::Node& n) { return fmt::format("{}:{}:{}", file, n.Mark().line + 1, n.Mark().column + 1); };
  if (!root.IsMap() || !root["version"] || root["version"].as<std::string>("") != "1") {
    return Error{fmt::format("{}: expected 'version: 1' and 'models:'", file)};
  }
  const YAML::Node models = root["models"];
  if (!models || !models.IsMap()) return Error{fmt::format("{}: 'models' is missing or not a map", file)};
  ModelTable t;
  for (const auto& m : models) {
    const std::string name = m.first.as<std::string>("");
    const model::GpuModelInfo* info = model::FindGpuModel(name);
    if (info == nullptr) return Error{fmt::format("{}: '{}' is not a GPU model of the catalogue", at(m.first), name)};
    if (!m.second.IsMap()) return Error{fmt::format("{}: model {} is not a map", at(m.second), name)};
    for (const auto& f : m.second) {
      const std::string key = f.first.as<std::string>("");
      bool known = false;
      for (std::string_view k : ModelFigureNames()) known = known || k == key;
      if (!known) return Error{fmt::format("{}: '{}' is not a figure name", at(f.first), key)};
      const YAML::Node v = f.second;
      if (!v.IsMap() || !v["value"] || !v["source"]) {
        return Error{fmt::format("{}: {}.{} needs {{value, source}}", at(v), name, key)};
      }
      double value = 0;
      try {
        value = v["value"].as<double>();
      } catch (const YAML::Exception&) {
        return Error{fmt::format("{}: {}.{} value is not a number", at(v["value"]), name, key)};
      }
      if (!std::isfinite(value) || value <= 0) return Error{fmt::format("{}: {}.{} must be positive", at(v["value"]), name, key)};
      const std::string source = v["source"].as<std::string>("");
      if (source.empty()) return Error{fmt::format("{}: {}.{} has no source", at(v["source"]), name, key)};
      t.models[std::string(info->name)][key] = {value, source};
    }
  }
  return t;
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot read the GPU model pass marks", path)};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseModelTable(path, ss.str());
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
      std::string known;
      for (const ThresholdDefault& d : DefaultThresholds()) known += (known.empty() ? "" : ", ") + std::string(d.key);
      return Error{fmt::format("{}: validation.thresholds: '{}' is not a validate threshold (known: {})", pos, key, known)};
    }
    t.values_[key] = value;
    t.sources_[key] = "inventory " + pos;
  }
  t.table_ = std::move(table);
  return t;
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
