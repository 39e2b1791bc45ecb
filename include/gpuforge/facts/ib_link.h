#pragma once

// The one rule that judges an InfiniBand port's trained width and rate against the inventory,
// shared by `facts --check` (drift ib.link_width / ib.link_rate) and validate's ib.counters,
// so the two can never disagree about the same port.

#include <optional>

#include "gpuforge/model/cluster.h"

namespace gpuforge::facts {

enum class IbLinkVerdict {
  kOk,     // meets the inventory rate, or 4X when the inventory gives none
  kWidth,  // fewer than 4 lanes and below the inventory rate: a degraded link
  kRate,   // 4X (or width unknown) but below the inventory rate
};

// A port is judged on the rate the inventory gives its NIC: a 2X port that meets that rate is
// 2X by design (HDR100 at 100 Gb/s, NDR200 at 200 Gb/s: split or 2X cables), not degraded.
// Rates within 0.5 Gb/s of the inventory's count as met (sysfs rounds: "53.125 Gb/sec").
// want_gbps <= 0 (no rate in the inventory): anything narrower than 4X is kWidth.
IbLinkVerdict JudgeIbLink(std::optional<int> width, std::optional<double> rate_gbps, double want_gbps);

// The line rate the inventory gives a NIC, in Gb/s: its own rate, else its network's; 0 when
// neither says.
double InventoryLineGbits(const model::Cluster& c, const model::NicSpec& nic);

}  // namespace gpuforge::facts
