#include "gpuforge/plan/saved_plan.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpuforge/base/names.h"
#include "gpuforge/base/sha256.h"

namespace gpuforge::plan {
namespace {

bool IsHex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string DesiredDigest(const DesiredNode& d) {
  // Unit and record separators keep fields apart; every field is text without them.
  std::string s = fmt::format("family\x1f{}\x1e", ToString(d.family));
  // A file's digest stands for its bytes, so the munge key itself is never in a saved plan;
  // apply reads the key again and finds the plan stale when it is not the one planned.
  for (const DesiredFile& f : d.files) {
    s += fmt::format("file\x1f{}\x1f{:o}\x1f{}\x1f{}\x1f{}\x1e", f.path, f.mode, f.owner, f.secret, f.Sha256());
  }
  for (const DesiredPackage& p : d.packages) s += fmt::format("package\x1f{}\x1f{}\x1e", p.name, p.version);
  for (const std::string& m : d.modules) s += fmt::format("module\x1f{}\x1e", m);
  for (const DesiredSysctl& k : d.sysctls) s += fmt::format("sysctl\x1f{}\x1f{}\x1e", k.key, k.value);
  for (const std::string& u : d.services) s += fmt::format("service\x1f{}\x1e", u);
  s += fmt::format("removals\x1f{}\x1e", d.manage_removals);
  s += fmt::format("agent_arch\x1f{}\x1e", d.agent_arch);
  return base::Sha256Hex(s);
}

std::string ToJson(const SavedPlan& p) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const SavedNode& n : p.nodes) {
    nodes.push_back({{"node", n.node}, {"desired_sha256", n.desired_sha256}, {"state_sha256", n.state_sha256},
                     {"add", n.add}, {"change", n.change}, {"destroy", n.destroy}});
  }
  nlohmann::ordered_json j = {{"schema", kSavedPlanSchema}, {"created", p.created},
                              {"inventory", p.inventory}, {"inventory_sha256", p.inventory_sha256},
                              {"only", p.parts}, {"nodes", nodes}};
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

bool LooksLikeSavedPlan(std::string_view text) {
  std::size_t b = text.find_first_not_of(" \t\r\n");
  return b != std::string_view::npos && text[b] == '{' && text.find(kSavedPlanSchema) != std::string_view::npos;
}

Result<SavedPlan> ParseSavedPlan(std::string_view source, std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](std::string_view why) { return Error{fmt::format("{}: not a usable saved plan: {}", source, why)}; };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("schema") || j["schema"] != kSavedPlanSchema) {
    return bad(fmt::format("schema is not {}", kSavedPlanSchema));
  }
  auto str = [&](const nlohmann::json& o, const char* key, std::string* out) -> Status {
    if (!o.contains(key) || !o[key].is_string()) return bad(fmt::format("'{}' is missing or not a string", key));
    *out = o[key].get<std::string>();
    return {};
  };
  SavedPlan p;
  for (auto [key, out] : {std::pair{"created", &p.created}, std::pair{"inventory", &p.inventory},
                          std::pair{"inventory_sha256", &p.inventory_sha256}, std::pair{"only", &p.parts}}) {
    if (Status st = str(j, key, out); !st.ok()) return st.error();
  }
  if (!IsHex64(p.inventory_sha256)) return bad("'inventory_sha256' is not a SHA-256");
  if (!j.contains("nodes") || !j["nodes"].is_array()) return bad("'nodes' is missing or not a list");
  for (const nlohmann::json& n : j["nodes"]) {
    if (!n.is_object()) return bad("a node entry is not an object");
    SavedNode s;
    for (auto [key, out] : {std::pair{"node", &s.node}, std::pair{"desired_sha256", &s.desired_sha256},
                            std::pair{"state_sha256", &s.state_sha256}}) {
      if (Status st = str(n, key, out); !st.ok()) return st.error();
    }
    if (names::CheckHostname(s.node)) return bad(fmt::format("node name '{}' is not a host name", s.node));
    if (!IsHex64(s.desired_sha256) || !IsHex64(s.state_sha256)) return bad(fmt::format("node {}: a digest is not a SHA-256", s.node));
    for (auto [key, out] : {std::pair{"add", &s.add}, std::pair{"change", &s.change}, std::pair{"destroy", &s.destroy}}) {
      if (!n.contains(key) || !n[key].is_number_unsigned()) return bad(fmt::format("node {}: '{}' is not a count", s.node, key));
      *out = n[key].get<std::size_t>();
    }
    p.nodes.push_back(std::move(s));
  }
  return p;
}

}  // namespace gpuforge::plan
