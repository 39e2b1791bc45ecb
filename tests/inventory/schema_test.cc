// The schema table is the one list of keys: the loader checks maps against it, and
// docs/inventory.md must document every key of every object in it (and nothing else).

#include "gpuforge/inventory/schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpuforge::inventory::schema {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Section {
  std::string heading;
  std::vector<std::string> lines;
};

// The doc's sections: a heading line and the lines up to the next heading, code blocks skipped
// when looking for headings (YAML comments start with '#' too).
std::vector<Section> Sections(const std::string& doc) {
  std::vector<Section> out;
  std::istringstream in(doc);
  std::string line;
  bool code = false;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) code = !code;
    if (!code && line.starts_with("#")) {
      out.push_back({line, {}});
    } else if (!out.empty()) {
      out.back().lines.push_back(line);
    }
  }
  return out;
}

// The keys a section's tables document: rows that start with "| `key` |".
std::set<std::string> DocumentedKeys(const Section& s) {
  static const std::regex kRow(R"(^\| `([a-z_]+)` \|)");
  std::set<std::string> keys;
  for (const std::string& line : s.lines) {
    std::smatch m;
    if (std::regex_search(line, m, kRow)) keys.insert(m[1]);
  }
  return keys;
}

TEST(InventorySchema, TableIsWellFormed) {
  std::set<std::string_view> paths;
  for (const Object& o : kObjects) {
    EXPECT_TRUE(paths.insert(o.path).second) << "object listed twice: " << o.path;
    std::set<std::string_view> keys(o.keys.begin(), o.keys.end());
    EXPECT_EQ(keys.size(), o.keys.size()) << "a key listed twice in " << o.path;
    EXPECT_FALSE(o.keys.empty()) << o.path;
  }
}

TEST(InventorySchema, DocsDocumentEveryKeyOfEveryObject) {
  const std::vector<Section> sections = Sections(Read(std::string(GPUFORGE_SOURCE_DIR) + "/docs/inventory.md"));
  for (const Object& o : kObjects) {
    SCOPED_TRACE(std::string(o.path));
    const std::string title = "`" + std::string(o.path) + "`";
    const Section* found = nullptr;
    for (const Section& s : sections) {
      if (s.heading.starts_with("### ") && s.heading.find(title) != std::string::npos) {
        EXPECT_EQ(found, nullptr) << "two sections for " << o.path;
        found = &s;
      }
    }
    ASSERT_NE(found, nullptr) << "docs/inventory.md has no '### " << title << "' section";
    const std::set<std::string> documented = DocumentedKeys(*found);
    for (std::string_view key : o.keys) {
      EXPECT_TRUE(documented.count(std::string(key)))
          << "docs/inventory.md, section " << title << ", has no row '| `" << key << "` |'";
    }
    // And no documented key the loader would refuse.
    for (const std::string& key : documented) {
      EXPECT_NE(std::find(o.keys.begin(), o.keys.end(), key), o.keys.end())
          << "docs/inventory.md documents '" << key << "' in " << title << ", which the loader does not accept";
    }
  }
}

TEST(InventorySchema, LoaderTakesItsKeysFromTheTable) {
  // A key list written inline in a CheckMap call would bypass this table and the docs test.
  // The loader's sections: loader.cc and its load_*.cc files.
  std::string loader;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GPUFORGE_SOURCE_DIR) + "/src/inventory")) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("load") && name.ends_with(".cc")) loader += Read(entry.path().string());
  }
  std::size_t calls = 0;
  for (std::size_t at = loader.find("CheckMap("); at != std::string::npos; at = loader.find("CheckMap(", at + 1)) {
    std::size_t end = at + 9;
    for (int depth = 1; end < loader.size() && depth > 0; ++end) {
      if (loader[end] == '(') ++depth;
      if (loader[end] == ')') --depth;
    }
    const std::string args = loader.substr(at, end - at);
    EXPECT_NE(args.find("schema::k"), std::string::npos) << "a CheckMap call without a schema table: " << args;
    EXPECT_EQ(args.find("{\""), std::string::npos) << "a CheckMap call with an inline key list: " << args;
    ++calls;
  }
  EXPECT_GE(calls, std::size(kObjects) - 1);  // `ssh` is one object checked from one place
}

}  // namespace
}  // namespace gpuforge::inventory::schema
