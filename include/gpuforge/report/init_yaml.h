#pragma once

// `gpuforge init` (#33): the draft (facts/draft.h) written as an inventory a person finishes.
// Every value carries a comment saying where it came from; what facts cannot know (racks,
// networks, switches, storage, the scheduler's roles) is a commented placeholder marked TODO
// with the section of docs/inventory.md to read; the outliers and the unreached nodes come
// first. The text loads (inventory/loader.h) as it is: cmd_init checks that before writing.

#include <map>
#include <string>

#include "gpuforge/facts/draft.h"

namespace gpuforge::report {

struct InitYamlOptions {
  std::string cluster_name = "cluster";
  std::string generated_by;  // "gpuforge init --nodes gpu[01-04]" (shown in the header)
  std::string generated_at;  // "2026-12-06T19:30:00Z"
  // defaults.ssh, written as given ("" / 0 / false: left out).
  std::string ssh_user;
  int ssh_port = 0;
  std::string ssh_identity_file;
  std::string ssh_jump;
  bool ssh_sudo = false;
  // node -> address, where one was given (--addresses); a node without one is reached by name.
  std::map<std::string, std::string> addresses;
};

std::string InitYaml(const facts::Draft& draft, const InitYamlOptions& o);

}  // namespace gpuforge::report
