#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "gpuforge/base/hostlist.h"

namespace gpuforge::cli {

Command HostlistCommand() {
  return {"hostlist", "Expand or fold Slurm hostlist expressions (gpu[001-032])", [](CLI::App& app) -> Runner {
            struct Opts {
              std::vector<std::string> args;
              std::string sep = "\n";
              bool expand = false;
            };
            auto o = std::make_shared<Opts>();
            app.require_subcommand(1);
            CLI::App* expand = app.add_subcommand("expand", "Print one name per line, as 'scontrol show hostnames' does");
            expand->add_option("EXPR", o->args, "Hostlist expressions")->required();
            expand->add_option("-s,--separator", o->sep, "Separator between names (default newline)");
            expand->allow_extras();
            CLI::App* fold = app.add_subcommand("fold", "Fold names into the shortest expression, as 'scontrol show hostlist' does");
            fold->add_option("NAMES", o->args, "Names or expressions (comma or space separated)")->required();
            fold->allow_extras();
            return [o, expand](Context& ctx) {
              std::vector<std::string> names;
              for (const std::string& a : o->args) {
                Result<std::vector<std::string>> r = hostlist::Expand(a);
                if (!r.ok()) {
                  ctx.Error(r.error().message);
                  return static_cast<int>(kExitUsage);
                }
                names.insert(names.end(), r->begin(), r->end());
              }
              if (expand->parsed()) {
                std::string sep = o->sep == "\\n" ? "\n" : o->sep;
                ctx.Out(fmt::format("{}\n", fmt::join(names, sep)));
              } else {
                ctx.Out(hostlist::Fold(names) + "\n");
              }
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
