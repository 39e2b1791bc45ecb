#pragma once

// The real consumers the report formats are checked with (xmllint, junitparser, promtool),
// run from the tests: a shell command's exit code and output, files in a per-test directory.

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuforge::testing {

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr
};

inline Ran Sh(const std::string& command) {
  Ran r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline bool Have(const std::string& tool) { return Sh("command -v " + tool).code == 0; }

// A fresh directory for one test, removed by the caller's ScratchDir going out of scope.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / fmt::format("gpuforge-{}-{}", name, getpid())) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p;
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Debian's python3, which has python3-junitparser (a pyenv shim first on PATH may not).
inline constexpr const char* kPython = "/usr/bin/python3";

// Every test case as junitparser reads it, one line each: "SUITE | NAME | RESULT | MESSAGE"
// (RESULT "pass", "failure", "error" or "skipped"), then a CI-style summary line per suite
// and the totals, the way a CI test report tallies them.
inline Ran JunitparserView(const std::string& file) {
  const std::string script =
      "import sys\n"
      "from junitparser import JUnitXml, Failure, Error, Skipped\n"
      "xml = JUnitXml.fromfile(sys.argv[1])\n"
      "t = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}\n"
      "for suite in xml:\n"
      "    for case in suite:\n"
      "        kind, msg = 'pass', ''\n"
      "        for r in case.result:\n"
      "            kind = {Failure: 'failure', Error: 'error', Skipped: 'skipped'}[type(r)]\n"
      "            msg = r.message or ''\n"
      "        print(f'{suite.name} | {case.name} | {kind} | {msg}')\n"
      "    print(f'== {suite.name}: {suite.tests} tests, {suite.failures} failures, {suite.errors} errors, "
      "{suite.skipped} skipped')\n"
      "    for k in t: t[k] += getattr(suite, k)\n"
      "print(f\"total: {t['tests']} tests, {t['failures']} failures, {t['errors']} errors, {t['skipped']} skipped\")\n";
  const std::string py = file + ".view.py";
  std::ofstream(py, std::ios::trunc) << script;
  return Sh(fmt::format("{} '{}' '{}'", kPython, py, file));
}

}  // namespace gpuforge::testing
