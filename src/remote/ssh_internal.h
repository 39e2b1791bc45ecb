#pragma once

// libssh handles owned by RAII pointers, and the session over one authenticated connection:
// shared by the connector (ssh.cc: connect, authenticate, check the host key) and the session
// (ssh_session.cc: exec with its callbacks, SFTP uploads).

#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <chrono>
#include <memory>

#include "gpuforge/remote/session.h"

namespace gpuforge::remote::ssh_internal {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct SessionFree {
  void operator()(ssh_session s) const { ssh_free(s); }
};
struct ChannelFree {
  void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
struct KeyFree {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};
struct EventFree {
  void operator()(ssh_event e) const { ssh_event_free(e); }
};
struct SftpFree {
  void operator()(sftp_session s) const { sftp_free(s); }
};
struct SftpFileClose {
  void operator()(sftp_file f) const { sftp_close(f); }
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionFree>;
using ChannelPtr = std::unique_ptr<ssh_channel_struct, ChannelFree>;
using KeyPtr = std::unique_ptr<ssh_key_struct, KeyFree>;
using EventPtr = std::unique_ptr<ssh_event_struct, EventFree>;
using SftpPtr = std::unique_ptr<sftp_session_struct, SftpFree>;
using SftpFilePtr = std::unique_ptr<sftp_file_struct, SftpFileClose>;

// The Session over `session`, connected and authenticated as `target`; `io_timeout` bounds
// each blocking SFTP step.
std::unique_ptr<Session> MakeSession(Target target, SessionPtr session, std::chrono::seconds io_timeout);

}  // namespace gpuforge::remote::ssh_internal
