#pragma once

// The inventory loader's private parts: the Loader that walks one file's YAML tree into the
// model, and the helpers its sections share. Each section lives in its own file: loader.cc
// (the entry and the top-level sections), load_profiles.cc, load_nodes.cc, load_fabric.cc,
// load_storage.cc, load_software.cc, and loader_checks.cc (the checks they all use).

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpuforge/base/diag.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/inventory/yaml_reader.h"

namespace gpuforge::inventory::internal {

inline YAML::Node Get(const YAML::Node& map, std::string_view key) { return YamlReader::Get(map, key); }
inline bool Has(const YAML::Node& map, std::string_view key) { return YamlReader::Has(map, key); }

// "; did you mean 'x'?" for the closest of `known`, or "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& known);
// A network's or NIC's `kind`, checked by the caller to be one of infiniband, roce, ethernet.
model::NetKind NetKindOf(const std::string& s);

// The ssh settings one layer (defaults, a profile, a group, a node) sets; what it leaves unset
// falls through to the layer below.
struct SshLayer {
  std::optional<std::string> user;
  std::optional<int> port;
  std::optional<std::string> identity_file;
  std::optional<std::string> jump;
  std::optional<bool> sudo;

  void ApplyTo(model::SshSettings* s) const {
    if (user) {
      s->user = *user;
      s->user_set = true;
    }
    if (port) {
      s->port = *port;
      s->port_set = true;
    }
    if (identity_file) s->identity_file = *identity_file;
    if (jump) s->jump = *jump;
    if (sudo) s->sudo = *sudo;
  }
};

// What a profile or group contributes to its nodes' ssh and vars.
struct Layer {
  SshLayer ssh;
  std::map<std::string, std::string> vars;
};

class Loader {
 public:
  Loader(const std::string& file, Diagnostics* diags) : r_(file, diags) {
    cluster_.source_file = file;
  }

  void Load(const YAML::Node& root);
  model::Cluster Take() {
    cluster_.BuildIndex();
    return std::move(cluster_);
  }

 private:
  // Expands a hostlist scalar, reporting errors at the right column of the file.
  std::optional<std::vector<std::string>> Expand(const YAML::Node& n, std::string_view what,
                                                 std::size_t limit = kMaxNodes);
  // Expands `text`, which starts at character `offset` of the scalar `n`.
  std::optional<std::vector<std::string>> ExpandPart(const YAML::Node& n, std::string_view text,
                                                     std::size_t offset, std::string_view what,
                                                     std::size_t limit);
  // Refuses a hostlist whose text holds a character outside [A-Za-z0-9] + `extra` + "[],",
  // pointing at it; `rule` says what the names may hold.
  bool CheckHostlistChars(const YAML::Node& n, std::string_view extra, std::string_view what,
                          std::string_view rule);
  // Reports `check`'s verdict on `value`; when the value is the whole scalar and the reason
  // says "at position N", the caret points at that character.
  void CheckWith(const YAML::Node& n, std::optional<std::string> (*check)(std::string_view),
                 std::string_view value, std::string_view what);
  // Values that reach config files and shell commands (vars, NCCL settings): false, with the
  // caret on the first character names::CheckSafeValue refuses, when it refuses the value.
  bool CheckSafe(const YAML::Node& n, std::string_view value, std::string_view what, std::string_view why);
  // Whether an unknown node or switch name may be one that a failed entry declared.
  bool MaybeFromFailedEntry(const std::string& name) const;
  // Notes the names a failed node or switch entry may have declared.
  void NoteFailedEntry(const YAML::Node& name_node);

  void LoadCluster(const YAML::Node& n);
  void LoadRacks(const YAML::Node& n);
  SshLayer LoadSsh(const YAML::Node& n, std::string_view what);
  std::map<std::string, std::string> LoadVars(const YAML::Node& n, std::string_view what);
  void LoadProfiles(const YAML::Node& n);
  // Loads one profile (a base one, or one derived by a node's overrides) with its ssh and
  // vars; false when it could not be loaded at all.
  bool LoadProfileEntry(const std::string& name, const YAML::Node& body, SourcePos where);
  std::optional<model::Profile> LoadProfile(const std::string& name, const YAML::Node& n);
  std::vector<model::GpuSpec> LoadGpus(const YAML::Node& n, std::string_view what);
  std::vector<model::NicSpec> LoadNics(const YAML::Node& n, std::string_view what, bool* complete);
  void LoadGroups(const YAML::Node& n);
  void LoadNodes(const YAML::Node& n);
  // The profile a node entry with `overrides` uses, "<profile>@<entry>"; nullopt on errors.
  std::optional<std::string> DeriveProfile(const std::string& base, const YAML::Node& entry,
                                           const YAML::Node& name_node, std::string_view what);
  void LoadNetworks(const YAML::Node& n);
  void LoadRoceSettings(const YAML::Node& n, std::string_view network_what, model::Network* net);  // #13
  // nodes[].port_addresses for the names of one entry, one map per node (#13).
  std::optional<std::vector<std::map<std::string, std::string>>> LoadPortAddresses(
      const YAML::Node& n, std::string_view what, const std::vector<std::string>& names, const std::string& profile,
      std::map<std::string, SourcePos>* seen);
  void LoadSwitches(const YAML::Node& n);
  void LoadLinks(const YAML::Node& n);
  void LoadStorage(const YAML::Node& n);
  void LoadSoftware(const YAML::Node& n);
  void LoadAccounting(const YAML::Node& n);
  void LoadScheduler(const YAML::Node& n);
  void LoadWorkload(const YAML::Node& n);
  void LoadOverrides(const YAML::Node& n, std::string_view what, model::Overrides* out);

  struct EndpointList {
    std::vector<model::Endpoint> ends;
    bool ok = false;
  };
  EndpointList ExpandEndpoint(const YAML::Node& n, std::string_view what);

  const model::Node* FindNode(const std::string& name) const {
    auto it = node_index_.find(name);
    return it == node_index_.end() ? nullptr : &cluster_.nodes[it->second];
  }
  const model::Switch* FindSwitch(const std::string& name) const {
    auto it = switch_index_.find(name);
    return it == switch_index_.end() ? nullptr : &cluster_.switches[it->second];
  }
  const model::Profile* FindProfile(const std::string& name) const {
    auto it = profile_index_.find(name);
    return it == profile_index_.end() ? nullptr : &cluster_.profiles[it->second];
  }
  std::vector<std::string> NetworkNames() const;

  YamlReader r_;
  model::Cluster cluster_;
  // Lookups by name; the model's own are linear, and an inventory may hold 65536 nodes.
  std::unordered_map<std::string, std::size_t> node_index_, switch_index_, profile_index_;
  std::map<std::string, YAML::Node> profile_nodes_;  // as written, for `overrides`
  Layer defaults_;
  std::map<std::string, Layer> profile_layers_;
  std::map<std::string, Layer> group_layers_;
  bool racks_declared_ = false;
  // Names from entries that failed to load: references to them are not reported again, so
  // one mistake does not bury the file in follow-on errors.
  std::unordered_set<std::string> broken_nodes_;
  std::set<std::string> broken_nic_profiles_;  // a NIC entry failed: missing NICs are not news
  std::set<std::string> broken_switches_;      // switches without a usable port count
  std::vector<std::string> failed_prefixes_;   // of node and switch entries whose names are unknown
};

}  // namespace gpuforge::inventory::internal
