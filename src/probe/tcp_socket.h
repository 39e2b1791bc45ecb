#pragma once

// A non-blocking TCP socket as tcp.bandwidth waits on it: every wait in short slices so a
// cancel (or the other end of a loopback test giving up) is seen at once, and sends and
// receives of an exact byte count that name what they were doing when they fail.

#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "probe/probes.h"

namespace gpuforge::probe::internal::tcp {

using Clock = std::chrono::steady_clock;

inline constexpr int kPollMs = 100;  // how often a wait looks at the cancel flag

// The time `seconds` from now.
Clock::time_point After(double seconds);

// Stops a wait: the probe's cancel flag, or the other end of a loopback test giving up.
struct Stop {
  const Context* ctx = nullptr;
  const std::atomic<bool>* abort = nullptr;
  const std::atomic<bool>* abort2 = nullptr;
  bool operator()() const {
    return (ctx != nullptr && ctx->Cancelled()) || (abort != nullptr && abort->load()) ||
           (abort2 != nullptr && abort2->load());
  }
};

enum class Wait { kReady, kTimedOut, kStopped };

// Polls in short slices so a cancel is seen within kPollMs. A poll error counts as ready: the
// next call on the socket reports it with its own name.
Wait WaitFor(int fd, short events, Clock::time_point deadline, const Stop& stop);

// Why a wait ended without the socket being ready: "cancelled" or "timeout", naming `what`.
Failure NotReady(Wait w, std::string_view what, double timeout);

// Receives or sends exactly `len` bytes, each wait at most `timeout` seconds.
std::optional<Failure> RecvExact(int fd, void* buf, std::size_t len, double timeout,
                                 const Stop& stop, std::string_view what);
std::optional<Failure> SendExact(int fd, const void* buf, std::size_t len, double timeout,
                                 const Stop& stop, std::string_view what);

// "10.0.0.1:18516".
std::string Address(const sockaddr_in& a);

}  // namespace gpuforge::probe::internal::tcp
