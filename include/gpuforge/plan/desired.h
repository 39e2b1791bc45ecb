#pragma once

// The desired state of a node as `plan --offline` prints it: the very DesiredNode that the
// online plan compares and apply pushes (DesiredNodeState over the render's files), listed as
// resources with a one-line summary and the reason gpuforge manages each. One source, so the
// offline plan cannot drift from what apply writes (#14 "plan = apply").

#include <string>
#include <vector>

#include <map>

#include "gpuforge/model/cluster.h"
#include "gpuforge/plan/node_plan.h"

namespace gpuforge::plan {

enum class ResourceKind { kPackage, kFile, kModule, kSysctl, kService, kScheduler };
const char* ToString(ResourceKind k);

struct Resource {
  ResourceKind kind;
  std::string id;       // package name, file path, module, sysctl key, service unit
  std::string summary;  // what it will hold, in one line, without the node's own name
  std::string reason;   // why gpuforge manages it (guide or anchor it comes from)
  unsigned mode = 0;    // files: the mode apply gives it
  std::string owner;    // files: the owner apply gives it, "user:group"

  bool operator==(const Resource&) const = default;
};

// Resources for one node, in apply order (packages, files, modules, sysctl, services), from
// `d`. With `with_agent` and no agent binary in `d`, the agent file apply would push is listed
// too (the offline plan does not read the binary).
std::vector<Resource> DesiredState(const model::Cluster& c, const model::Node& n, const DesiredNode& d,
                                   bool with_agent = false);

// Nodes with identical desired state, folded: {"gpu[001-032]", resources}.
struct NodeClass {
  std::string nodes;  // hostlist expression
  std::size_t count = 0;
  std::string profile;
  std::vector<Resource> resources;
};
// `nodes` maps each node's name to its DesiredNode; nodes missing from it are left out.
std::vector<NodeClass> FoldDesiredState(const model::Cluster& c, const std::map<std::string, DesiredNode>& nodes,
                                        bool with_agent = false);

}  // namespace gpuforge::plan
