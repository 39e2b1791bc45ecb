// The include graph read from the tree as it is when the test runs: every
// `#include "gpuforge/<stage>/..."` and `#include "<stage>/..."` under src/ and include/gpuforge/
// must point at the same stage or an earlier one in the order of docs/architecture.md. A
// violation names file:line and the edge; so does a directory that is not a stage of the order.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

// docs/architecture.md, "Layering": a stage may include itself and the stages before it.
constexpr std::array<std::string_view, 14> kStages = {
    "base",   "model", "inventory", "lint",  "estimate", "render", "plan",
    "remote", "facts", "probe",     "apply", "validate", "report", "cli"};

std::optional<std::size_t> Rank(std::string_view stage) {
  auto it = std::find(kStages.begin(), kStages.end(), stage);
  if (it == kStages.end()) return std::nullopt;
  return static_cast<std::size_t>(it - kStages.begin());
}

struct Include {
  std::string file;  // relative to the source tree
  int line = 0;
  std::string from;  // stage of the including file
  std::string to;    // stage named by the include
  std::string text;  // the include as written
};

struct Graph {
  std::vector<Include> includes;      // between stages, and within one
  std::vector<std::string> problems;  // files outside any stage, includes of unknown stages
  std::size_t files = 0;
};

bool IsSource(const fs::path& p) {
  static constexpr std::array<std::string_view, 5> kExt = {".h", ".cc", ".cu", ".hpp", ".inc"};
  return std::find(kExt.begin(), kExt.end(), p.extension().string()) != kExt.end();
}

// The stage `path` names: "gpuforge/<stage>/..." always, "<stage>/..." when <stage> is one
// (a quoted include of a private header under src/); nothing for other libraries' headers.
std::optional<std::string> StageOf(std::string_view path, bool* unknown) {
  const bool ours = path.starts_with("gpuforge/");
  if (ours) path.remove_prefix(std::string_view("gpuforge/").size());
  const std::size_t slash = path.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string first(path.substr(0, slash));
  if (Rank(first)) return first;
  *unknown = ours;
  return std::nullopt;
}

// The path of an `#include` line and whether it was written with <>; nothing for other lines.
std::optional<std::pair<std::string, bool>> IncludeOf(std::string_view line) {
  auto skip = [&line] { line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size())); };
  skip();
  if (!line.starts_with('#')) return std::nullopt;
  line.remove_prefix(1);
  skip();
  if (!line.starts_with("include")) return std::nullopt;
  line.remove_prefix(std::string_view("include").size());
  skip();
  if (line.empty() || (line[0] != '"' && line[0] != '<')) return std::nullopt;
  const bool angled = line[0] == '<';
  const std::size_t end = line.find(angled ? '>' : '"', 1);
  if (end == std::string_view::npos) return std::nullopt;
  return std::pair{std::string(line.substr(1, end - 1)), angled};
}

void ReadFile(const fs::path& root, const fs::path& file, const std::string& stage, Graph* g) {
  const std::string rel = fs::relative(file, root).string();
  std::ifstream in(file);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    std::optional<std::pair<std::string, bool>> inc = IncludeOf(text);
    if (!inc) continue;
    const auto& [path, angled] = *inc;
    bool unknown = false;
    std::optional<std::string> to = StageOf(path, &unknown);
    if (unknown) {
      g->problems.push_back(fmt::format("{}:{}: {} names no stage of the order", rel, line, path));
    }
    // A relative "<stage>/..." include is ours only when quoted: <probe/...> is a system one.
    if (!to || (angled && !path.starts_with("gpuforge/"))) continue;
    g->includes.push_back({rel, line, stage, *to, path});
  }
  ++g->files;
}

Graph ReadTree(const fs::path& root) {
  Graph g;
  for (const fs::path& top : {root / "src", root / "include" / "gpuforge"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(top)) {
      if (!e.is_regular_file() || !IsSource(e.path())) continue;
      const fs::path rel = fs::relative(e.path(), top);
      const std::string stage = rel.begin()->string();
      if (rel.begin() == std::prev(rel.end()) || !Rank(stage)) {
        g.problems.push_back(
            fmt::format("{}: not in a stage directory of the order (docs/architecture.md)",
                        fs::relative(e.path(), root).string()));
        continue;
      }
      ReadFile(root, e.path(), stage, &g);
    }
  }
  return g;
}

TEST(Layering, NoStageIncludesALaterOne) {
  const Graph g = ReadTree(GPUFORGE_SOURCE_DIR);
  // A wrong source directory would find nothing and pass.
  ASSERT_GT(g.files, 100u) << GPUFORGE_SOURCE_DIR;
  ASSERT_GT(g.includes.size(), 100u);
  std::vector<Include> includes = g.includes;
  // Directory order is the file system's; the report is in path order, so two runs read alike.
  std::sort(includes.begin(), includes.end(), [](const Include& a, const Include& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  std::string back;
  for (const Include& i : includes) {
    if (*Rank(i.to) <= *Rank(i.from)) continue;
    back += fmt::format(
        "{}:{}: {} -> {} (#include \"{}\"): {} comes before {} and may not include it\n", i.file,
        i.line, i.from, i.to, i.text, i.from, i.to);
  }
  EXPECT_TRUE(back.empty())
      << "back-edges in the include graph (order: docs/architecture.md, Layering):\n"
      << back;
  std::vector<std::string> problems = g.problems;
  std::sort(problems.begin(), problems.end());
  std::string text;
  for (const std::string& p : problems) text += p + "\n";
  EXPECT_TRUE(text.empty()) << text;
}

// The order in this test and the one the document states are the same list.
TEST(Layering, TheDocumentStatesTheSameOrder) {
  std::ifstream in(fs::path(GPUFORGE_SOURCE_DIR) / "docs" / "architecture.md");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string order;
  for (std::string_view s : kStages) order += (order.empty() ? "" : " -> ") + std::string(s);
  EXPECT_NE(text.find(order), std::string::npos)
      << "docs/architecture.md does not state the order " << order;
}

}  // namespace
}  // namespace gpuforge
