#include "gpuforge/validate/exchange_hub.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "gpuforge/probe/probe.h"

namespace gpuforge::validate {

ExchangeHub::ExchangeHub(std::size_t participants, std::chrono::steady_clock::time_point deadline,
                         const std::atomic<bool>* cancel)
    : offered_(participants, 0), left_(participants, false), deadline_(deadline), cancel_(cancel) {}

std::optional<std::string> ExchangeHub::Offer(std::size_t who, std::string part) {
  std::unique_lock lock(mu_);
  if (!failure_.empty() || who >= offered_.size()) return std::nullopt;
  const std::size_t round = offered_[who]++;
  if (rounds_.size() <= round) rounds_.resize(round + 1, std::vector<std::string>(offered_.size()));
  rounds_[round][who] = std::move(part);
  cv_.notify_all();
  auto complete = [&] {
    return std::all_of(offered_.begin(), offered_.end(), [&](std::size_t n) { return n > round; });
  };
  while (!complete() && failure_.empty()) {
    for (std::size_t i = 0; i < offered_.size(); ++i) {
      if (left_[i] && offered_[i] <= round) {
        failure_ = fmt::format("participant {} ended before exchange round {}", i, round + 1);
      }
    }
    if (!failure_.empty()) break;
    if (cancel_ != nullptr && cancel_->load()) {
      failure_ = "interrupted during the exchange";
      break;
    }
    if (cv_.wait_until(lock, std::min(deadline_, std::chrono::steady_clock::now() + std::chrono::milliseconds(100))) ==
            std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline_) {
      failure_ = fmt::format("exchange round {} timed out waiting for every participant", round + 1);
    }
  }
  if (!failure_.empty() && !complete()) {
    cv_.notify_all();
    return std::nullopt;
  }
  return probe::ExchangeReplyLine(rounds_[round]) + "\n";
}

void ExchangeHub::Leave(std::size_t who) {
  std::lock_guard lock(mu_);
  if (who < left_.size()) left_[who] = true;
  cv_.notify_all();
}

void ExchangeHub::Fail(std::string why) {
  std::lock_guard lock(mu_);
  if (failure_.empty()) failure_ = std::move(why);
  cv_.notify_all();
}

std::string ExchangeHub::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

}  // namespace gpuforge::validate
