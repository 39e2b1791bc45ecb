#pragma once

// Building blocks shared by the estimate sections: how a figure is made known, unknown or
// not applicable, and how numbers are written in formulas and displays.

#include <initializer_list>
#include <string>
#include <string_view>

#include "gpuforge/estimate/estimate.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::estimate::internal {

// What a figure is, independent of whether this inventory lets us compute it.
struct FigureId {
  std::string key;
  std::string label;
  std::string unit;  // picks the display format, see Display()
};

// A computed figure. A non-finite value (a bug upstream) comes back absent, never as NaN/inf.
Figure Known(FigureId id, double value, std::string formula);
// A figure the inventory lacks inputs for; `missing` names the inventory keys.
Figure Unknown(FigureId id, std::string missing, std::string formula = "");
// A figure that has no meaning for this cluster (one node has no inter-node all-reduce).
Figure NotApplicable(FigureId id, std::string reason);

// Sets the verdict only when the figure has a value: an absent figure is never judged.
void SetVerdict(Figure& f, std::string verdict);

// An input that can be computed with: finite and above zero. Anything else is a gap in the
// inventory, never a divisor.
bool Usable(double v);

// Value formatted for people according to the figure's unit.
std::string Display(std::string_view unit, double value);

// Plain numbers in formulas: up to `decimals` decimals, trailing zeros trimmed, thousands
// grouped: 23360 -> "23,360", 0.12 -> "0.12".
std::string Num(double v, int decimals = 3);
// Money in the inventory's currency (no symbol: the model does not say which).
std::string Money(double v);

// What an earlier figure lacks: "" when `f` has a value, else its `missing`, or `key` when
// it is absent for another reason (or was never made).
std::string MissingOf(const Figure* f, std::string_view key);

// The inventory keys that would give a GPU-less cluster its GPUs.
std::string GpusMissing(const model::Cluster& c);

// "a, b, c" without empties and duplicates, in first-seen order.
std::string JoinMissing(std::initializer_list<std::string_view> parts);

}  // namespace gpuforge::estimate::internal
