#include "gpuforge/facts/ib_link.h"

namespace gpuforge::facts {

IbLinkVerdict JudgeIbLink(std::optional<int> width, std::optional<double> rate_gbps, double want_gbps) {
  const bool rate_met = want_gbps > 0 && rate_gbps && *rate_gbps >= want_gbps - 0.5;
  if (width && *width < 4 && !rate_met) return IbLinkVerdict::kWidth;
  if (want_gbps > 0 && rate_gbps && !rate_met) return IbLinkVerdict::kRate;
  return IbLinkVerdict::kOk;
}

double InventoryLineGbits(const model::Cluster& c, const model::NicSpec& nic) {
  double rate = nic.rate_bytes_per_s;
  if (rate <= 0) {
    if (const model::Network* net = c.FindNetwork(nic.network)) rate = net->rate_bytes_per_s;
  }
  return rate * 8 / 1e9;
}

}  // namespace gpuforge::facts
