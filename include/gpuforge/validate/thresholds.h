#pragma once

// The pass marks `gpuforge validate` holds probe results against: defaults from the guides,
// per-GPU-model figures from a data file (inventories/validation/gpu-models.yaml, public
// numbers from anchors.md), and the inventory's validation.thresholds overrides. Every value
// carries where it comes from, so a verdict can cite it.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::validate {

struct ThresholdDefault {
  std::string_view key;  // "CHECK.PARAMETER"
  double value;
  std::string_view unit;
  std::string_view meaning;
  std::string_view source;
};
std::span<const ThresholdDefault> DefaultThresholds();

struct ModelFigure {
  double value = 0;
  std::string source;
};
// models[canonical GPU model]["h2d_gbs"]
struct ModelTable {
  std::map<std::string, std::map<std::string, ModelFigure>> models;
};
// The figure names the data file may use.
std::span<const std::string_view> ModelFigureNames();
// Strict: version 1, known figure names, positive numbers, a source for each. Errors name the
// file and line.
Result<ModelTable> ParseModelTable(std::string_view file, std::string_view yaml);
// The installed data file (share/gpuforge/validation/) or the source tree's.
std::string DefaultModelTablePath();
Result<ModelTable> LoadModelTable(const std::string& path);

// The per-GPU-model pass marks: a check's rate held to fraction_key x the model's figure
// (validate.cc JudgeGpuRate, judge_fabric.cc for nccl.allreduce); `thresholds show` lists them.
struct ModelMark {
  std::string_view check;         // "gpu.copy"
  std::string_view metric;        // the probe's measurement
  std::string_view figure;        // the model table's figure
  std::string_view fraction_key;  // the threshold row holding the fraction
  std::string_view unit;
  std::string_view what;          // what the check measures, for `thresholds show`
};
std::span<const ModelMark> ModelMarks();

// Where a threshold's value came from.
enum class Origin { kDefault, kInventory, kParam };
const char* ToString(Origin o);  // "default", "inventory", "--param"

class Thresholds {
 public:
  // Defaults, then the inventory's validation.thresholds; an override naming no known key is an
  // error with its file:line:col.
  static Result<Thresholds> For(const model::Cluster& c, ModelTable table);

  // --param KEY=VALUE naming a threshold: VALUE in the key's unit ("2GB/s" for a GB/s mark, a
  // bare number as it is); a quantity of another kind, or a negative one, is an error naming it.
  Status Override(std::string_view key, std::string_view value);
  static bool IsKey(std::string_view key);

  double Get(std::string_view key) const;             // a known key (else 0)
  Origin OriginOf(std::string_view key) const;
  std::string SourceOf(std::string_view key) const;   // "guide 004 ..." or "inventory file:line"
  // The model figure for a GPU model as the inventory spells it (catalogue lookup rules).
  std::optional<ModelFigure> ForModel(std::string_view gpu_model, std::string_view figure) const;
  const ModelTable& table() const { return table_; }

 private:
  std::map<std::string, double, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> sources_;
  std::map<std::string, Origin, std::less<>> origins_;
  ModelTable table_;
};

}  // namespace gpuforge::validate
