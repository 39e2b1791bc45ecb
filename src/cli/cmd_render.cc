#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/base/hostlist.h"
#include "gpuforge/render/render.h"

namespace gpuforge::cli {

Command RenderCommand() {
  return {"render", "Write the NCCL, Slurm, Kubernetes, OS and monitoring files for each node to a directory",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              std::string out;
              std::string nodes;
              std::string templates;
              std::string facts;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            CompleteAs(app.add_option("--out", o->out, "Directory to write DIR/<node>/<path> and DIR/_cluster/<path> into"), Values::kDir)
                ->required()
                ->option_text("DIR");
            CompleteAs(app.add_option("--nodes", o->nodes, kNodesHelp), Values::kNodes)
                ->option_text("EXPR");
            CompleteAs(app.add_option("--templates", o->templates, "Use templates from this directory instead of the bundled ones"), Values::kDir)
                ->option_text("DIR");
            CompleteAs(app.add_option("--facts", o->facts, kFactsDirHelp), Values::kDir)->option_text("DIR");
            app.footer("Exit codes: 0 written, 2 invalid inventory, unknown node, bad template or write error.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              render::Options opts;
              opts.templates_dir = o->templates;
              // The file name, not the path as typed: the same inventory rendered from another
              // directory gives the same bytes, and apply compares against exactly these.
              opts.inventory_label = InventoryLabel(o->inventory);
              if (!o->nodes.empty()) {
                Result<std::vector<std::string>> names = nodeset::Evaluate(o->nodes, NodeGroups(*cluster));
                if (names.ok() && names->empty()) names = Error{fmt::format("\"{}\" selects no node", o->nodes)};
                if (!names.ok()) {
                  ctx.Error(fmt::format("--nodes: {}", names.error().message));
                  return static_cast<int>(kExitUsage);
                }
                for (const std::string& n : *names) {
                  if (cluster->FindNode(n) == nullptr) {
                    ctx.Error(fmt::format("--nodes: '{}' is not a node of {}", n, o->inventory));
                    return static_cast<int>(kExitUsage);
                  }
                }
                opts.nodes = std::move(*names);
              }
              std::optional<render::Measured> measured;
              if (!o->facts.empty()) {
                measured = LoadMeasured(ctx, *cluster, o->facts);
                if (!measured) return static_cast<int>(kExitUsage);
              }
              Result<render::Output> out =
                  measured ? render::Render(*cluster, opts, *measured) : render::Render(*cluster, opts);
              if (!out.ok()) {
                ctx.Error(out.error().message);
                return static_cast<int>(kExitUsage);
              }
              if (Status s = render::WriteTree(*out, o->out); !s.ok()) {
                ctx.Error(s.error().message);
                return static_cast<int>(kExitUsage);
              }
              // One note per file and reason, its nodes folded (#28 item 22: 128 nodes without
              // measured facts printed the same note 128 times).
              std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> notes;
              for (const render::Skip& s : out->skipped) {
                std::pair<std::string, std::string> key{s.path, s.reason};
                auto it = std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == key; });
                if (it == notes.end()) it = notes.insert(notes.end(), {key, {}});
                it->second.push_back(s.node.empty() ? "_cluster" : s.node);
              }
              // -q: only errors on stderr (docs/cli.md); these are notes.
              for (const auto& [key, nodes] : notes) {
                if (ctx.verbosity < 0) break;
                ctx.Err(fmt::format("gpuforge: {} {}:{} not rendered: {}\n", ctx.err_style.Yellow("note:"),
                                    hostlist::Fold(nodes), key.first, key.second));
              }
              PrintRenderNotes(ctx, *out);
              if (ctx.verbosity >= 0) {
                ctx.Out(fmt::format("rendered {} files into {}\n", out->files.size(), o->out));
              }
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
