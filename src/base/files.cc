#include "gpuforge/base/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

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

// Writes f's content to `fd`, gives it f's mode when `chmod` (open's mode went through the
// umask), and closes it. "" or "TARGET: what failed: why".
std::string FillAndClose(int fd, const FileToWrite& f, bool chmod) {
  const char* what = nullptr;
  if (!WriteAll(fd, *f.content)) {
    what = "write failed";
  } else if (chmod && ::fchmod(fd, f.mode) != 0) {
    what = "chmod failed";
  }
  int e = errno;
  if (::close(fd) != 0 && what == nullptr) {
    what = "close failed";
    e = errno;
  }
  return what == nullptr ? "" : fmt::format("{}: {}: {}", f.target.string(), what, std::strerror(e));
}

// The directories a batch has made so far, and one directory on each file system they are on:
// one syncfs per file system is enough.
struct MadeDirs {
  std::unordered_set<std::string> made;
  std::map<dev_t, std::filesystem::path> devices;
};

// mkdir -p `dir` the first time the batch needs it, noting its file system. "" or what failed.
std::string MakeDirOnce(const std::filesystem::path& dir, MadeDirs& dirs) {
  if (!dirs.made.insert(dir.string()).second) return "";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fmt::format("{}: cannot create directory: {}", dir.string(), ec.message());
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return fmt::format("{}: cannot stat: {}", dir.string(), std::strerror(errno));
  dirs.devices.emplace(st.st_dev, dir);
  return "";
}

// f's bytes and mode in a new temporary beside its target in `dir`; its name goes to `temp`
// (also when filling it failed, so that it is removed). "" or what failed.
std::string WriteTemporary(const FileToWrite& f, const std::filesystem::path& dir, std::string* temp) {
  std::string tmpl = (dir / ("." + f.target.filename().string() + ".gpuforge-XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return fmt::format("{}: cannot create a temporary file: {}", f.target.string(), std::strerror(errno));
  *temp = std::move(tmpl);
  return FillAndClose(fd, f, true);
}

}  // namespace

Status WriteFileAtomically(const std::filesystem::path& target, const std::string& content, mode_t mode,
                           bool replace) {
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
  if (replace) {
    if (::rename(tmpl.c_str(), target.c_str()) != 0) {
      int e = errno;
      ::unlink(tmpl.c_str());
      return Error{fmt::format("{}: rename failed: {}", target.string(), std::strerror(e))};
    }
    return Status::Ok();
  }
  int rc = ::renameat2(AT_FDCWD, tmpl.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
    // A file system without RENAME_NOREPLACE: link(2) also refuses an existing name.
    rc = ::link(tmpl.c_str(), target.c_str());
    const int e = errno;
    ::unlink(tmpl.c_str());
    errno = e;
  }
  if (rc != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    if (e == EEXIST) return Error{fmt::format("{}: already exists; not overwritten", target.string())};
    return Error{fmt::format("{}: cannot create: {}", target.string(), std::strerror(e))};
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
  // Directories already made are not asked again (a tree of 16,384 nodes has ~100,000 files in
  // ~50,000 directories).
  MadeDirs dirs;
  for (const FileToWrite& f : files) {
    const std::filesystem::path dir = f.target.has_parent_path() ? f.target.parent_path() : std::filesystem::path(".");
    std::string failed = MakeDirOnce(dir, dirs);
    if (failed.empty()) {
      std::string temp;
      failed = WriteTemporary(f, dir, &temp);
      if (!temp.empty()) temps.push_back(std::move(temp));
    }
    if (!failed.empty()) {
      remove_temps();
      return Error{failed + ". Nothing was written"};
    }
  }
  // Every temporary is whole before any target changes.
  for (const auto& [dev, d] : dirs.devices) {
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
  for (const auto& [dev, d] : dirs.devices) {
    if (Status s = SyncFileSystemOf(d); !s.ok()) return s;
  }
  return Status::Ok();
}

namespace {

namespace fs = std::filesystem;

// One entry of the root (a node's directory) and the files below it.
struct Entry {
  std::string name;               // "gpu00042"; "" for files directly in the root
  std::vector<std::size_t> files;  // indexes into the batch, in batch order
  bool fresh = false;              // did not exist: built whole in `staged`
  fs::path staged;                 // the temporary sibling, once made
  std::vector<std::string> temps;  // per-file temporaries (entries that exist), parallel to files
  MadeDirs dirs;                   // entries that exist: directories made, their file systems
  std::string error;               // the first failure, or ""
};

// Creates `path` (the file `target` will be) with `mode` and `content`: O_EXCL, no temporary,
// for a tree no reader can see yet. "" or what failed.
std::string WriteInPlace(const fs::path& path, const FileToWrite& f, mode_t mask) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, f.mode & 0777);
  if (fd < 0) return fmt::format("{}: cannot create: {}", f.target.string(), std::strerror(errno));
  // open's mode went through the umask: a chmod only where that took bits the target needs.
  return FillAndClose(fd, f, (f.mode & mask) != 0 || (f.mode & ~0777) != 0);
}

// Builds a new entry whole in a temporary sibling of its final name.
void StageEntry(const fs::path& root, const std::vector<FileToWrite>& files, Entry& e, mode_t mask) {
  // The name stays under NAME_MAX whatever the entry is called.
  std::string tmpl = (root / ("." + e.name.substr(0, 64) + ".gpuforge-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    e.error = fmt::format("{}: cannot create a temporary directory: {}", (root / e.name).string(), std::strerror(errno));
    return;
  }
  e.staged = tmpl;
  // mkdtemp makes it 0700; it becomes DIR/<node>, which mkdir would have made 0777 & ~umask.
  if (::chmod(tmpl.c_str(), 0777 & ~mask) != 0) {
    e.error = fmt::format("{}: chmod failed: {}", tmpl, std::strerror(errno));
    return;
  }
  const fs::path final_dir = root / e.name;
  std::unordered_set<std::string> made;
  for (std::size_t i : e.files) {
    const fs::path below = files[i].target.lexically_relative(final_dir);
    // Every directory between the entry and the file, made once: nothing else is in this tree.
    fs::path at = e.staged, shown = final_dir;
    for (auto part = below.begin(); std::next(part) != below.end(); ++part) {
      at /= *part;
      shown /= *part;
      if (!made.insert(at.string()).second) continue;
      if (::mkdir(at.c_str(), 0777) != 0) {
        e.error = fmt::format("{}: cannot create directory: {}", shown.string(), std::strerror(errno));
        return;
      }
    }
    if (std::string failed = WriteInPlace(e.staged / below, files[i], mask); !failed.empty()) {
      e.error = std::move(failed);
      return;
    }
  }
}

// True when `f.target` is already a regular file with f's bytes and mode: a render run again
// on an unchanged inventory rewrites nothing, and each file keeps its time stamp (rsync and
// make see no change). A link, a special file or any error is "no": the file is written.
bool AlreadyThere(const FileToWrite& f) {
  int fd = ::open(f.target.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == f.mode &&
              static_cast<std::size_t>(st.st_size) == f.content->size();
  if (same) {
    std::string have(f.content->size() + 1, '\0');  // one byte more: a file that grew is seen
    std::size_t got = 0;
    for (;;) {
      ssize_t n = ::read(fd, have.data() + got, have.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
      if (got == have.size()) break;
    }
    same = got == f.content->size() && std::memcmp(have.data(), f.content->data(), got) == 0;
  }
  ::close(fd);
  return same;
}

// An entry that exists: each file to a temporary sibling of its target, renamed at commit.
void WriteBesideTargets(const std::vector<FileToWrite>& files, Entry& e) {
  for (std::size_t i : e.files) {
    const FileToWrite& f = files[i];
    if (e.error = MakeDirOnce(f.target.parent_path(), e.dirs); !e.error.empty()) return;
    std::string temp;  // stays "" for a file that is AlreadyThere: nothing to rename
    if (!AlreadyThere(f)) e.error = WriteTemporary(f, f.target.parent_path(), &temp);
    e.temps.push_back(std::move(temp));
    if (!e.error.empty()) return;
  }
}

void Discard(Entry& e) {
  for (const std::string& t : e.temps) {
    if (!t.empty()) ::unlink(t.c_str());
  }
  e.temps.clear();
  if (!e.staged.empty()) {
    std::error_code ec;
    fs::remove_all(e.staged, ec);  // our own fresh directory: no link in it to follow
    e.staged.clear();
  }
}

}  // namespace

Status WriteTreeAtomically(const fs::path& root, const std::vector<FileToWrite>& files, unsigned threads) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return Error{fmt::format("{}: cannot create directory: {}. Nothing was written", root.string(), ec.message())};
  std::vector<Entry> entries;
  std::unordered_map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const fs::path rel = files[i].target.lexically_relative(root);
    if (rel.empty() || *rel.begin() == ".." || *rel.begin() == ".") {
      return Error{fmt::format("{}: not below {}. Nothing was written", files[i].target.string(), root.string())};
    }
    // A file right in the root has no entry of its own to stage: it goes beside its target.
    const std::string name = std::next(rel.begin()) == rel.end() ? std::string() : rel.begin()->string();
    auto [it, added] = by_name.emplace(name, entries.size());
    if (added) {
      entries.emplace_back();
      entries.back().name = name;
    }
    entries[it->second].files.push_back(i);
  }
  for (Entry& e : entries) {
    struct stat st {};
    if (e.name.empty()) continue;
    if (::lstat((root / e.name).c_str(), &st) == 0) continue;
    if (errno != ENOENT) {
      return Error{fmt::format("{}: cannot check: {}. Nothing was written", (root / e.name).string(), std::strerror(errno))};
    }
    e.fresh = true;
  }
  // The process's umask, read once before any thread starts (umask(2) has no read-only form).
  const mode_t mask = ::umask(0);
  ::umask(mask);

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (;;) {
      const std::size_t k = next.fetch_add(1);
      if (k >= entries.size() || failed.load()) return;
      Entry& e = entries[k];
      if (e.fresh) {
        StageEntry(root, files, e, mask);
      } else {
        WriteBesideTargets(files, e);
      }
      if (!e.error.empty()) failed.store(true);
    }
  };
  unsigned n = threads != 0 ? threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  n = static_cast<unsigned>(std::min<std::size_t>(n, entries.size()));
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < n; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads, same result
    }
  }
  work();
  for (std::thread& t : helpers) t.join();

  auto discard_from = [&](std::size_t k) {
    for (; k < entries.size(); ++k) Discard(entries[k]);
  };
  for (const Entry& e : entries) {
    if (e.error.empty()) continue;
    const std::string message = e.error;
    discard_from(0);
    return Error{message + ". Nothing was written"};
  }
  // One syncfs per file system: every staged tree and temporary is whole before any target changes.
  std::map<dev_t, fs::path> devices;
  struct stat root_st {};
  if (::stat(root.c_str(), &root_st) != 0) {
    int e = errno;
    discard_from(0);
    return Error{fmt::format("{}: cannot stat: {}. Nothing was written", root.string(), std::strerror(e))};
  }
  devices.emplace(root_st.st_dev, root);
  for (const Entry& e : entries) devices.insert(e.dirs.devices.begin(), e.dirs.devices.end());
  for (const auto& [dev, dir] : devices) {
    if (Status s = SyncFileSystemOf(dir); !s.ok()) {
      discard_from(0);
      return Error{s.error().message + ". Nothing was written"};
    }
  }
  std::size_t replaced = 0;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    Entry& e = entries[k];
    auto fail = [&](const fs::path& target, int err) {
      discard_from(k);
      return Error{fmt::format("{}: rename failed: {}. {} of {} files were replaced or already current (each whole, old or new); "
                               "the rest are unchanged",
                               target.string(), std::strerror(err), replaced, files.size())};
    };
    if (e.fresh) {
      const fs::path target = root / e.name;
      // NOREPLACE: a directory made there since the check is not swapped away (an empty one
      // would be, by rename(2)). EINVAL: a file system without the flag.
      int rc = ::renameat2(AT_FDCWD, e.staged.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE);
      if (rc != 0 && errno == EINVAL) rc = ::rename(e.staged.c_str(), target.c_str());
      if (rc != 0) return fail(target, errno);
      e.staged.clear();
      replaced += e.files.size();
      continue;
    }
    for (std::size_t j = 0; j < e.temps.size(); ++j) {
      const fs::path& target = files[e.files[j]].target;
      if (e.temps[j].empty()) {  // AlreadyThere
        ++replaced;
        continue;
      }
      if (::rename(e.temps[j].c_str(), target.c_str()) != 0) {
        int err = errno;
        // The first j are targets now; the rest are removed by fail().
        e.temps.erase(e.temps.begin(), e.temps.begin() + static_cast<std::ptrdiff_t>(j));
        return fail(target, err);
      }
      ++replaced;
    }
    e.temps.clear();
  }
  for (const auto& [dev, dir] : devices) {
    if (Status s = SyncFileSystemOf(dir); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace gpuforge::base
