#include <fmt/format.h>

#include <memory>
#include <vector>

#include "cli/commands.h"
#include "gpuforge/base/hostlist.h"

namespace gpuforge::cli {

Command HostlistCommand() {
  return {"hostlist", "Expand or fold Slurm hostlist expressions (gpu[001-032])", [](CLI::App& app) -> Runner {
            struct Opts {
              std::string first;
              std::string sep = "\n";
              bool expand = false;
            };
            auto o = std::make_shared<Opts>();
            // One string positional and the rest as extras, never a vector option: CLI11 reads a
            // vector argument that starts with '[' and ends with ']' as its own array syntax, so
            // `hostlist expand '[1-3]'` printed "1-3" (#28 item 24).
            CLI::App* expand = app.add_subcommand("expand", "Print one name per line, as 'scontrol show hostnames' does");
            expand->add_option("EXPR", o->first, "Hostlist expressions (one or more)")->required();
            expand->add_option("-s,--separator", o->sep, "Separator between names (default newline)");
            expand->allow_extras();
            CLI::App* fold = app.add_subcommand("fold", "Fold names into the shortest expression, as 'scontrol show hostlist' does");
            fold->add_option("NAMES", o->first, "Names or expressions, comma or space separated (one or more)")->required();
            fold->allow_extras();
            TakesFreeArguments(expand);
            TakesFreeArguments(fold);
            return [o, expand, fold, &app](Context& ctx) {
              // The words after the first land in the remaining list of the subcommand or, through
              // fallthrough, of `hostlist` or the program itself; in order, each in one of them.
              std::vector<std::string> args = {o->first};
              const std::vector<const CLI::App*> where = {expand->parsed() ? expand : fold, &app, app.get_parent()};
              for (const CLI::App* at : where) {
                if (at == nullptr) continue;
                for (const std::string& extra : at->remaining()) args.push_back(extra);
              }
              std::vector<std::string> names;
              for (const std::string& a : args) {
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
