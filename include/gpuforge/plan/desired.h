#pragma once

// The desired state of a node, derived from the model alone: which packages, files, kernel
// modules, sysctl values and services gpuforge will manage there. `plan --offline` prints it;
// the SSH plan compares it with what the node has.

#include <string>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::plan {

enum class ResourceKind { kPackage, kFile, kModule, kSysctl, kService, kScheduler };
const char* ToString(ResourceKind k);

struct Resource {
  ResourceKind kind;
  std::string id;       // package name, file path, module, sysctl key, service unit
  std::string summary;  // what it will hold, in one line, without the node's own name
  std::string reason;   // why gpuforge manages it (guide or anchor it comes from)

  bool operator==(const Resource&) const = default;
};

// Resources for one node, in apply order (packages, files, modules, sysctl, services).
std::vector<Resource> DesiredState(const model::Cluster& c, const model::Node& n);

// Nodes with identical desired state, folded: {"gpu[001-032]", resources}.
struct NodeClass {
  std::string nodes;  // hostlist expression
  std::size_t count = 0;
  std::string profile;
  std::vector<Resource> resources;
};
std::vector<NodeClass> FoldDesiredState(const model::Cluster& c);

}  // namespace gpuforge::plan
