#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/base/quantity.h"

namespace gpuforge::estimate::internal {

namespace {

// Guide 000 "Cooling and Power" prices 32 kW at $0.12/kWh as $8,000/month: $250 per GPU at
// its own 1 kW per GPU. The note goes on figures whose inputs look like that example (its
// price, or its 8 kW per 8-GPU node), where a reader is most likely to compare with it.
bool LooksLikeGuideExample(const model::Cluster& c, double cluster_w, double price) {
  int gpus = c.TotalGpus();
  double w_per_gpu = gpus > 0 ? cluster_w / gpus : 0;
  return std::fabs(price - 0.12) < 1e-9 || (w_per_gpu > 950 && w_per_gpu < 1050);
}

std::string GuideEnergyNote() {
  double at_32 = 32e3 / 1e3 * guide::kHoursPerMonth * 0.12;
  double at_256 = 256e3 / 1e3 * guide::kHoursPerMonth * 0.12;
  return fmt::format(
      "{} ('Cooling and Power') says 32 kW at $0.12/kWh is \"$8,000/month\" and 256 kW is "
      "\"$64,000/month\"; 32 kW x {} h x 0.12 = {} and 256 kW x {} h x 0.12 = {} per month, "
      "about 2.85x less than the guide",
      guide::k000, Num(guide::kHoursPerMonth), Money(at_32), Num(guide::kHoursPerMonth),
      Money(at_256));
}

}  // namespace

Section EnergySection(const model::Cluster& c, const Estimates& so_far) {
  Section s{"energy", "Energy", {}};
  FigureId kwh_id{"energy.monthly_kwh", "Energy per month at full load", "kWh"};
  FigureId cost_id{"energy.monthly_cost", "Power bill per month at full load", "currency/month"};

  const Figure* power = so_far.Find("power.cluster_w");
  std::string missing = MissingOf(power, "power.cluster_w");
  if (!Usable(c.site.pue)) missing = JoinMissing({missing, "cluster.site.pue"});
  if (!missing.empty()) {
    s.figures.push_back(Unknown(std::move(kwh_id), missing));
    s.figures.push_back(Unknown(std::move(cost_id), JoinMissing({missing, "cluster.site.power_price_per_kwh"})));
    return s;
  }

  double cluster_w = *power->value;
  double kwh = cluster_w / 1e3 * guide::kHoursPerMonth * c.site.pue;
  Figure energy = Known(
      std::move(kwh_id), kwh,
      fmt::format("{} x {} h x PUE {} = {} kWh", quantity::FormatPower(cluster_w),
                  Num(guide::kHoursPerMonth), Num(c.site.pue), Num(kwh, 0)));
  if (c.site.pue == 1.0) {
    energy.note = fmt::format(
        "PUE 1 (cluster.site.pue) counts no cooling or power-conversion overhead, as {}'s figures "
        "(\"That's before cooling\")",
        guide::k000);
  }
  s.figures.push_back(std::move(energy));

  if (!c.site.power_price_per_kwh) {
    s.figures.push_back(Unknown(std::move(cost_id), "cluster.site.power_price_per_kwh"));
    return s;
  }
  double price = *c.site.power_price_per_kwh;
  Figure cost = Known(std::move(cost_id), kwh * price,
                      fmt::format("{} kWh x {}/kWh = {} per month", Num(kwh, 0), Money(price),
                                  Money(kwh * price)));
  if (LooksLikeGuideExample(c, cluster_w, price)) cost.note = GuideEnergyNote();
  s.figures.push_back(std::move(cost));
  return s;
}

}  // namespace gpuforge::estimate::internal
