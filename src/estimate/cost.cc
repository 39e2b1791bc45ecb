#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::estimate::internal {

namespace {

// GPUs per model as written, over all nodes, in first-seen order.
struct ModelCount {
  std::string model;
  std::string generation;
  int count = 0;
};

std::vector<ModelCount> GpuModels(const model::Cluster& c) {
  std::vector<ModelCount> out;
  for (const model::Node& n : c.nodes) {
    for (const model::GpuSpec& g : c.ProfileOf(n).gpus) {
      if (g.count <= 0) continue;
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const ModelCount& m) { return m.model == g.model; });
      if (it == out.end()) {
        out.push_back({g.model, g.generation, g.count});
      } else {
        it->count += g.count;
      }
    }
  }
  return out;
}

const char kGpuOnly[] =
    "GPU price only: CPUs, memory, NICs, switches, storage, racks and installation are not "
    "counted, so a real build costs more (guide 004, 'When to Build vs When to Rent', puts a "
    "32-GPU A100 build at $400-500K)";

Figure Capex(const model::Cluster& c, int gpus, const std::vector<ModelCount>& models) {
  FigureId id{"cost.capex", "Build cost (capital expense)", "currency"};
  const model::Economics& e = c.economics;
  if (e.capex) {
    return Known(std::move(id), *e.capex, fmt::format("{} as stated (cluster.economics.capex)", Money(*e.capex)));
  }
  if (gpus <= 0) return Unknown(std::move(id), "cluster.economics.capex");
  if (e.gpu_unit_price) {
    const double capex = gpus * *e.gpu_unit_price;
    Figure f = Known(std::move(id), capex,
                     fmt::format("{} GPUs x {} (cluster.economics.gpu_unit_price) = {}", gpus,
                                 Money(*e.gpu_unit_price), Money(capex)));
    f.note = kGpuOnly;
    return f;
  }
  double capex = 0;
  std::vector<std::string> terms;
  std::vector<std::string> unpriced;
  for (const ModelCount& m : models) {
    std::optional<double> price = guide::GpuUnitPrice(m.model);
    if (!price) {
      unpriced.push_back(m.model);
      continue;
    }
    capex += m.count * *price;
    terms.push_back(fmt::format("{} {} x {}", m.count, m.model, Money(*price)));
  }
  if (!unpriced.empty()) {
    Figure f = Unknown(std::move(id), "cluster.economics.capex or cluster.economics.gpu_unit_price");
    f.note = fmt::format(
        "{} ('GPU Selection') prices only the H200, B100 and MI400X; no price for {}",
        guide::k000, fmt::join(unpriced, ", "));
    return f;
  }
  Figure f = Known(std::move(id), capex,
                   fmt::format("{} (default from {}, 'GPU Selection' table, USD Q2 2026) = {}",
                               fmt::join(terms, " + "), guide::k000, Money(capex)));
  f.note = kGpuOnly;
  return f;
}

Figure Rent(const model::Cluster& c, int gpus, const std::vector<ModelCount>& models) {
  FigureId id{"cost.rent_monthly", "Renting the same GPUs, per month", "currency/month"};
  if (gpus <= 0) return Unknown(std::move(id), GpusMissing(c));
  const std::optional<double>& stated = c.economics.rent_per_gpu_hour;
  const double rate = stated.value_or(guide::kRentPerGpuHour);
  const double monthly = gpus * rate * guide::kHoursPerMonth;
  std::string source =
      stated ? std::string("cluster.economics.rent_per_gpu_hour")
             : fmt::format("default from {}, 'When to Build vs When to Rent': middle of \"$3-4 "
                           "per A100-hour\"",
                           guide::k004);
  Figure f = Known(std::move(id), monthly,
                   fmt::format("{} GPUs x {}/GPU-hour ({}) x {} h = {} per month", gpus, Money(rate),
                               source, Num(guide::kHoursPerMonth), Money(monthly)));
  if (!stated) {
    std::vector<std::string> other;
    for (const ModelCount& m : models) {
      if (m.generation != "ampere") other.push_back(m.model);
    }
    const double per_year_32 = 32 * guide::kHoursPerYear * guide::kRentPerGpuHour;
    f.note = fmt::format(
        "an A100 cloud price{}; the guide says it \"means you pay $200K/year for 32 GPUs\", but "
        "32 x {} h x {} = {} per year; $200K/year is {} per GPU-hour",
        other.empty() ? ""
                      : fmt::format(", low for {}: set cluster.economics.rent_per_gpu_hour",
                                    fmt::join(other, ", ")),
        Num(guide::kHoursPerYear), Money(guide::kRentPerGpuHour), Money(per_year_32),
        Money(200e3 / (32 * guide::kHoursPerYear)));
  }
  return f;
}

Figure Own(const model::Cluster& c, const Estimates& so_far) {
  FigureId id{"cost.own_monthly", "Running the cluster, per month", "currency/month"};
  const Figure* energy = so_far.Find("energy.monthly_cost");
  std::string missing = MissingOf(energy, "energy.monthly_cost");
  if (!missing.empty()) return Unknown(std::move(id), missing);
  const std::optional<double>& opex = c.economics.opex_per_year;
  const double monthly = *energy->value + opex.value_or(0) / 12;
  Figure f = Known(std::move(id), monthly,
                   fmt::format("{} power + {} / 12 (cluster.economics.opex_per_year{}) = {} per month",
                               Money(*energy->value), Money(opex.value_or(0)),
                               opex ? "" : " not set, counted as 0", Money(monthly)));
  if (!opex) f.note = "without cluster.economics.opex_per_year, staff, support and space count as 0";
  return f;
}

Figure BreakEven(const Figure& capex, const Figure& rent, const Figure& own) {
  FigureId id{"cost.break_even_months", "Months until building beats renting", "months"};
  std::string missing = JoinMissing({MissingOf(&capex, capex.key), MissingOf(&rent, rent.key),
                                     MissingOf(&own, own.key)});
  if (!missing.empty()) return Unknown(std::move(id), missing);
  const double saving = *rent.value - *own.value;
  // Why not a negative or infinite figure: when renting costs no more per month than
  // running, owning never pays back, and that is a statement, not a number.
  if (!(saving > 0)) {
    return NotApplicable(
        std::move(id), fmt::format("renting ({} per month) costs no more than running the "
                                   "cluster ({} per month): building never pays back",
                                   Money(*rent.value), Money(*own.value)));
  }
  const double months = *capex.value / saving;
  Figure f = Known(std::move(id), months,
                   fmt::format("{} / ({} - {}) = {} months", Money(*capex.value),
                               Money(*rent.value), Money(*own.value), Num(months, 1)));
  f.note = fmt::format(
      "{} ('When to Build vs When to Rent') puts break-even for 32 GPUs at \"roughly 2 years\"",
      guide::k004);
  return f;
}

}  // namespace

Section CostSection(const model::Cluster& c, const Estimates& so_far) {
  Section s{"cost", "Build vs rent", {}};
  const int gpus = c.TotalGpus();
  const std::vector<ModelCount> models = GpuModels(c);
  s.figures.push_back(Capex(c, gpus, models));
  s.figures.push_back(Rent(c, gpus, models));
  s.figures.push_back(Own(c, so_far));
  s.figures.push_back(BreakEven(s.figures[0], s.figures[1], s.figures[2]));
  return s;
}

}  // namespace gpuforge::estimate::internal
