// The InfiniBand subnet's view as `cabling` (#31) and `init` (#33) take it: the flags, and the
// saved iblinkinfo / ibnetdiscover output they name, read and parsed before any node is asked.

#include <fmt/format.h>

#include <utility>

#include "cli/commands.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/facts/measure_fabric.h"

namespace gpuforge::cli {

void AddSubnetOptions(CLI::App& app, SubnetFlags* flags, const std::string& from_help) {
  CompleteAs(app.add_option("--subnet-from", flags->subnet_from, from_help), Values::kNodes)->option_text("NODE");
  CompleteAs(app.add_option("--iblinkinfo", flags->iblinkinfo,
                            "Read the subnet from saved `iblinkinfo` or `iblinkinfo --line` output"),
             Values::kFile)
      ->option_text("FILE");
  CompleteAs(app.add_option("--ibnetdiscover", flags->ibnetdiscover,
                            "Read the subnet from saved `ibnetdiscover` output (cross-checked with --iblinkinfo)"),
             Values::kFile)
      ->option_text("FILE");
}

std::optional<std::vector<facts::IbSubnet>> ReadSubnetFiles(Context& ctx, const SubnetFlags& flags) {
  std::vector<facts::IbSubnet> out;
  for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--iblinkinfo", &flags.iblinkinfo},
                                   {"--ibnetdiscover", &flags.ibnetdiscover}}) {
    if (path->empty()) continue;
    Result<std::string> text = base::ReadInputFile({*path, flag, facts::kMaxSubnetBytes});
    if (!text) {
      ctx.Error(text.error().message);
      return std::nullopt;
    }
    Result<facts::IbSubnet> s = std::string_view(flag) == "--iblinkinfo" ? facts::ParseIblinkinfo(*text, *path)
                                                                         : facts::ParseIbnetdiscover(*text, *path);
    if (!s) {
      ctx.Error(fmt::format("{}: {}", flag, s.error().message));
      return std::nullopt;
    }
    out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace gpuforge::cli
