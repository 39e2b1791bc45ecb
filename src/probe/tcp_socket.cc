#include "probe/tcp_socket.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace gpuforge::probe::internal::tcp {

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

Wait WaitFor(int fd, short events, Clock::time_point deadline, const Stop& stop) {
  for (;;) {
    if (stop()) return Wait::kStopped;
    const auto now = Clock::now();
    if (now >= deadline) return Wait::kTimedOut;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left + 1, 1, kPollMs)));
    if (r > 0 || (r < 0 && errno != EINTR)) return Wait::kReady;
  }
}

Failure NotReady(Wait w, std::string_view what, double timeout) {
  if (w == Wait::kStopped) return {"probe.cancelled", fmt::format("cancelled while {}", what)};
  return {"tcp.timeout", fmt::format("nothing happened for {} s while {}", timeout, what)};
}

std::optional<Failure> RecvExact(int fd, void* buf, std::size_t len, double timeout,
                                 const Stop& stop, std::string_view what) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    const ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<std::size_t>(n);
    } else if (n == 0) {
      return Failure{"tcp.short_transfer",
                     fmt::format("the peer closed the connection while {}", what)};
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Wait w = WaitFor(fd, POLLIN, After(timeout), stop); w != Wait::kReady) {
        return NotReady(w, what, timeout);
      }
    } else if (errno != EINTR) {
      return SysFailure("recv", what, errno);
    }
  }
  return std::nullopt;
}

std::optional<Failure> SendExact(int fd, const void* buf, std::size_t len, double timeout,
                                 const Stop& stop, std::string_view what) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    const ssize_t n = ::send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) {
      p += n;
      len -= static_cast<std::size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Wait w = WaitFor(fd, POLLOUT, After(timeout), stop); w != Wait::kReady) {
        return NotReady(w, what, timeout);
      }
    } else if (errno != EINTR) {
      return SysFailure("send", what, errno);
    }
  }
  return std::nullopt;
}

std::string Address(const sockaddr_in& a) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return fmt::format("{}:{}", text, ntohs(a.sin_port));
}

}  // namespace gpuforge::probe::internal::tcp
