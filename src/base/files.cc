#include "gpuforge/base/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpuforge::base {

Status WriteFileAtomically(const std::filesystem::path& target, const std::string& content, mode_t mode) {
  std::error_code ec;
  // A bare name ("out.xml") has no parent: it goes in the working directory. create_directories
  // refuses the empty path with EINVAL, which lost a long validate run's results at its end
  // (#28 item 18).
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create directory: {}", dir.string(), ec.message())};
  std::string tmpl = (dir / ("." + target.filename().string() + ".gpuforge-XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return Error{fmt::format("{}: cannot create a temporary file: {}", target.string(), std::strerror(errno))};
  auto fail = [&](const char* what) {
    int e = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    return Status(Error{fmt::format("{}: {}: {}", target.string(), what, std::strerror(e))});
  };
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, mode) != 0) return fail("chmod failed");
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return Error{fmt::format("{}: close failed: {}", target.string(), std::strerror(errno))};
  }
  if (::rename(tmpl.c_str(), target.c_str()) != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    return Error{fmt::format("{}: rename failed: {}", target.string(), std::strerror(e))};
  }
  return Status::Ok();
}

}  // namespace gpuforge::base
