// NCCL's log: where NCCL writes it during a run, and what the probe keeps of it.

#include "probe/nccl/nccl_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuforge/base/text.h"

namespace gpuforge::probe::internal {

namespace {

constexpr std::size_t kKeptLines = 100;
constexpr std::size_t kKeptLineChars = 300;

// NCCL opens NCCL_DEBUG_FILE once per process, at its first initialisation, and keeps it open,
// so the file is per process and each run reads only what was appended during it.
struct SharedLogFile {
  std::mutex m;
  bool decided = false;  // whether NCCL_DEBUG_FILE has been looked at
  int fd = -1;           // ours, when we chose the file
  std::string path;      // "" once unlinked
};

SharedLogFile& Shared() {
  static SharedLogFile* shared = new SharedLogFile;  // never destroyed: used at exit
  return *shared;
}

void RemoveLogAtExit() {
  SharedLogFile& sh = Shared();
  std::lock_guard lock(sh.m);
  if (!sh.path.empty()) unlink(sh.path.c_str());
  sh.path.clear();
}

class NcclLogFile : public NcclLogCapture {
 public:
  void Start(const std::string& level) override {
    SharedLogFile& sh = Shared();
    std::lock_guard lock(sh.m);
    if (!sh.decided) {
      sh.decided = true;
      if (std::getenv("NCCL_DEBUG_FILE") == nullptr) {
        const char* tmp = std::getenv("TMPDIR");
        // NCCL expands %h and %p in the name; a directory with a % would be mangled.
        std::string dir = tmp != nullptr && *tmp != '\0' &&
                                  std::string_view(tmp).find('%') == std::string_view::npos
                              ? tmp
                              : "/tmp";
        std::string name = dir + "/gpuforge-nccl-log-XXXXXX";
        const int fd = mkstemp(name.data());
        if (fd >= 0) {
          sh.fd = fd;
          sh.path = name;
          std::atexit(RemoveLogAtExit);
        }
      }
    }
    // setenv is not thread-safe against getenv elsewhere, which is acceptable because probes
    // run one at a time. Once the file is NCCL's (sh.path cleared) the variable stays as it is.
    const NcclLogEnv env{std::getenv("NCCL_DEBUG"), std::getenv("NCCL_DEBUG_SUBSYS"),
                         std::getenv("NCCL_DEBUG_FILE")};
    for (const auto& [name, value] : NcclLogSettings(level, env, sh.path)) {
      setenv(name.c_str(), value.c_str(), 1);
    }
    struct stat st {};
    start_ = sh.fd >= 0 && fstat(sh.fd, &st) == 0 ? static_cast<off_t>(st.st_size) : 0;
  }

  std::vector<std::string> Finish() override {
    SharedLogFile& sh = Shared();
    std::lock_guard lock(sh.m);
    std::vector<std::string> lines;
    if (sh.fd < 0) return lines;
    std::string text;
    char buf[65536];
    off_t at = start_;
    // Bounded: a TRACE log can be huge and only the first lines matter here.
    while (text.size() < (std::size_t{16} << 20)) {
      const ssize_t n = pread(sh.fd, buf, sizeof buf, at);
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    // Something was written, so NCCL has the file open: the name can go now.
    if (at > 0 && !sh.path.empty()) {
      unlink(sh.path.c_str());
      sh.path.clear();
    }
    std::size_t begin = 0;
    while (begin < text.size()) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(begin, end - begin));
      begin = end + 1;
    }
    return lines;
  }

 private:
  off_t start_ = 0;
};

bool Contains(std::string_view s, std::string_view what) { return s.find(what) != s.npos; }

// The word after `marker`, up to white space.
std::string WordAfter(std::string_view line, std::string_view marker) {
  std::size_t at = line.find(marker);
  if (at == line.npos) return "";
  std::string_view rest = line.substr(at + marker.size());
  return std::string(rest.substr(0, rest.find_first_of(" \t")));
}

}  // namespace

std::unique_ptr<NcclLogCapture> MakeNcclLogFile() { return std::make_unique<NcclLogFile>(); }

std::vector<std::pair<std::string, std::string>> NcclLogSettings(const std::string& level,
                                                                 const NcclLogEnv& env,
                                                                 const std::string& own_file) {
  std::vector<std::pair<std::string, std::string>> out;
  const bool ours = env.file == nullptr && !own_file.empty();
  // Without a file NCCL logs to stdout, which is the agent's result channel: no level then.
  if (env.file == nullptr && !ours) return out;
  if (ours) out.emplace_back("NCCL_DEBUG_FILE", own_file);
  // A setting in the environment is the user's and wins.
  if (env.debug == nullptr) out.emplace_back("NCCL_DEBUG", level);
  if (env.subsys == nullptr) out.emplace_back("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV");
  return out;
}

NcclLogSummary ParseNcclLog(std::span<const std::string> lines) {
  static constexpr std::string_view kWorthKeeping[] = {
      "NET/", "Using network", "via ", "WARN", "version", "Init COMPLETE", "Bootstrap"};
  NcclLogSummary out;
  for (const std::string& raw : lines) {
    const std::string line = text::Printable(raw, text::Shown{.max = kKeptLineChars, .drop_line_ends = true});
    if (std::string net = WordAfter(line, "Using network "); !net.empty() && out.network.empty()) {
      out.network = net;
    }
    if (Contains(line, "NET/IB : No device found") && !out.ib_no_device) {
      out.ib_no_device = true;
      out.ib_no_device_line = line;
    }
    if (std::string v = WordAfter(line, "NCCL version "); !v.empty() && out.version.empty()) {
      out.version = v;
    }
    if (out.kept.size() < kKeptLines &&
        std::any_of(std::begin(kWorthKeeping), std::end(kWorthKeeping),
                    [&](std::string_view w) { return Contains(line, w); })) {
      out.kept.push_back(line);
    }
  }
  return out;
}

}  // namespace gpuforge::probe::internal
