#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/base/quantity.h"
#include "gpuforge/base/text.h"

namespace gpuforge::estimate::internal {

namespace {

using quantity::FormatBandwidthBytes;
using quantity::FormatSize;

// A sum over the hot and warm tiers (cold tiers archive; training does not read them), with
// node-scope tiers counted once per compute node.
struct TierSum {
  std::optional<double> total;
  std::string formula;
  std::string missing;
};

TierSum SumTiers(const model::Cluster& c, double model::StorageTier::*field,
                 std::string_view field_name, std::string (*format)(double)) {
  const std::size_t nodes = c.ComputeNodes().size();
  TierSum out;
  std::vector<std::string> terms;
  double total = 0;
  bool any = false;
  for (const model::StorageTier& t : c.storage.tiers) {
    if (t.role == model::StorageRole::kCold) continue;
    any = true;
    const double v = t.*field;
    // Why strict: a tier with no figure would make the sum quietly too small.
    if (!Usable(v)) {
      out.missing = JoinMissing({out.missing, fmt::format("storage.tiers[{}].{}", t.name, field_name)});
      continue;
    }
    if (t.scope == model::StorageScope::kNode) {
      total += v * static_cast<double>(nodes);
      terms.push_back(fmt::format("{} {} x {}", t.name, text::Plural(nodes, "node"), format(v)));
    } else {
      total += v;
      terms.push_back(fmt::format("{} {}", t.name, format(v)));
    }
  }
  if (!any) out.missing = "storage.tiers[].role: hot or warm";
  if (!out.missing.empty()) return out;
  // Only node-scope tiers and no compute nodes to multiply them by.
  if (!(total > 0)) {
    out.missing = "nodes (role: compute)";
    return out;
  }
  out.total = total;
  out.formula = fmt::format("{} = {}", fmt::join(terms, " + "), format(total));
  return out;
}

}  // namespace

Section StorageSection(const model::Cluster& c, const Estimates& /*so_far*/) {
  Section s{"storage", "Storage", {}};

  // Read bandwidth needed by the GPUs.
  FigureId need_id{"storage.read_needed_bytes_per_s", "Read bandwidth the GPUs need", "bytes/s"};
  const int gpus = c.TotalGpus();
  std::optional<double> need;
  if (gpus <= 0) {
    s.figures.push_back(Unknown(std::move(need_id), GpusMissing(c)));
  } else {
    const bool stated = Usable(c.workload.read_bytes_per_s_per_gpu);
    const double per_gpu = stated ? c.workload.read_bytes_per_s_per_gpu : guide::kReadBytesPerSPerGpu;
    need = gpus * per_gpu;
    std::string source =
        stated ? std::string("workload.read_bandwidth_per_gpu")
               : fmt::format("default from {}, 'Storage: Fast Enough to Feed the Beast': \"at "
                             "least 1GB/s per GPU\"",
                             guide::k000);
    s.figures.push_back(Known(std::move(need_id), *need,
                              fmt::format("{} GPUs x {} ({}) = {}", gpus, FormatBandwidthBytes(per_gpu),
                                          source, FormatBandwidthBytes(*need))));
  }

  // Read bandwidth the hot and warm tiers offer.
  TierSum read = SumTiers(c, &model::StorageTier::read_bytes_per_s, "read_bandwidth",
                          quantity::FormatBandwidthBytes);
  FigureId have_id{"storage.read_available_bytes_per_s", "Read bandwidth of the hot and warm tiers",
                   "bytes/s"};
  if (read.total) {
    Figure f = Known(std::move(have_id), *read.total, read.formula);
    f.note = "hot and warm tiers read at once; a job that reads from one tier gets only its share";
    s.figures.push_back(std::move(f));
  } else {
    s.figures.push_back(Unknown(std::move(have_id), read.missing));
  }

  FigureId ratio_id{"storage.read_ratio", "Read bandwidth available / needed", "ratio"};
  if (need && read.total) {
    const double ratio = *read.total / *need;
    Figure f = Known(std::move(ratio_id), ratio,
                     fmt::format("{} / {} = {}x", FormatBandwidthBytes(*read.total),
                                 FormatBandwidthBytes(*need), Num(ratio, 2)));
    SetVerdict(f, ratio >= 1 ? "ok" : "short");
    s.figures.push_back(std::move(f));
  } else {
    s.figures.push_back(Unknown(
        std::move(ratio_id),
        JoinMissing({need ? "" : GpusMissing(c), read.total ? "" : read.missing})));
  }

  // Capacity against the dataset.
  TierSum cap = SumTiers(c, &model::StorageTier::capacity_bytes, "capacity",
                         quantity::FormatSize);
  FigureId cap_id{"storage.capacity_bytes", "Capacity of the hot and warm tiers", "bytes"};
  s.figures.push_back(cap.total ? Known(std::move(cap_id), *cap.total, cap.formula)
                                : Unknown(std::move(cap_id), cap.missing));

  FigureId mult_id{"storage.capacity_ratio", "Capacity / dataset size", "ratio"};
  const std::optional<double>& dataset = c.storage.dataset_bytes;
  if (cap.total && dataset && Usable(*dataset)) {
    const double ratio = *cap.total / *dataset;
    Figure f = Known(std::move(mult_id), ratio,
                     fmt::format("{} / {} dataset = {}x, want {}-{}x ({}, 'Storage')",
                                 FormatSize(*cap.total), FormatSize(*dataset), Num(ratio, 2),
                                 Num(guide::kCapacityMinMultiple), Num(guide::kCapacityMaxMultiple),
                                 guide::k000));
    SetVerdict(f, ratio >= guide::kCapacityMinMultiple
                    ? "ok"
                    : fmt::format("below {}x", Num(guide::kCapacityMinMultiple)));
    s.figures.push_back(std::move(f));
  } else {
    s.figures.push_back(Unknown(
        std::move(mult_id),
        JoinMissing({cap.total ? "" : cap.missing,
                     dataset && Usable(*dataset) ? "" : "storage.dataset"})));
  }
  return s;
}

}  // namespace gpuforge::estimate::internal
