#pragma once

// Many nodes at once: connections opened lazily, at most `width` nodes worked on at a time,
// reused across the steps of one run. One node's failure or timeout never blocks or aborts
// the others.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::remote {

inline constexpr int kDefaultFanout = 64;

struct Progress {
  std::size_t total = 0;
  std::size_t done = 0;    // finished this step, failed ones included
  std::size_t failed = 0;  // failed this step, or unreachable
  std::size_t running = 0;
};

struct FanoutOptions {
  int width = kDefaultFanout;
  const std::atomic<bool>* cancel = nullptr;  // set by Ctrl-C: nodes not yet started are skipped
  // Keep each connection for later steps of the run. A one-step run turns this off, so that
  // at most `width` connections are open at once however many nodes there are.
  bool keep_connections = true;
  // Called after each node starts or ends, under a lock, from worker threads.
  std::function<void(const Progress&)> on_progress;
};

class Fleet {
 public:
  Fleet(Connector& connector, std::vector<Target> targets, FanoutOptions options);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  std::size_t size() const { return targets_.size(); }
  const Target& target(std::size_t i) const { return targets_[i]; }
  // Why node i is out of the run (cannot connect, host key, auth, connection lost,
  // interrupted); nullopt while it is in.
  const std::optional<Error>& lost(std::size_t i) const { return lost_[i]; }

  // Runs step(i, session) for every node still in the run. The step returns whether the node
  // succeeded; a node that failed stays in for later steps unless its connection is gone.
  void Each(const std::function<bool(std::size_t i, Session& session)>& step);

  // Disconnects every node (also done by the destructor), in parallel.
  void Close();

 private:
  Connector& connector_;
  std::vector<Target> targets_;
  FanoutOptions options_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<std::optional<Error>> lost_;
};

}  // namespace gpuforge::remote
