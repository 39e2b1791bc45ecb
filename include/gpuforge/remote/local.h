#pragma once

// A session that runs on this machine, without SSH: for `--local`, when gpuforge runs on the
// node it checks (a CI job gating the node it runs on, a GPU machine with no sshd). Commands
// run with /bin/sh in their own process group, with the same timeout, output cap, cancel and
// conversation (ExecOptions::on_line) semantics as the SSH session; uploads go through the
// same atomic-write script, so modes, owners and sudo behave alike.

#include <memory>

#include "gpuforge/remote/session.h"

namespace gpuforge::remote {

// Connect() accepts any target and names it in messages; every session runs here.
std::unique_ptr<Connector> MakeLocalConnector();

}  // namespace gpuforge::remote
