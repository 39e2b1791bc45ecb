#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "cli/remote_options.h"
#include "gpuforge/facts/cabling.h"
#include "gpuforge/facts/measure_fabric.h"
#include "gpuforge/facts/saved.h"
#include "gpuforge/inventory/link_import.h"
#include "gpuforge/report/cabling_report.h"
#include "gpuforge/report/junit.h"

namespace gpuforge::cli {

namespace {

// The inventory's first selected node with an InfiniBand NIC: where the subnet tools run when
// no --subnet-from says otherwise.
std::string FirstIbNode(const model::Cluster& c, const std::vector<remote::Target>& targets) {
  for (const remote::Target& t : targets) {
    const model::Node* n = c.FindNode(t.node);
    if (n == nullptr) continue;
    for (const model::NicSpec& s : c.ProfileOf(*n).nics) {
      if (s.kind == model::NetKind::kInfiniband) return n->name;
    }
  }
  return "";
}

bool DesignHasIb(const model::Cluster& c, const std::vector<model::Link>& design) {
  for (const model::Link& l : design) {
    for (const model::Endpoint* e : {&l.a, &l.b}) {
      if (e->kind != model::Endpoint::Kind::kSwitchPort) continue;
      const model::Switch* sw = c.FindSwitch(e->device);
      const model::Network* net = sw == nullptr ? nullptr : c.FindNetwork(sw->network);
      if (net != nullptr && net->kind == model::NetKind::kInfiniband) return true;
    }
  }
  return false;
}

}  // namespace

Command CablingCommand() {
  return {"cabling", "Check every designed cable against the fabric as measured (iblinkinfo, ibnetdiscover, LLDP)",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              RemoteFlags remote;
              double timeout_s = 180;
              std::string design;
              SubnetFlags subnet;
              std::string facts_dir;
              bool no_ssh = false;
              bool strict = false;
              Format format = Format::kText;
              OutputFlags outputs;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddRemoteOptions(app, &o->remote);
            app.add_option("--timeout", o->timeout_s, "Seconds the scripts may run on each node (default 180)")
                ->check(CLI::Range(1.0, 3600.0))
                ->option_text("SECONDS");
            CompleteAs(app.add_option("--design", o->design,
                                      "The designed links from FILE (UFM's topology CSV or an ibdiagnet topology file) "
                                      "instead of the inventory's links"),
                       Values::kFile)
                ->option_text("FILE");
            AddSubnetOptions(app, &o->subnet,
                             "Run iblinkinfo and ibnetdiscover (infiniband-diags, as root) on NODE; default: "
                             "the first selected node with an InfiniBand NIC");
            CompleteAs(app.add_option("--facts", o->facts_dir,
                                      "Read the nodes' facts from DIR (gpuforge facts --save DIR) instead of over SSH"),
                       Values::kDir)
                ->option_text("DIR");
            app.add_flag("--no-ssh", o->no_ssh,
                         "Reach no node: judge only what --iblinkinfo, --ibnetdiscover and --facts give");
            app.add_flag("--strict", o->strict, "DEGRADED, PORT-UNKNOWN and UNEXPECTED cables also exit 1 (and fail in JUnit)");
            AddFormatWithJunit(app, &o->format);
            AddJunitOption(app, &o->outputs);
            app.footer(
                "InfiniBand cables are judged from the subnet's view (iblinkinfo --line and ibnetdiscover, run\n"
                "on one node or read from files); Ethernet and RoCE cables from each node's LLDP neighbours\n"
                "(lldpctl, from `facts`). Verdicts, names and formats: docs/cabling.md.\n"
                "Exit codes: 0 no cable MISSING, MISWIRED or SWAPPED (with --strict: and none DEGRADED,\n"
                "PORT-UNKNOWN or UNEXPECTED), 1 otherwise or when no cable could be measured at all, 2 invalid\n"
                "inventory, design file or flags.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              if (!CheckOutputs(ctx, o->outputs)) return static_cast<int>(kExitUsage);
              std::vector<model::Link> design = cluster->links;
              if (!o->design.empty()) {
                inventory::ImportOutcome imp = inventory::ImportDesignFile(o->design, *cluster);
                if (!imp.links) {
                  ctx.Err(imp.FormatDiagnostics());
                  return static_cast<int>(kExitUsage);
                }
                design = std::move(*imp.links);
              }
              if (design.empty()) {
                ctx.Error(fmt::format("{} designs no links: give them under `links:` or with --design FILE",
                                      o->inventory));
                return static_cast<int>(kExitUsage);
              }
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);

              facts::CablingInputs inputs;
              std::vector<std::string> problems;
              std::optional<std::vector<facts::IbSubnet>> saved_subnets = ReadSubnetFiles(ctx, o->subnet);
              if (!saved_subnets) return static_cast<int>(kExitUsage);
              inputs.subnets = std::move(*saved_subnets);
              std::vector<std::string> selected;
              for (const remote::Target& t : *targets) selected.push_back(t.node);
              if (!o->facts_dir.empty()) {
                Result<facts::SavedFacts> saved = facts::LoadSavedFacts(o->facts_dir, *cluster, selected);
                if (!saved) {
                  ctx.Error(saved.error().message);
                  return static_cast<int>(kExitUsage);
                }
                inputs.nodes = std::move(saved->nodes);
                inputs.unreached = std::move(saved->missing);
              }

              const bool ssh = !o->no_ssh;
              facts::MeasureOptions mo;
              mo.timeout = std::chrono::milliseconds(static_cast<long long>(o->timeout_s * 1000));
              mo.gather_nodes = ssh && o->facts_dir.empty();
              const bool want_subnet = ssh && inputs.subnets.empty() && DesignHasIb(*cluster, design);
              if (!o->subnet.subnet_from.empty() && !ssh) {
                ctx.Error("--subnet-from runs the subnet tools over SSH; drop --no-ssh, or give --iblinkinfo FILE");
                return static_cast<int>(kExitUsage);
              }
              if (want_subnet || !o->subnet.subnet_from.empty()) {
                std::string node = o->subnet.subnet_from.empty() ? FirstIbNode(*cluster, *targets) : o->subnet.subnet_from;
                const model::Node* n = node.empty() ? nullptr : cluster->FindNode(node);
                if (!o->subnet.subnet_from.empty() && n == nullptr) {
                  ctx.Error(fmt::format("--subnet-from: {} is not a node of {}", o->subnet.subnet_from, o->inventory));
                  return static_cast<int>(kExitUsage);
                }
                if (n != nullptr) {
                  Result<remote::Target> t = remote::TargetFor(*cluster, *n);
                  if (!t) {
                    ctx.Error(t.error().message);
                    return static_cast<int>(kExitUsage);
                  }
                  mo.subnet_node = *t;
                }
              }

              InterruptGuard interrupt;
              ProgressBar bar(ctx, "cabling");
              std::unique_ptr<remote::Connector> conn = MakeConnector(o->remote);
              mo.fanout = OneStepFanout(o->remote, interrupt, bar);
              report::RunInfo info{cluster->name, o->inventory, std::chrono::system_clock::now(), 0, false};
              const auto t0 = std::chrono::steady_clock::now();
              if (mo.gather_nodes || mo.subnet_node) {
                facts::Measured m = facts::MeasureFabric(*conn, mo.gather_nodes ? *targets : std::vector<remote::Target>{},
                                                         *cluster, mo);
                if (mo.gather_nodes) {
                  inputs.nodes = std::move(m.inputs.nodes);
                  inputs.unreached = std::move(m.inputs.unreached);
                }
                for (facts::IbSubnet& s : m.inputs.subnets) inputs.subnets.push_back(std::move(s));
                problems = std::move(m.problems);
              }
              bar.Clear();
              facts::CablingResult result = facts::CheckCabling(*cluster, design, inputs);
              info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              result.notes.insert(result.notes.begin(), problems.begin(), problems.end());
              for (const auto& [node, why] : inputs.unreached) {
                result.notes.push_back(fmt::format("{}: not measured: {}", node, why));
              }

              if (o->format == Format::kJson) {
                ctx.OutJson(report::CablingJson(result, cluster->name));
              } else if (o->format == Format::kJunit) {
                ctx.Out(report::CablingJunit(info, cluster->name, result, o->strict));
              } else {
                ctx.Out(report::CablingText(result, ctx.out_style));
              }
              if (ctx.verbosity >= 0) ctx.Err(report::CablingTally(result));
              if (!o->outputs.junit.empty() &&
                  !WriteOutput(ctx, "--junit", o->outputs.junit,
                               report::CablingJunit(info, cluster->name, result, o->strict))) {
                return static_cast<int>(kExitUsage);
              }
              bool bad = result.Miswired();
              // A run that measured nothing is no pass: CI gating on exit 0 must not read a fabric
              // nobody looked at as cabled right.
              const std::size_t unmeasured =
                  result.counts.count(facts::CableState::kUnmeasured) ? result.counts.at(facts::CableState::kUnmeasured) : 0;
              if (unmeasured == design.size()) {
                ctx.Error("no designed cable was measured (every one UNMEASURED; the reasons are above)");
                bad = true;
              }
              if (o->strict) {
                for (const facts::CableCheck& k : result.cables) {
                  bad |= k.state == facts::CableState::kDegraded || k.state == facts::CableState::kPortUnknown ||
                         k.state == facts::CableState::kUnexpected;
                }
              }
              return static_cast<int>(bad ? kExitFindings : kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
