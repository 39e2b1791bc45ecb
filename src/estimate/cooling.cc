#include <fmt/format.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/base/quantity.h"
#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::estimate::internal {

Section CoolingSection(const model::Cluster& c, const Estimates& so_far) {
  Section s{"cooling", "Cooling", {}};
  using quantity::FormatPower;
  const double limit = guide::kAirCoolingRackLimitW;

  // The racks' power figures by key, found once: Find per rack was quadratic (#28 item 19).
  std::unordered_map<std::string_view, const Figure*> rack_w;
  for (const Section& section : so_far.sections) {
    for (const Figure& f : section.figures) {
      if (f.key.starts_with("power.rack_w.")) rack_w.emplace(f.key, &f);
    }
  }
  // The racks that hold H200 nodes: the guide's FAQ example is about them alone.
  std::unordered_map<std::string_view, bool> h200_rack;
  for (const model::Node& n : c.nodes) {
    if (n.rack.empty()) continue;
    for (const model::GpuSpec& g : c.ProfileOf(n).gpus) {
      if (g.count > 0 && model::GpuNameKey(g.model).starts_with("H200")) h200_rack[n.rack] = true;
    }
  }
  for (const model::Rack& rack : c.racks) {
    FigureId id{"cooling.rack." + rack.name, fmt::format("Rack {} heat load and cooling", rack.name),
                "W"};
    auto found = rack_w.find("power.rack_w." + rack.name);
    const Figure* load = found == rack_w.end() ? nullptr : found->second;
    std::string missing = MissingOf(load, "power.rack_w." + rack.name);
    if (!missing.empty()) {
      s.figures.push_back(Unknown(std::move(id), missing));
      continue;
    }
    double w = *load->value;
    model::Cooling cooling = c.RackCooling(rack);
    Figure f;
    if (cooling == model::Cooling::kLiquid) {
      f = Known(std::move(id), w, fmt::format("liquid-cooled, {}", FormatPower(w)));
      SetVerdict(f, "ok");
    } else {
      bool fits = w <= limit;
      f = Known(std::move(id), w,
                fmt::format("air-cooled, {} {} {} air limit ({}, 'Cooling and Power')",
                            FormatPower(w), fits ? "<=" : ">", FormatPower(limit), guide::k000));
      SetVerdict(f, fits ? "ok" : "liquid cooling needed");
      if (!fits && h200_rack.count(rack.name)) {
        // Why this note: the guide's FAQ is the likeliest source of an over-full air rack of
        // H200 nodes; for any other GPU it would quote figures that are not the rack's (#28
        // item 12).
        f.note = fmt::format(
            "{}'s FAQ fits 3 H200 nodes of ~6 kW in an air-cooled rack (18 kW), but at its own "
            "8 kW per node that is 3 x 8 kW = 24 kW, over its 20 kW air limit",
            guide::k000);
      }
    }
    s.figures.push_back(std::move(f));
  }

  const Figure* unracked = so_far.Find("power.unracked_w");
  if (unracked != nullptr) {
    Figure f = Unknown({"cooling.unracked", "Cooling of nodes in no declared rack", "W"},
                       "nodes[].rack");
    f.note = unracked->value
                 ? fmt::format("{} of nodes sit in no declared rack, so no rack can be judged",
                               FormatPower(*unracked->value))
                 : "some nodes sit in no declared rack, so no rack can be judged";
    s.figures.push_back(std::move(f));
  }
  return s;
}

}  // namespace gpuforge::estimate::internal
