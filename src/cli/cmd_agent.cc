#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.h"
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
    probe::ProbeResult r = probe::Fail(probe_, "timeout",
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

}  // namespace

Command AgentCommand() {
  return {"agent", "Node side: run a built-in probe here and print its result as one JSON line",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string action;
              std::string key;
              std::vector<std::string> params;
              double timeout_s = 600;
              Format format = Format::kJson;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("ACTION", o->action, "list | run")->required()->check(CLI::IsMember({"list", "run"}));
            app.add_option("PROBE", o->key, "The probe to run (see `gpuforge agent list`)");
            app.add_option("--param", o->params, "NAME=VALUE, repeatable")->option_text("NAME=VALUE");
            app.add_option("--timeout", o->timeout_s, "Seconds the probe may run (default 600)")
                ->check(CLI::Range(1.0, 86400.0))
                ->option_text("SECONDS");
            app.footer("`gpuforge validate` starts this over SSH; it also runs by hand on a node.\n"
                       "Exit codes: 0 a result was printed (its outcome says ok, skip or error); 2 usage;\n"
                       "124 the probe hung past its timeout (an ERROR line is printed first).");
            return [o](Context& ctx) {
              if (o->action == "list") {
                for (const std::unique_ptr<probe::Probe>& p : probe::AllProbes()) {
                  ctx.Out(fmt::format("{:<20} {}\n", p->key(), p->description()));
                  for (const probe::Param& param : p->params()) {
                    ctx.Out(fmt::format("    {}={:<14} {}\n", param.name, param.default_value, param.help));
                  }
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
                r = probe::RunProbe(*p, *params, dog.flag());
              }
              ctx.Out(probe::ToJsonLine(r) + "\n");
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
