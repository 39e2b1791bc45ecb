#pragma once

// The controller's side of the probe exchange, through which the agents of a pair or group
// run trade their parts.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpuforge::validate {

// The controller's side of the probe exchange (probe.h): each participant's offers, round by
// round; a round completes when every participant has offered in it, and each gets every
// part. A participant whose command ended, a deadline passing, a cancel or a bad offer fails
// the round for all (their stdin is closed, so their agents stop waiting and say why).
class ExchangeHub {
 public:
  ExchangeHub(std::size_t participants, std::chrono::steady_clock::time_point deadline,
              const std::atomic<bool>* cancel);
  // Blocks until round complete: the reply line (with newline), or nullopt when it failed.
  std::optional<std::string> Offer(std::size_t who, std::string part);
  // `who`'s command ended; rounds it has not offered in fail.
  void Leave(std::size_t who);
  void Fail(std::string why);
  std::string failure() const;  // "" while nothing failed

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::size_t> offered_;  // rounds each participant has offered in
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rounds_;
  std::chrono::steady_clock::time_point deadline_;
  const std::atomic<bool>* cancel_;
  std::string failure_;
};

}  // namespace gpuforge::validate
