#include "gpuforge/base/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

namespace gpuforge::base {

namespace {

// Writes all of `content` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, const std::string& content) {
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

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
  if (!WriteAll(fd, content)) return fail("write failed");
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

namespace {

// syncfs(2) on the file system holding `dir`.
Status SyncFileSystemOf(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("{}: cannot open to sync: {}", dir.string(), std::strerror(errno))};
  int rc = ::syncfs(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0) return Error{fmt::format("{}: syncfs failed: {}", dir.string(), std::strerror(e))};
  return Status::Ok();
}

}  // namespace

Status WriteFilesAtomically(const std::vector<FileToWrite>& files) {
  std::vector<std::string> temps;
  temps.reserve(files.size());
  auto remove_temps = [&] {
    for (const std::string& t : temps) ::unlink(t.c_str());
  };
  // One directory per file system is enough for syncfs; directories already made are not
  // asked again (a tree of 16,384 nodes has ~100,000 files in ~50,000 directories).
  std::set<dev_t> devices;
  std::vector<std::filesystem::path> sync_dirs;
  std::set<std::filesystem::path> made;
  for (const FileToWrite& f : files) {
    const std::filesystem::path dir = f.target.has_parent_path() ? f.target.parent_path() : std::filesystem::path(".");
    if (made.insert(dir).second) {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        remove_temps();
        return Error{fmt::format("{}: cannot create directory: {}. Nothing was written", dir.string(), ec.message())};
      }
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0) {
        int e = errno;
        remove_temps();
        return Error{fmt::format("{}: cannot stat: {}. Nothing was written", dir.string(), std::strerror(e))};
      }
      if (devices.insert(st.st_dev).second) sync_dirs.push_back(dir);
    }
    std::string tmpl = (dir / ("." + f.target.filename().string() + ".gpuforge-XXXXXX")).string();
    int fd = mkstemp(tmpl.data());
    if (fd < 0) {
      int e = errno;
      remove_temps();
      return Error{fmt::format("{}: cannot create a temporary file: {}. Nothing was written", f.target.string(),
                               std::strerror(e))};
    }
    temps.push_back(tmpl);
    const char* what = nullptr;
    if (!WriteAll(fd, *f.content)) {
      what = "write failed";
    } else if (::fchmod(fd, f.mode) != 0) {
      what = "chmod failed";
    }
    int e = errno;
    if (::close(fd) != 0 && what == nullptr) {
      what = "close failed";
      e = errno;
    }
    if (what != nullptr) {
      remove_temps();
      return Error{fmt::format("{}: {}: {}. Nothing was written", f.target.string(), what, std::strerror(e))};
    }
  }
  // Every temporary is whole before any target changes.
  for (const std::filesystem::path& d : sync_dirs) {
    if (Status s = SyncFileSystemOf(d); !s.ok()) {
      remove_temps();
      return Error{s.error().message + ". Nothing was written"};
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (::rename(temps[i].c_str(), files[i].target.c_str()) != 0) {
      int e = errno;
      for (std::size_t j = i; j < temps.size(); ++j) ::unlink(temps[j].c_str());
      return Error{fmt::format("{}: rename failed: {}. {} of {} files were replaced (each whole, old or new); "
                               "the rest are unchanged",
                               files[i].target.string(), std::strerror(e), i, files.size())};
    }
  }
  for (const std::filesystem::path& d : sync_dirs) {
    if (Status s = SyncFileSystemOf(d); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace gpuforge::base
