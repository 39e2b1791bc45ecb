#include "gpuforge/base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace gpuforge::base {
namespace {

std::string_view KindOf(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string DescribeBytes(std::size_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return fmt::format("{} MiB", n >> 20);
  if (n >= (1u << 10) && n % (1u << 10) == 0) return fmt::format("{} KiB", n >> 10);
  return fmt::format("{} bytes", n);
}

namespace {

Error Refusal(const InputFile& in, std::string_view why) {
  return Error{in.name_path ? fmt::format("cannot read {} {}: {}", in.what, in.path, why)
                            : fmt::format("cannot read {}: {}", in.what, why)};
}

std::string TooBig(const InputFile& in) {
  return fmt::format("it is larger than {}; refusing to read it", DescribeBytes(in.cap));
}

// Opens IN and checks, by what fstat says, that it is a regular file within the cap; the
// caller owns the descriptor returned.
Result<int> OpenRegular(const InputFile& in, struct stat* st) {
  const bool stdin_path = in.path == "-";
  if (stdin_path && !in.allow_pipe) {
    return Refusal(in, "standard input is not read here (this command reads the file more than once); name the file");
  }
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
  const int fd = stdin_path ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
                            : ::open(in.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Refusal(in, std::strerror(errno));
  auto fail = [&](const std::string& why) {
    ::close(fd);
    return Refusal(in, why);
  };
  if (::fstat(fd, st) != 0) return fail(std::strerror(errno));
  if (in.allow_pipe && (S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode))) {
    // Read it blocking from here on: a FIFO with no writer gives end-of-file at once (pipe(7)),
    // one with a writer gives what is written, to the cap.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return fail(std::strerror(errno));
    st->st_size = 0;
    return fd;
  }
  if (stdin_path && ::isatty(fd)) return fail("standard input is a terminal; pipe the file in or name it");
  if (!S_ISREG(st->st_mode)) {
    return fail(fmt::format("it is {}, not a regular file{}", KindOf(st->st_mode),
                            in.allow_pipe ? " or a pipe" : ""));
  }
  if (static_cast<std::size_t>(st->st_size) > in.cap) return fail(TooBig(in));
  return fd;
}

}  // namespace

Status CheckInputFile(const InputFile& in) {
  struct stat st {};
  Result<int> fd = OpenRegular(in, &st);
  if (!fd.ok()) return fd.error();
  ::close(*fd);
  return Status::Ok();
}

Result<std::string> ReadInputFile(const InputFile& in) {
  auto fail = [&](std::string_view why) { return Refusal(in, why); };
  struct stat st {};
  Result<int> opened = OpenRegular(in, &st);
  if (!opened.ok()) return opened.error();
  Fd fd(*opened);
  const std::string too_big = TooBig(in);
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) break;
    // A file that grows while read (or a /proc file that reports size 0) still stops at the cap.
    if (out.size() + static_cast<std::size_t>(n) > in.cap) return fail(too_big);
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace gpuforge::base
