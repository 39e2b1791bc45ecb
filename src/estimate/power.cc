#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimate/figures.h"
#include "estimate/guide.h"
#include "estimate/sections.h"
#include "gpuforge/base/quantity.h"
#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::estimate::internal {

namespace {

using quantity::FormatPower;

// One profile's draw at full load, or the inputs it lacks.
struct Draw {
  std::optional<double> w;
  std::string formula;
  std::string missing;
  std::string note;
};

Draw ProfileDraw(const model::Profile& p) {
  const std::string at = fmt::format("profiles.{}", p.name);
  if (p.max_power_w) {
    return {*p.max_power_w,
            fmt::format("{} as stated ({}.power.max)", FormatPower(*p.max_power_w), at), "",
            ""};
  }
  std::vector<std::string> terms;
  std::string missing;
  for (const model::GpuSpec& g : p.gpus) {
    if (g.count <= 0) continue;
    if (!Usable(g.tdp_w)) missing = JoinMissing({missing, at + ".gpus.tdp"});
    terms.push_back(fmt::format("{} {} x {}", g.count, g.model, FormatPower(g.tdp_w)));
  }
  // Why unknown rather than 0 W: a profile that says nothing about its draw is an input
  // gap, and a 0 W node would quietly pass every rack limit.
  if (terms.empty() && !(p.other_power_w > 0)) {
    missing = JoinMissing({missing, at + ".power.max or " + at + ".power.other"});
  }
  if (!missing.empty()) return {std::nullopt, "", missing, ""};
  terms.push_back(fmt::format("{} other", FormatPower(p.other_power_w)));
  Draw d;
  d.w = p.node_power_w();
  d.formula = fmt::format("{} = {}", fmt::join(terms, " + "), FormatPower(*d.w));
  if (p.gpu_count() > 0 && !(p.other_power_w > 0)) {
    // The guide's one figure is for 8 x H200; a B200 node must not read as if it were its own
    // (#28 item 12: the note quoted H200 figures under a B200 profile).
    std::vector<std::string> others;
    for (const model::GpuSpec& g : p.gpus) {
      if (g.count > 0 && !model::GpuNameKey(g.model).starts_with("H200")) others.push_back(g.model);
    }
    d.note = others.empty()
                 ? fmt::format("{}.power.other is not set, so CPUs, memory, NICs and fans count as 0 W; {} "
                               "('Cooling and Power') adds ~2.4 kW to an 8 x H200 node's 5.6 kW (\"call it 8kW per "
                               "node\")",
                               at, guide::k000)
                 : fmt::format("{}.power.other is not set, so CPUs, memory, NICs and fans count as 0 W; {}'s only "
                               "figure for them ('Cooling and Power': ~2.4 kW beside 8 x H200) is not for {}: take "
                               "the rest of the node's draw from its vendor's specification",
                               at, guide::k000, fmt::join(others, " and "));
  }
  return d;
}

// Nodes grouped by profile, in first-seen order, so a formula reads "3 x 8 kW (hgx)" rather
// than listing thirty nodes.
struct Group {
  std::string profile;
  int nodes = 0;
};

template <class Pred>
std::vector<Group> GroupByProfile(const model::Cluster& c, Pred in) {
  std::vector<Group> out;
  for (const model::Node& n : c.nodes) {
    if (!in(n)) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Group& g) { return g.profile == n.profile; });
    if (it == out.end()) {
      out.push_back({n.profile, 1});
    } else {
      ++it->nodes;
    }
  }
  return out;
}

// The summed draw of some nodes, or the inputs some of them lack.
struct Sum {
  std::optional<double> w;
  std::string terms;  // "2 x 8 kW (hgx-h200) + 1 x 1.2 kW (login)"
  std::string missing;
};

Sum SumDraw(const std::vector<Group>& groups, const std::map<std::string, Draw>& draws) {
  Sum s;
  double total = 0;
  std::vector<std::string> terms;
  for (const Group& g : groups) {
    const Draw& d = draws.at(g.profile);
    if (!d.w) {
      s.missing = JoinMissing({s.missing, d.missing});
      continue;
    }
    total += g.nodes * *d.w;
    terms.push_back(fmt::format("{} x {} ({})", g.nodes, FormatPower(*d.w), g.profile));
  }
  s.terms = fmt::format("{}", fmt::join(terms, " + "));
  if (s.missing.empty()) s.w = total;
  return s;
}

bool IsRacked(const model::Cluster& c, const model::Node& n) {
  return !n.rack.empty() && c.FindRack(n.rack) != nullptr;
}

// Each rack's nodes grouped by profile, in one pass over the nodes (#28 item 19: grouping per
// rack scanned every node for every rack, quadratic in racks).
std::unordered_map<std::string_view, std::vector<Group>> GroupsByRack(const model::Cluster& c) {
  std::unordered_map<std::string_view, std::vector<Group>> out;
  for (const model::Node& n : c.nodes) {
    if (n.rack.empty()) continue;
    std::vector<Group>& groups = out[n.rack];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.profile == n.profile; });
    if (it == groups.end()) {
      groups.push_back({n.profile, 1});
    } else {
      ++it->nodes;
    }
  }
  return out;
}

Figure RackFigure(const model::Cluster& c, const model::Rack& rack, const std::vector<Group>& groups,
                  const std::map<std::string, Draw>& draws) {
  FigureId id{"power.rack_w." + rack.name, fmt::format("Rack {} power at full load", rack.name),
              "W"};
  Sum sum = SumDraw(groups, draws);
  if (!sum.w) return Unknown(std::move(id), sum.missing);
  std::string formula = groups.empty() ? std::string("no nodes = 0 W")
                                       : fmt::format("{} = {}", sum.terms, FormatPower(*sum.w));
  std::optional<double> limit = c.RackPowerLimitW(rack);
  if (limit) {
    formula += fmt::format(", limit {}", FormatPower(*limit));
  }
  Figure f = Known(std::move(id), *sum.w, std::move(formula));
  if (limit) {
    SetVerdict(f, *sum.w <= *limit ? "ok" : "over limit");
  } else if (f.value) {
    f.note = fmt::format("no power limit to hold it against (racks.{}.power_limit or "
                         "cluster.site.rack_power_limit)",
                         rack.name);
  }
  return f;
}

Figure GpuFigure(const model::Cluster& c) {
  FigureId id{"power.gpu_w", "GPUs alone at full load (TDP)", "W"};
  if (c.nodes.empty()) return Unknown(std::move(id), "nodes");
  // Per GPU model, so a mixed cluster reads "32 H200 x 700 W + 4 L40S x 350 W".
  struct Term {
    std::string model;
    double tdp_w;
    int count;
  };
  std::vector<Term> terms;
  std::string missing;
  for (const model::Node& n : c.nodes) {
    const model::Profile& p = c.ProfileOf(n);
    for (const model::GpuSpec& g : p.gpus) {
      if (g.count <= 0) continue;
      if (!Usable(g.tdp_w)) missing = JoinMissing({missing, fmt::format("profiles.{}.gpus.tdp", p.name)});
      auto it = std::find_if(terms.begin(), terms.end(), [&](const Term& t) {
        return t.model == g.model && t.tdp_w == g.tdp_w;
      });
      if (it == terms.end()) {
        terms.push_back({g.model, g.tdp_w, g.count});
      } else {
        it->count += g.count;
      }
    }
  }
  if (!missing.empty()) return Unknown(std::move(id), missing);
  if (terms.empty()) return Known(std::move(id), 0, "no GPUs = 0 W");
  double total = 0;
  std::vector<std::string> parts;
  for (const Term& t : terms) {
    total += t.count * t.tdp_w;
    parts.push_back(fmt::format("{} {} x {}", t.count, t.model, FormatPower(t.tdp_w)));
  }
  return Known(std::move(id), total,
               fmt::format("{} = {}", fmt::join(parts, " + "), FormatPower(total)));
}

}  // namespace

Section PowerSection(const model::Cluster& c, const Estimates& /*so_far*/) {
  Section s{"power", "Power", {}};

  // Only profiles some node uses: an unused SKU's draw adds nothing to any total.
  std::map<std::string, Draw> draws;
  for (const model::Node& n : c.nodes) {
    if (draws.contains(n.profile)) continue;
    const model::Profile& p = c.ProfileOf(n);
    draws.emplace(n.profile, ProfileDraw(p));
    FigureId id{"power.node_w." + n.profile, fmt::format("Node power at full load ({})", n.profile),
                "W"};
    const Draw& d = draws.at(n.profile);
    if (!d.w) {
      s.figures.push_back(Unknown(std::move(id), d.missing));
      continue;
    }
    Figure f = Known(std::move(id), *d.w, d.formula);
    f.note = d.note;
    s.figures.push_back(std::move(f));
  }

  const auto by_rack = GroupsByRack(c);
  const std::vector<Group> none;
  for (const model::Rack& rack : c.racks) {
    auto it = by_rack.find(rack.name);
    s.figures.push_back(RackFigure(c, rack, it == by_rack.end() ? none : it->second, draws));
  }

  std::vector<Group> unracked =
      GroupByProfile(c, [&](const model::Node& n) { return !IsRacked(c, n); });
  if (!unracked.empty()) {
    FigureId id{"power.unracked_w", "Power of nodes in no declared rack", "W"};
    Sum sum = SumDraw(unracked, draws);
    if (sum.w) {
      Figure f = Known(std::move(id), *sum.w, fmt::format("{} = {}", sum.terms, FormatPower(*sum.w)));
      f.note = "these nodes are held against no rack power limit or cooling verdict (nodes[].rack)";
      s.figures.push_back(std::move(f));
    } else {
      s.figures.push_back(Unknown(std::move(id), sum.missing));
    }
  }

  FigureId cluster_id{"power.cluster_w", "Cluster power at full load", "W"};
  if (c.nodes.empty()) {
    s.figures.push_back(Unknown(std::move(cluster_id), "nodes"));
  } else {
    Sum sum = SumDraw(GroupByProfile(c, [](const model::Node&) { return true; }), draws);
    s.figures.push_back(sum.w ? Known(std::move(cluster_id), *sum.w,
                                      fmt::format("{} = {}", sum.terms, FormatPower(*sum.w)))
                              : Unknown(std::move(cluster_id), sum.missing));
  }

  s.figures.push_back(GpuFigure(c));
  return s;
}

}  // namespace gpuforge::estimate::internal
