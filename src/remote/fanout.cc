#include "gpuforge/remote/fanout.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

namespace gpuforge::remote {
namespace {

// Runs work(i) for i in [0, n) on up to `width` threads; each index runs exactly once.
void Parallel(std::size_t n, int width, const std::function<void(std::size_t)>& work) {
  std::size_t threads = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, width)));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) work(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) work(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace

Fleet::Fleet(Connector& connector, std::vector<Target> targets, FanoutOptions options)
    : connector_(connector),
      targets_(std::move(targets)),
      options_(std::move(options)),
      sessions_(targets_.size()),
      lost_(targets_.size()) {}

Fleet::~Fleet() { Close(); }

void Fleet::Each(const std::function<bool(std::size_t, Session&)>& step) {
  std::mutex mu;
  Progress progress;
  progress.total = targets_.size();
  auto report = [&](auto&& change) {
    std::lock_guard lock(mu);
    change(progress);
    if (options_.on_progress) options_.on_progress(progress);
  };
  Parallel(targets_.size(), options_.width, [&](std::size_t i) {
    const Target& t = targets_[i];
    if (!lost_[i] && options_.cancel != nullptr && options_.cancel->load()) {
      lost_[i] = Error{fmt::format("node {}: not started: interrupted", t.node)};
    }
    if (lost_[i]) {
      report([](Progress& p) {
        ++p.done;
        ++p.failed;
      });
      return;
    }
    report([](Progress& p) { ++p.running; });
    bool ok = false;
    if (!sessions_[i]) {
      Result<std::unique_ptr<Session>> s = connector_.Connect(t);
      if (s.ok()) {
        sessions_[i] = std::move(*s);
      } else {
        lost_[i] = s.error();
      }
    }
    if (sessions_[i]) {
      ok = step(i, *sessions_[i]);
      if (!sessions_[i]->Alive()) {
        lost_[i] = Error{fmt::format("node {}: connection lost", t.node)};
        ok = false;
      }
      if (!options_.keep_connections) sessions_[i].reset();
    }
    report([&](Progress& p) {
      --p.running;
      ++p.done;
      if (!ok) ++p.failed;
    });
  });
}

void Fleet::Close() {
  Parallel(sessions_.size(), options_.width, [&](std::size_t i) { sessions_[i].reset(); });
}

}  // namespace gpuforge::remote
