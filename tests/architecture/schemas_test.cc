// One list of the JSON schemas (include/gpuforge/base/schemas.h): a schema string written
// anywhere else in src/ or include/ would be a document `gpuforge version` does not list.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "gpuforge/base/schemas.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

TEST(SchemaCatalogue, NoSchemaStringOutsideTheCatalogue) {
  const std::regex kLiteral("\"gpuforge\\.[a-z-]+/v[0-9]+\"");
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const char* top : {"src", "include"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(GPUFORGE_SOURCE_DIR) / top)) {
      if (!e.is_regular_file()) continue;
      const std::string rel = fs::relative(e.path(), GPUFORGE_SOURCE_DIR).string();
      if (rel == "include/gpuforge/base/schemas.h") continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        // A comment may show a document's shape; code may not spell the name.
        const std::string code = line.substr(0, line.find("//"));
        if (std::regex_search(code, kLiteral)) found.push_back(fmt::format("{}:{}: {}", rel, n, line));
      }
    }
  }
  EXPECT_GT(files, 100u);
  EXPECT_TRUE(found.empty()) << "use the constant from gpuforge/base/schemas.h:\n" << fmt::format("{}", fmt::join(found, "\n"));
}

TEST(SchemaCatalogue, EveryConstantIsListed) {
  // The header's constants, read from the header itself, against All().
  std::ifstream in(fs::path(GPUFORGE_SOURCE_DIR) / "include/gpuforge/base/schemas.h");
  const std::regex kConst("inline constexpr std::string_view k[A-Za-z]+ = \"(gpuforge\\.[a-z-]+/v[0-9]+)\";");
  std::size_t constants = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, kConst)) continue;
    ++constants;
    bool listed = false;
    for (const schemas::Schema& s : schemas::All()) listed |= s.id == m[1].str();
    EXPECT_TRUE(listed) << m[1];
  }
  EXPECT_EQ(constants, schemas::All().size());
}

}  // namespace
}  // namespace gpuforge
