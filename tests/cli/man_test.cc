// The manual pages (`gpuforge __man`, cli/completion.h): one per command, every flag `--help`
// lists, and pages that groff and man-db's lexgrog read without a warning.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli/app.h"
#include "cli/run_cli.h"

namespace gpuforge::cli {
namespace {

namespace fs = std::filesystem;
using test_support::RunCli;
using test_support::RunResult;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Sh(const std::string& cmd, int* rc) {
  std::string out;
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int st = ::pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

fs::path WritePages() {
  const fs::path dir = fs::temp_directory_path() / "gpuforge-man-test";
  fs::remove_all(dir);
  RunResult r = RunCli({"__man", dir.string(), "2026-12-05"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  return dir;
}

// The long flags a --help text lists.
std::set<std::string> FlagsIn(const std::string& help) {
  std::set<std::string> out;
  static const std::regex kFlag("(^|[ ,])(--[a-z][a-z0-9-]*)");
  for (std::sregex_iterator it(help.begin(), help.end(), kFlag), end; it != end; ++it) out.insert((*it)[2]);
  return out;
}

std::string Roffed(const std::string& flag) {
  std::string out;
  for (char c : flag) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

TEST(ManPages, OnePerCommandWithEveryFlagOfItsHelp) {
  const fs::path dir = WritePages();
  ASSERT_TRUE(fs::exists(dir / "gpuforge.1"));
  const std::string top = ReadAll(dir / "gpuforge.1");
  for (const std::string& f : FlagsIn(RunCli({"--help"}).out)) EXPECT_NE(top.find(Roffed(f)), std::string::npos) << f;
  std::size_t pages = 0;
  for (const Command& c : Commands()) {
    const fs::path page = dir / fmt::format("gpuforge-{}.1", c.name);
    ASSERT_TRUE(fs::exists(page)) << page;
    ++pages;
    const std::string text = ReadAll(page);
    EXPECT_NE(top.find(fmt::format("gpuforge\\-{}", c.name)), std::string::npos) << "gpuforge(1) lists " << c.name;
    EXPECT_NE(text.find(fmt::format(".TH GPUFORGE\\-{} 1 \"2026\\-12\\-05\"", [&] {
                std::string u(c.name);
                for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                return u;
              }())),
              std::string::npos)
        << text.substr(0, 300);
    // The help of the command, and of each of its subcommands, flag for flag.
    std::vector<std::vector<std::string>> helps = {{std::string(c.name), "--help"}};
    if (c.name == "hostlist") helps = {{"hostlist", "expand", "--help"}, {"hostlist", "fold", "--help"}};
    if (c.name == "inventory") helps = {{"inventory", "show", "--help"}};
    if (c.name == "thresholds") helps = {{"thresholds", "show", "--help"}};
    for (const auto& args : helps) {
      RunResult help = RunCli(args);
      ASSERT_EQ(help.code, kExitOk) << help.err;
      const std::set<std::string> flags = FlagsIn(help.out);
      EXPECT_FALSE(flags.empty()) << args[0];
      for (const std::string& f : flags) EXPECT_NE(text.find(Roffed(f)), std::string::npos) << page << " lacks " << f;
    }
  }
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, pages + 1);
}

TEST(ManPages, GroffAndLexgrogReadThemWithoutAWarning) {
  int rc = 0;
  if (Sh("command -v groff && command -v lexgrog", &rc), rc != 0) {
    GTEST_SKIP() << "groff or lexgrog is missing (scripts/deps.sh --test installs groff-base and man-db)";
  }
  const fs::path dir = WritePages();
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string page = e.path().string();
    // -ww: every warning; -z: no output but the warnings. lintian runs the same check.
    const std::string warnings = Sh(fmt::format("groff -man -Tutf8 -ww -z '{}'", page), &rc);
    EXPECT_EQ(rc, 0) << page;
    EXPECT_EQ(warnings, "") << page;
    // whatis/apropos read the NAME line through lexgrog ("gpuforge-lint - ...").
    const std::string whatis = Sh(fmt::format("lexgrog '{}'", page), &rc);
    EXPECT_EQ(rc, 0) << page << ": " << whatis;
    EXPECT_NE(whatis.find(": \"gpuforge"), std::string::npos) << whatis;
  }
  // Rendered as a person reads it: the NAME and a flag's description.
  const std::string lint = Sh(fmt::format("MANWIDTH=100 man -l '{}' | col -b", (dir / "gpuforge-lint.1").string()), &rc);
  EXPECT_EQ(rc, 0) << lint;
  EXPECT_NE(lint.find("gpuforge-lint - "), std::string::npos) << lint;
  EXPECT_NE(lint.find("--format FORMAT"), std::string::npos) << lint;
}

TEST(ManPages, AHiddenHelperIsNotACommandAndBadArgumentsAreUsageErrors) {
  RunResult help = RunCli({"--help"});
  EXPECT_EQ(help.out.find("__man"), std::string::npos);
  EXPECT_EQ(help.out.find("__complete"), std::string::npos);
  RunResult r = RunCli({"__man"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("usage: gpuforge __man DIR DATE"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuforge::cli
