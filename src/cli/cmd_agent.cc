#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/probe/gpu_stream.h"
#include "gpuforge/probe/probe.h"

namespace gpuforge::cli {
namespace {

// Watches a probe's time: at the deadline it asks the probe to stop (the cancel flag); a probe
// that has not returned `grace` later is abandoned: its ERROR line is printed and the process
// ends, so the controller never waits on a hung driver call.
class Watchdog {
 public:
  Watchdog(std::string probe, std::chrono::duration<double> limit, std::FILE* out)
      : probe_(std::move(probe)), limit_(limit), out_(out), thread_([this] { Watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  const std::atomic<bool>* flag() const { return &cancel_; }

 private:
  void Watch() {
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, limit_, [this] { return done_; })) return;
    cancel_ = true;
    if (cv_.wait_for(lock, std::chrono::seconds(10), [this] { return done_; })) return;
    probe::ProbeResult r = probe::Fail(probe_, "agent.timeout",
                                       fmt::format("{} did not finish within its timeout of {:.0f} s, nor 10 s after "
                                                   "being asked to stop",
                                                   probe_, limit_.count()));
    std::fputs((probe::ToJsonLine(r) + "\n").c_str(), out_);
    std::fflush(out_);
    std::_Exit(124);
  }

  std::string probe_;
  std::chrono::duration<double> limit_;
  std::FILE* out_;
  std::atomic<bool> cancel_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// The exchange as the agent sees it: an offer line on stdout, the controller's reply line on
// stdin. Reading stops at the probe's deadline or when it is asked to stop.
class StdioExchange {
 public:
  StdioExchange(std::FILE* out, const std::atomic<bool>* cancel) : out_(out), cancel_(cancel) {}

  gpuforge::Result<std::vector<std::string>> operator()(const std::string& mine) {
    if (!probe::ValidExchangePart(mine)) return Error{"exchange: the probe's own part is not sendable"};
    std::fputs((probe::ExchangeOfferLine(mine) + "\n").c_str(), out_);
    std::fflush(out_);
    std::string line;
    for (;;) {
      if (std::size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        break;
      }
      if (eof_) return Error{"exchange: stdin ended before the controller answered (is a controller driving this agent?)"};
      if (cancel_ != nullptr && cancel_->load()) return Error{"exchange: stopped while waiting for the peers"};
      if (buffer_.size() > (std::size_t{1} << 20)) return Error{"exchange: the controller's line exceeds 1 MiB"};
      pollfd p{0, POLLIN, 0};
      int rc = ::poll(&p, 1, 100);
      if (rc < 0 && errno != EINTR) return Error{fmt::format("exchange: poll on stdin: {}", std::strerror(errno))};
      if (rc <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n < 0 && errno != EINTR && errno != EAGAIN) {
        return Error{fmt::format("exchange: reading stdin: {}", std::strerror(errno))};
      }
      if (n == 0) eof_ = true;
      if (n > 0) buffer_.append(buf, static_cast<std::size_t>(n));
    }
    return probe::ParseExchangeReply("exchange reply on stdin", line);
  }

 private:
  std::FILE* out_;
  const std::atomic<bool>* cancel_;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace

Command AgentCommand() {
  return {"agent", "Node side: run a built-in probe here and print its result as one JSON line, or sample the GPUs",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string action;
              std::string key;
              std::vector<std::string> params;
              double timeout_s = 600;
              double seconds = 0;
              bool exchange = false;
              Format format = Format::kJson;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("ACTION", o->action, "list | run | sample"), Values::kChoices, {"list", "run", "sample"})
                ->required()
                ->check(CLI::IsMember({"list", "run", "sample"}));
            CompleteAs(app.add_option("PROBE", o->key, "The probe to run (see `gpuforge agent list`)"), Values::kProbes);
            app.add_option("--param", o->params, "NAME=VALUE, repeatable")->option_text("NAME=VALUE");
            app.add_option("--timeout", o->timeout_s, "Seconds the probe may run (default 600)")
                ->check(CLI::Range(1.0, 86400.0))
                ->option_text("SECONDS");
            // 30 days: #30's longest burn-in (probe::kBurninMaxSeconds).
            app.add_option("--seconds", o->seconds,
                           "sample: how long to sample every GPU at 1 Hz (1 s to 30 days)")
                ->check(CLI::Range(1.0, probe::kBurninMaxSeconds))
                ->option_text("SECONDS");
            app.add_flag("--exchange", o->exchange,
                         "Converse with a controller on stdin/stdout (probes that span nodes); set by "
                         "`gpuforge validate`");
            app.footer("`gpuforge validate` starts this over SSH; it also runs by hand on a node.\n"
                       "`agent sample --seconds N` prints every GPU's NVML samples as burn-in's stream\n"
                       "(gpuforge.gpu-stream/v1, docs/burnin.md), one line per 10 s window, Xid or end;\n"
                       "it runs no load. Ctrl-C or SIGTERM ends it with an \"ended\" line per GPU.\n"
                       "Exit codes: 0 a result was printed (its outcome says ok, skip or error); 2 usage;\n"
                       "124 the probe hung past its timeout (an ERROR line is printed first); 1 sample found\n"
                       "no NVML or no GPU (the reason on stderr).");
            return [o](Context& ctx) {
              if (o->action == "list") {
                for (const std::unique_ptr<probe::Probe>& p : probe::AllProbes()) {
                  ctx.Out(fmt::format("{:<20} {}\n", p->key(), p->description()));
                  for (const probe::Param& param : p->params()) {
                    ctx.Out(fmt::format("    {:<24} {}\n", param.name + "=" + param.default_value, param.doc));
                  }
                }
                return static_cast<int>(kExitOk);
              }
              if (o->action == "sample") {
                if (o->seconds <= 0) {
                  ctx.Error("agent sample: give --seconds (1 s to 30 days)");
                  return static_cast<int>(kExitUsage);
                }
                InterruptGuard interrupt;
                std::FILE* out = ctx.io.out;
                const Status st = probe::StreamGpuSamples(o->seconds, interrupt.flag(), [out](const std::string& line) {
                  std::fputs((line + "\n").c_str(), out);
                  std::fflush(out);  // a node that dies mid-run has sent what it saw
                });
                if (!st.ok()) {
                  ctx.Error("agent sample: " + st.error().message);
                  return static_cast<int>(kExitFindings);
                }
                return static_cast<int>(kExitOk);
              }
              if (o->key.empty()) {
                ctx.Error("agent run: name the probe (see `gpuforge agent list`)");
                return static_cast<int>(kExitUsage);
              }
              std::unique_ptr<probe::Probe> p = probe::FindProbe(o->key);
              if (p == nullptr) {
                ctx.Error(fmt::format("agent run: no probe '{}' (see `gpuforge agent list`)", o->key));
                return static_cast<int>(kExitUsage);
              }
              std::map<std::string, std::string> given;
              for (const std::string& kv : o->params) {
                std::size_t eq = kv.find('=');
                if (eq == std::string::npos || eq == 0) {
                  ctx.Error(fmt::format("agent run: --param '{}' is not NAME=VALUE", kv));
                  return static_cast<int>(kExitUsage);
                }
                given[kv.substr(0, eq)] = kv.substr(eq + 1);
              }
              Result<std::map<std::string, std::string>> params = probe::ResolveParams(*p, given);
              if (!params.ok()) {
                ctx.Error("agent run: " + params.error().message);
                return static_cast<int>(kExitUsage);
              }
              probe::ProbeResult r;
              {
                Watchdog dog(o->key, std::chrono::duration<double>(o->timeout_s), ctx.io.out);
                probe::Exchange through;
                if (o->exchange) {
                  auto ex = std::make_shared<StdioExchange>(ctx.io.out, dog.flag());
                  through = [ex](const std::string& mine) { return (*ex)(mine); };
                }
                r = probe::RunProbe(*p, *params, dog.flag(), std::move(through));
              }
              ctx.Out(probe::ToJsonLine(r) + "\n");
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
