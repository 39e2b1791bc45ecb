#pragma once

// Sessions over SSH with libssh: known_hosts checked before anything is sent, key
// authentication through ssh-agent and identity files, ~/.ssh/config honoured.

#include <chrono>
#include <memory>
#include <string>

#include "gpuforge/remote/session.h"

namespace gpuforge::remote {

// The largest ssh config gpuforge lets libssh read (a real one is a few KiB).
inline constexpr std::size_t kMaxSshConfigBytes = 1u << 20;
// The largest identity file (a private key is a few KiB).
inline constexpr std::size_t kMaxIdentityFileBytes = 4u << 20;

struct SshOptions {
  std::string known_hosts;         // "" = ~/.ssh/known_hosts
  bool accept_new_host_keys = false;  // like OpenSSH's StrictHostKeyChecking=accept-new
  std::string config_file;         // "" = ~/.ssh/config if it exists; "none" = no config
  std::chrono::seconds connect_timeout{10};
  std::string jump_program = "ssh";  // OpenSSH client that carries ProxyJump (-W)
};

std::unique_ptr<Connector> MakeSshConnector(const SshOptions& options);

}  // namespace gpuforge::remote
