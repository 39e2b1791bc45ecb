#include <yaml-cpp/yaml.h>

#include <memory>

#include "cli/commands.h"
#include "gpuforge/model/json.h"

namespace gpuforge::cli {

namespace {

// JSON -> YAML through yaml-cpp's emitter, keeping key order.
void EmitYaml(YAML::Emitter& e, const nlohmann::ordered_json& j) {
  if (j.is_object()) {
    e << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      e << YAML::Key << it.key() << YAML::Value;
      EmitYaml(e, it.value());
    }
    e << YAML::EndMap;
  } else if (j.is_array()) {
    bool flat = std::all_of(j.begin(), j.end(), [](const auto& x) { return x.is_primitive(); });
    e << (flat ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& x : j) EmitYaml(e, x);
    e << YAML::EndSeq;
  } else if (j.is_null()) {
    e << YAML::Null;
  } else if (j.is_string()) {
    e << j.get<std::string>();
  } else if (j.is_boolean()) {
    e << j.get<bool>();
  } else if (j.is_number_integer()) {
    e << j.get<long long>();
  } else {
    e << j.dump();
  }
}

}  // namespace

Command InventoryCommand() {
  return {"inventory", "Inventory tools: 'inventory show' prints the resolved model", [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              Format format = Format::kYaml;
            };
            auto o = std::make_shared<Opts>();
            CLI::App* show = app.add_subcommand(
                "show", "Print the expanded, resolved model (hostlists expanded, variables merged) as YAML or JSON");
            show->allow_extras();
            CompleteAs(show->add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddFormatOption(*show, &o->format, /*allow_yaml=*/true);
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              nlohmann::ordered_json j = model::ToJson(*cluster);
              if (o->format == Format::kJson) {
                ctx.Out(j.dump(2) + "\n");
              } else {
                YAML::Emitter e;
                EmitYaml(e, j);
                ctx.Out(std::string(e.c_str()) + "\n");
              }
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
