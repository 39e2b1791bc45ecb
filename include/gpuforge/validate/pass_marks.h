#pragma once

// Every pass mark `validate` will hold this cluster's nodes to, with where each comes from:
// the threshold rows (built-in default and its source, the inventory's
// validation.thresholds, --param), and per node profile the marks derived from them and the
// GPU model table or the workload. `gpuforge thresholds show` prints them; the judges read
// the same rows (Thresholds, ModelMarks), so the list cannot say one thing and validate do
// another.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/validate/thresholds.h"

namespace gpuforge::validate {

struct ThresholdRow {
  std::string key;  // "storage.read.min_gbs_per_gpu"
  double value = 0;
  std::string unit;
  std::string meaning;
  Origin origin = Origin::kDefault;
  std::string source;  // the guide's words, "inventory validation.thresholds.KEY (file:line:col)", "--param ..."
};

// A mark one check applies on the nodes of one profile.
struct DerivedMark {
  std::string check;  // "gpu.copy"
  std::string what;   // "device-to-device copy bandwidth, per GPU"
  std::string bound;  // ">=" or "<="
  std::optional<double> value;  // none: relative to a figure measured at run time, or no reference (basis says)
  std::string unit;
  std::string instead;  // what stands for a missing value in text: "none", "80% of the GPU's FMA peak"
  std::string basis;  // "0.75 (gpu.copy.reference_fraction, default) x 4,800 GB/s (H200 hbm_copy_gbs: SOURCE)"
};

struct ProfileMarks {
  std::string profile;    // "hgx-h200", or "hgx-h200@gpu003" for a node with overrides
  std::string gpu_model;  // "" without GPUs
  int gpus = 0;
  std::vector<std::string> nodes;
  std::vector<DerivedMark> marks;
};

struct PassMarks {
  std::string model_table;  // the GPU model table's path
  std::vector<ThresholdRow> thresholds;
  std::vector<ProfileMarks> profiles;  // those nodes use, in inventory order
};

// `only_profile` "" for every profile nodes use; a name no node uses is an error that lists them.
Result<PassMarks> ListPassMarks(const model::Cluster& c, const Thresholds& t, std::string_view model_table_path,
                                std::string_view only_profile);

}  // namespace gpuforge::validate
