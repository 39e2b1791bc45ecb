// A server that is not to be trusted before its host key is checked (issue #12, item 6): it
// answers with a valid SSH banner, then an SSH_MSG_DISCONNECT whose reason carries terminal
// escapes (an OSC title, a clear screen, an 8-bit CSI), as a reachable address did in the
// security review. libssh puts that reason in its error; every command that connects prints
// it through the terminal gate, so no escape byte reaches the operator's terminal.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "testbed/testbed.h"

namespace gpuforge::remote {
namespace {

class DisconnectingServer {
 public:
  DisconnectingServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~DisconnectingServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }
  int served() const { return served_; }

  // The reason the server gives.
  static constexpr std::string_view kReason = "\x1b]0;owned\x07\x1b[2Jbye\xc2\x9b" "31m";

 private:
  static std::string Packet(std::string_view payload) {
    // RFC 4253 6: uint32 packet_length, byte padding_length, payload, padding (>= 4, to a
    // multiple of 8); no MAC before the key exchange.
    std::size_t pad = 8 - (5 + payload.size()) % 8;
    if (pad < 4) pad += 8;
    std::string p = Uint32(static_cast<std::uint32_t>(1 + payload.size() + pad));
    p += static_cast<char>(pad);
    p += payload;
    p += std::string(pad, '\0');
    return p;
  }
  // RFC 4251 5: uint32 big-endian; string = uint32 length, then the bytes.
  static std::string Uint32(std::uint32_t n) {
    std::string out;
    for (int k : {24, 16, 8, 0}) out += static_cast<char>((n >> k) & 0xff);
    return out;
  }
  static std::string String(std::string_view s) { return Uint32(static_cast<std::uint32_t>(s.size())) + std::string(s); }
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++served_;
      const std::string banner = "SSH-2.0-OpenSSH_9.2\r\n";
      (void)!::write(c, banner.data(), banner.size());
      // Wait for the client's banner and the start of its KEXINIT, so the disconnect reaches
      // libssh in the key exchange, where it reads packets (a disconnect sent before its
      // banner is not read as one, and a loaded machine can be that slow).
      char buf[4096];
      std::string got;
      for (int waited = 0; waited < 100; ++waited) {
        const std::size_t eol = got.find("\r\n");
        if (eol != std::string::npos && got.size() > eol + 2 + 5) break;
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 100) <= 0) continue;
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
      // SSH_MSG_DISCONNECT (1), reason 2 (protocol error), description, language.
      const std::string msg = Packet(std::string(1, '\x01') + Uint32(2) + String(kReason) + String(""));
      (void)!::write(c, msg.data(), msg.size());
      // Close only once the client has (it does on reading the disconnect): an end of stream
      // or a reset from this side first could reach libssh before the message, under load.
      for (int waited = 0; waited < 300; ++waited) {
        pollfd r{c, POLLIN, 0};
        if (::poll(&r, 1, 100) > 0 && ::read(c, buf, sizeof buf) <= 0) break;
      }
      ::close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::thread thread_;
};

TEST(HostileServer, ADisconnectReasonWithTerminalEscapesReachesNoTerminalRaw) {
  DisconnectingServer server;
  ASSERT_GT(server.port(), 0);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("gpuforge-hostile-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string inventory = (dir / "inventory.yaml").string();
  std::ofstream(inventory) << fmt::format(
      "cluster: {{name: hostile}}\nprofiles:\n  p: {{}}\nnodes:\n  - {{name: n1, address: 127.0.0.1, profile: p, "
      "ssh: {{port: {}}}}}\n",
      server.port());
  const std::string flags = "--ssh-config none --known-hosts /dev/null --color always";
  for (const std::string verb : {"run {} -- true", "plan {}", "validate {}", "apply {} --yes",
                                 "unlock {} --run 20261130T000000Z-00000000"}) {
    const std::string line = fmt::format("{} {} {} 2>&1 </dev/null", GPUFORGE_BINARY,
                                         fmt::format(fmt::runtime(verb), inventory), flags);
    Result<testbed::CommandOutput> r = testbed::RunCommand({"/bin/sh", "-c", line}, std::chrono::seconds(60));
    ASSERT_TRUE(r.ok()) << r.error().message;
    // libssh's words for it, every escape and control a '?' (the 8-bit CSI is two bytes of
    // UTF-8, so two).
    EXPECT_NE(r->output.find("Received SSH_MSG_DISCONNECT: 2:?]0;owned??[2Jbye??31m"), std::string::npos)
        << verb << "\n" << r->output;
    // With colour on, gpuforge's own SGR sequences are the only escapes: "\x1b[" then digits and 'm'.
    for (std::size_t at = r->output.find('\x1b'); at != std::string::npos; at = r->output.find('\x1b', at + 1)) {
      std::size_t end = r->output.find_first_not_of("[0123456789;", at + 1);
      EXPECT_TRUE(r->output[at + 1] == '[' && end != std::string::npos && r->output[end] == 'm')
          << verb << ": an escape that is not one of gpuforge's colours at byte " << at << "\n" << r->output;
    }
    for (char bad : {'\x07', '\x9b'}) EXPECT_EQ(r->output.find(bad), std::string::npos) << verb << "\n" << r->output;
  }
  EXPECT_GE(server.served(), 5);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuforge::remote
