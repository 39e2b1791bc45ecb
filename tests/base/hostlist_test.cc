#include "gpuforge/base/hostlist.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpuforge::hostlist {
namespace {

using Names = std::vector<std::string>;

Names MustExpand(std::string_view expr, std::size_t limit = kMaxExpansion) {
  auto names = Expand(expr, limit);
  EXPECT_TRUE(names.ok()) << expr << ": " << (names.ok() ? "" : names.error().message);
  return names.ok() ? *names : Names{};
}

std::string ExpandError(std::string_view expr, std::size_t limit = kMaxExpansion) {
  auto names = Expand(expr, limit);
  EXPECT_FALSE(names.ok()) << expr << " expanded to " << names->size() << " names";
  return names.ok() ? std::string() : names.error().message;
}

// ---- Expand: syntax ----

TEST(HostlistExpand, PlainNames) {
  EXPECT_EQ(MustExpand("gpu1"), (Names{"gpu1"}));
  EXPECT_EQ(MustExpand("a,b,c"), (Names{"a", "b", "c"}));
  EXPECT_EQ(MustExpand("login"), (Names{"login"}));
}

TEST(HostlistExpand, RangesAndSingleNumbers) {
  EXPECT_EQ(MustExpand("tux[1-3]"), (Names{"tux1", "tux2", "tux3"}));
  EXPECT_EQ(MustExpand("tux[7]"), (Names{"tux7"}));
  EXPECT_EQ(MustExpand("tux[0-2,5,9-10]"),
            (Names{"tux0", "tux1", "tux2", "tux5", "tux9", "tux10"}));
  EXPECT_EQ(MustExpand("tux[4-4]"), (Names{"tux4"}));
}

TEST(HostlistExpand, CommasInsideBracketsBelongToTheBracket) {
  EXPECT_EQ(MustExpand("a[1,3],b,c[2]"), (Names{"a1", "a3", "b", "c2"}));
}

TEST(HostlistExpand, ZeroPaddingFollowsTheLowerBound) {
  EXPECT_EQ(MustExpand("gpu[001-003]"), (Names{"gpu001", "gpu002", "gpu003"}));
  EXPECT_EQ(MustExpand("gpu[008-010]"), (Names{"gpu008", "gpu009", "gpu010"}));
  EXPECT_EQ(MustExpand("gpu[8-10]"), (Names{"gpu8", "gpu9", "gpu10"}));
  EXPECT_EQ(MustExpand("gpu[098-101]"), (Names{"gpu098", "gpu099", "gpu100", "gpu101"}));
  // Slurm's rule, where ClusterShell refuses: the lower bound as written sets the width.
  EXPECT_EQ(MustExpand("n[001-10]").back(), "n010");
  EXPECT_EQ(MustExpand("n[1-010]").front(), "n1");
  EXPECT_EQ(MustExpand("n[01-1]"), (Names{"n01"}));
  EXPECT_EQ(MustExpand("n[0]"), (Names{"n0"}));
  EXPECT_EQ(MustExpand("n[00]"), (Names{"n00"}));
  EXPECT_EQ(MustExpand("n[007,9,010-011]"), (Names{"n007", "n9", "n010", "n011"}));
}

TEST(HostlistExpand, SeveralGroupsAreACartesianProductLeftmostSlowest) {
  EXPECT_EQ(MustExpand("rack[1-2]-node[01-02]"),
            (Names{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}));
  EXPECT_EQ(MustExpand("a[1-2]b[3-4]c"), (Names{"a1b3c", "a1b4c", "a2b3c", "a2b4c"}));
  EXPECT_EQ(MustExpand("a[1-2][3-4]"), (Names{"a13", "a14", "a23", "a24"}));
  EXPECT_EQ(MustExpand("s[1-2]p[1-2]x[5]").size(), 4u);
}

TEST(HostlistExpand, TextAroundGroups) {
  EXPECT_EQ(MustExpand("[1-3]"), (Names{"1", "2", "3"}));
  EXPECT_EQ(MustExpand("[1-2]a"), (Names{"1a", "2a"}));
  EXPECT_EQ(MustExpand("n[1-2]-ib"), (Names{"n1-ib", "n2-ib"}));
}

TEST(HostlistExpand, Addresses) {
  EXPECT_EQ(MustExpand("10.0.0.[11-14]"),
            (Names{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"}));
  EXPECT_EQ(MustExpand("10.0.[1-2].[3-4]"),
            (Names{"10.0.1.3", "10.0.1.4", "10.0.2.3", "10.0.2.4"}));
}

TEST(HostlistExpand, OrderAndDuplicatesKeptAsWritten) {
  EXPECT_EQ(MustExpand("b1,a[3,1,1]"), (Names{"b1", "a3", "a1", "a1"}));
  EXPECT_EQ(MustExpand("x[1-2],x1"), (Names{"x1", "x2", "x1"}));
}

TEST(HostlistExpand, EighteenDigitBounds) {
  EXPECT_EQ(MustExpand("n[999999999999999998-999999999999999999]"),
            (Names{"n999999999999999998", "n999999999999999999"}));
  EXPECT_EQ(MustExpand("n[000000000000000001]"), (Names{"n000000000000000001"}));
  // Digits outside brackets are only text.
  EXPECT_EQ(MustExpand("n12345678901234567890"), (Names{"n12345678901234567890"}));
}

TEST(HostlistExpand, LimitIsInclusive) {
  EXPECT_EQ(MustExpand("n[1-4],m[1-2]", 6).size(), 6u);
  EXPECT_EQ(ExpandError("n[1-4],m[1-3]", 6),
            "hostlist \"n[1-4],m[1-3]\": expansion exceeds the limit of 6 "
            "names at column 7");
  EXPECT_EQ(ExpandError("a", 0),
            "hostlist \"a\": expansion exceeds the limit of 0 names at column 0");
}

// Speed is measured in bench/, never asserted here; these pin the results at scale.
TEST(HostlistExpand, LargeExpansion) {
  Names names = MustExpand("gpu[00001-32768]");
  ASSERT_EQ(names.size(), 32768u);
  EXPECT_EQ(names.front(), "gpu00001");
  EXPECT_EQ(names.back(), "gpu32768");
  EXPECT_EQ(MustExpand("n[1-1024]x[1-1024]").size(), kMaxExpansion);
}

// #28 item 16: names count bytes too. A 1,000-character prefix times [0-999999] stayed under
// the name limit, asked for gigabytes and died of bad_alloc (exit 134).
TEST(HostlistExpand, LongNamesAndManyBytesAreRefusedBeforeBuilding) {
  const std::string long_prefix(1000, 'a');
  const std::string err = ExpandError(long_prefix + "[0-999999]");
  EXPECT_EQ(err, "hostlist \"" + std::string(117, 'a') +
                     "...\": names would be 1006 characters long, over the limit of 255 at column 0");
  // 200 characters is a legal name, but a million of them is 201 MB.
  EXPECT_EQ(ExpandError(std::string(200, 'b') + "[0-999999]"),
            "hostlist \"" + std::string(117, 'b') + "...\": expansion exceeds the limit of 64 MiB of names at column 0");
  // The longest legal name, once, is fine.
  EXPECT_EQ(MustExpand(std::string(250, 'c') + "[1-9]").size(), 9u);
  EXPECT_EQ(MustExpand(std::string(250, 'c') + "[1-10000]").size(), 10000u);  // 255 characters: the limit
  EXPECT_EQ(ExpandError(std::string(251, 'c') + "[1-10000]"),
            "hostlist \"" + std::string(117, 'c') + "...\": names would be 256 characters long, over the limit of 255 "
            "at column 0");
}

TEST(HostlistExpand, HugeExpansionsAreRefusedBeforeBuilding) {
  EXPECT_EQ(ExpandError("gpu[1-999999999999999999]"),
            "hostlist \"gpu[1-999999999999999999]\": expansion exceeds the "
            "limit of 1048576 "
            "names at column 0");
  // The product of these groups wraps around 2^64 several times over.
  EXPECT_EQ(ExpandError("a[0-999999999999999999]b[0-999999999999999999]c[0-"
                        "999999999999999999]"
                        "d[0-999999999999999999]"),
            "hostlist "
            "\"a[0-999999999999999999]b[0-999999999999999999]c[0-999999999999999999]"
            "d[0-999999999999999999]\": expansion exceeds the limit of 1048576 names "
            "at column 0");
  // So does this sum of ranges inside one group.
  std::string many = "n[";
  for (int i = 0; i < 40; ++i) many += "0-999999999999999999,";
  many += "1]";
  EXPECT_NE(ExpandError(many).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(ExpandError("n[1-1024]x[1-1025]").find("exceeds the limit"), std::string::npos);
}

// ---- Expand: errors ----

struct ErrorCase {
  const char* expr;
  const char* message;
};

TEST(HostlistExpandError, MessagesNameWhatAndWhere) {
  const ErrorCase cases[] = {
      {"", "hostlist \"\": empty expression at column 0"},
      {"gpu[1-2", "hostlist \"gpu[1-2\": unclosed '[' at column 3"},
      {"a,gpu[1-2],b[3", "hostlist \"a,gpu[1-2],b[3\": unclosed '[' at column 12"},
      {"gpu1-2]", "hostlist \"gpu1-2]\": unmatched ']' at column 6"},
      {"gpu[1-2]]", "hostlist \"gpu[1-2]]\": unmatched ']' at column 8"},
      {"gpu[[1-2]]", "hostlist \"gpu[[1-2]]\": nested '[' at column 4"},
      {"gpu[1-[2]]", "hostlist \"gpu[1-[2]]\": nested '[' at column 6"},
      {"gpu[]", "hostlist \"gpu[]\": empty brackets \"[]\" at column 3"},
      {"a,,b", "hostlist \"a,,b\": empty name at column 2"},
      {",a", "hostlist \",a\": empty name at column 0"},
      {"a,", "hostlist \"a,\": empty name at column 2"},
      {",", "hostlist \",\": empty name at column 0"},
      {"gpu[1,,2]", "hostlist \"gpu[1,,2]\": empty range at column 6"},
      {"gpu[,1]", "hostlist \"gpu[,1]\": empty range at column 4"},
      {"gpu[1,]", "hostlist \"gpu[1,]\": empty range at column 6"},
      {"gpu[5-1]", "hostlist \"gpu[5-1]\": reversed range \"5-1\" at column 4"},
      {"gpu[1,10-2]", "hostlist \"gpu[1,10-2]\": reversed range \"10-2\" at column 6"},
      {"gpu[a-c]", "hostlist \"gpu[a-c]\": bound \"a\" is not a number at column 4"},
      {"gpu[1-c]", "hostlist \"gpu[1-c]\": bound \"c\" is not a number at column 6"},
      {"gpu[1-2-3]", "hostlist \"gpu[1-2-3]\": bound \"2-3\" is not a number at column 6"},
      {"gpu[+1]", "hostlist \"gpu[+1]\": bound \"+1\" is not a number at column 4"},
      {"gpu[0x10]", "hostlist \"gpu[0x10]\": bound \"0x10\" is not a number at column 4"},
      {"gpu[-1]", "hostlist \"gpu[-1]\": range \"-1\" has no lower bound at column 4"},
      {"gpu[1-]", "hostlist \"gpu[1-]\": range \"1-\" has no upper bound at column 4"},
      {"gpu[1234567890123456789]",
       "hostlist \"gpu[1234567890123456789]\": bound \"1234567890123456789\" "
       "has more than 18 "
       "digits at column 4"},
      {"gpu[1-0000000000000000002]",
       "hostlist \"gpu[1-0000000000000000002]\": bound \"0000000000000000002\" "
       "has more than 18 "
       "digits at column 6"},
      {"gpu[1-2], gpu3", "hostlist \"gpu[1-2], gpu3\": unexpected whitespace at column 9"},
      {"gpu[1 -2]", "hostlist \"gpu[1 -2]\": unexpected whitespace at column 5"},
      {"gpu[1-2000000]",
       "hostlist \"gpu[1-2000000]\": expansion exceeds the limit of 1048576 "
       "names at column 0"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_EQ(ExpandError(c.expr), c.message) << c.expr;
  }
}

TEST(HostlistExpandError, FirstErrorFromTheLeftWins) {
  EXPECT_EQ(ExpandError("a[5-1],b[]"),
            "hostlist \"a[5-1],b[]\": reversed range \"5-1\" at column 2");
  // Structure is checked over the whole expression before any group is read.
  EXPECT_EQ(ExpandError("a[5-1],b[1"), "hostlist \"a[5-1],b[1\": unclosed '[' at column 8");
}

// ---- Fold ----

TEST(HostlistFold, Basics) {
  EXPECT_EQ(Fold({}), "");
  EXPECT_EQ(Fold({"gpu1"}), "gpu1");
  EXPECT_EQ(Fold({"gpu1", "gpu2", "gpu3", "gpu5"}), "gpu[1-3,5]");
  EXPECT_EQ(Fold({"gpu1", "gpu2"}), "gpu[1-2]");
  EXPECT_EQ(Fold({"gpu1", "gpu3"}), "gpu[1,3]");
  EXPECT_EQ(Fold({"gpu8", "gpu9", "gpu10"}), "gpu[8-10]");
  EXPECT_EQ(Fold({"gpu0", "gpu1"}), "gpu[0-1]");
}

TEST(HostlistFold, OrderDoesNotMatterAndDuplicatesGo) {
  EXPECT_EQ(Fold({"gpu3", "gpu1", "gpu2", "gpu2", "gpu1"}), "gpu[1-3]");
  EXPECT_EQ(Fold({"b1", "a2", "a1"}), "a[1-2],b1");
  EXPECT_EQ(Fold({"login", "gpu2", "login", "gpu1"}), "gpu[1-2],login");
}

TEST(HostlistFold, PaddingIsKept) {
  EXPECT_EQ(Fold({"gpu001", "gpu002", "gpu003", "gpu004", "gpu007"}), "gpu[001-004,007]");
  EXPECT_EQ(Fold({"gpu00", "gpu01"}), "gpu[00-01]");
  EXPECT_EQ(Fold(MustExpand("gpu[001-128]")), "gpu[001-128]");
  EXPECT_EQ(Fold({"gpu099", "gpu100"}), "gpu[099-100]");
  EXPECT_EQ(Fold({"gpu100", "gpu101"}), "gpu[100-101]");
}

TEST(HostlistFold, DifferentPaddingNeverMerges) {
  EXPECT_EQ(Fold({"gpu01", "gpu1"}), "gpu1,gpu01");
  EXPECT_EQ(Fold({"gpu1", "gpu01", "gpu001", "gpu2", "gpu02"}), "gpu[1-2],gpu[01-02],gpu001");
  EXPECT_EQ(Fold({"gpu001", "gpu1000"}), "gpu001,gpu1000");
  EXPECT_EQ(Fold({"gpu0998", "gpu1000", "gpu999"}), "gpu[0998,1000],gpu999");
  // 0999 is padded to 4 digits and 1000 has exactly 4, so they may share a group.
  EXPECT_EQ(Fold({"gpu0999", "gpu1000"}), "gpu[0999-1000]");
  // With no padded 3-digit name around, 100 stays with the other unpadded numbers.
  EXPECT_EQ(Fold({"gpu99", "gpu100", "gpu0001"}), "gpu0001,gpu[99-100]");
}

TEST(HostlistFold, OnlyTheLastNumberFolds) {
  EXPECT_EQ(Fold({"rack1-node01", "rack1-node02", "rack2-node01"}),
            "rack1-node[01-02],rack2-node01");
  EXPECT_EQ(Fold({"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.1"}), "10.0.0.[1-3],10.0.1.1");
  EXPECT_EQ(Fold({"1", "2", "3"}), "[1-3]");
}

TEST(HostlistFold, SuffixesMustMatch) {
  EXPECT_EQ(Fold({"n1-ib", "n2-ib", "n3"}), "n[1-2]-ib,n3");
  EXPECT_EQ(Fold({"n1x", "n2x", "n3y"}), "n[1-2]x,n3y");
}

TEST(HostlistFold, NamesWithoutFoldableNumbersStayAsTheyAre) {
  EXPECT_EQ(Fold({"login", "head-a", "a", "a1", "a2", "b"}), "a,a[1-2],b,head-a,login");
  EXPECT_EQ(Fold({"n12345678901234567890", "n1"}), "n1,n12345678901234567890");
  EXPECT_EQ(Fold({"", "a1", ""}), "a1");
}

TEST(HostlistFold, LargeFold) {
  Names names = MustExpand("gpu[00001-32768]");
  std::mt19937 rng(7);
  std::shuffle(names.begin(), names.end(), rng);
  std::string folded = Fold(names);
  EXPECT_EQ(folded, "gpu[00001-32768]");

  Names odd;
  for (int i = 1; i <= 65536; i += 2) odd.push_back(fmt::format("n{}", i));
  folded = Fold(odd);
  EXPECT_EQ(MustExpand(folded).size(), odd.size());
}

// ---- Round trip ----

Names RandomNames(std::mt19937& rng) {
  static const char* const kPrefixes[] = {"gpu", "node-", "rack1-n", "10.0.0.", "", "a.b"};
  static const char* const kSuffixes[] = {"", "", "", "-ib", "x"};
  static const char* const kLiterals[] = {"login", "head-a", "gpu", "x"};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  Names names;
  int count = 1 + pick(60);
  for (int i = 0; i < count; ++i) {
    if (pick(20) == 0) {
      names.push_back(kLiterals[pick(4)]);
      continue;
    }
    std::uint64_t value =
        pick(10) == 0 ? std::uniform_int_distribution<std::uint64_t>(0, 999999999999999999ull)(rng)
                      : static_cast<std::uint64_t>(pick(1100));
    static const int kWidths[] = {0, 0, 2, 3, 4};
    names.push_back(
        fmt::format("{}{:0{}}{}", kPrefixes[pick(6)], value, kWidths[pick(5)], kSuffixes[pick(5)]));
  }
  return names;
}

TEST(HostlistRoundTrip, FoldThenExpandGivesTheSameSet) {
  std::mt19937 rng(20240601);
  for (int round = 0; round < 500; ++round) {
    Names names = RandomNames(rng);
    std::string folded = Fold(names);
    Names expanded = MustExpand(folded);
    std::set<std::string> want(names.begin(), names.end());
    std::set<std::string> got(expanded.begin(), expanded.end());
    ASSERT_EQ(got, want) << "folded: " << folded;
    EXPECT_EQ(expanded.size(), got.size()) << "duplicates in " << folded;
    EXPECT_EQ(Fold(expanded), folded);
    std::shuffle(names.begin(), names.end(), rng);
    EXPECT_EQ(Fold(names), folded);
  }
}

// ---- Against the real tools ----

// The full path of `tool` on PATH, if it is there.
std::optional<std::string> FindOnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + tool;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// Runs a shell command; its stdout and stderr, or nullopt if it did not exit with 0.
std::optional<std::string> RunShell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

Names Words(const std::string& text) {
  std::istringstream in(text);
  Names words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Expressions on which scontrol, nodeset and Expand all agree.
const char* const kCommonExpressions[] = {
    "gpu1",
    "gpu[1-4]",
    "gpu[001-004]",
    "gpu[8-10]",
    "gpu[08-10]",
    "gpu[098-101]",
    "gpu[99-101]",
    "tux[0-5,12]",
    "gpu[1,3,5-7]",
    "gpu[0001-0003,0010]",
    "a,b,c",
    "cpu[3-4],gpu[1-2]",
    "a[1-3],b[1-2]",
    "host-a,host-b[1-2]",
    "rack[1-2]-node[01-02]",
    "r[1-2]n[1-3]",
    "dgx-[01-02]-gpu[0-1]",
    "sw[1-2]-port[01-48]",
    "10.0.0.[11-14]",
    "10.0.[1-2].[3-4]",
    "192.168.[0-1].[1,254]",
    "[1-3]",
    "node[007]",
    "node[0]",
    "big[999999999999999998-999999999999999999]",
};

// Where nodeset differs (it sorts and drops duplicates, refuses adjacent groups and mixed padding);
// scontrol and Expand agree.
const char* const kScontrolOnlyExpressions[] = {
    "b1,a1", "gpu[3,1-2,1]", "x[1-2],x1", "a[1-2][3-4]", "a[001-10]", "a[1-010]", "a[01-1]",
};

// Where scontrol (22.05) refuses text after the last group; nodeset and Expand agree.
const char* const kNodesetOnlyExpressions[] = {
    "a[1-2]x", "[1-2]a", "n[1-2]-ib", "a[1-2]b[1-2]-c", "gpu[9-11]x",
};

class HostlistTools : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // scontrol reads slurm.conf even for pure string work like `show hostnames` and gives up
    // without ClusterName and SlurmctldHost; no daemon needs to run.
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     fmt::format("gpuforge_hostlist_test_{}", getpid()));
    std::filesystem::create_directories(*dir_);
    std::ofstream conf(*dir_ / "slurm.conf");
    conf << "ClusterName=gpuforge-test\nSlurmctldHost=localhost\n"
            "NodeName=localhost CPUs=1 State=UNKNOWN\n";
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
    dir_ = nullptr;
  }

  // `scontrol show <what> 'arg'`, as names.
  static std::optional<Names> Scontrol(const std::string& what, const std::string& arg) {
    auto out = RunShell(fmt::format("SLURM_CONF='{}' scontrol show {} '{}'",
                                    (*dir_ / "slurm.conf").string(), what, arg));
    if (!out) return std::nullopt;
    return Words(*out);
  }
  static std::optional<Names> Nodeset(const std::string& flag, const std::string& arg) {
    auto out = RunShell(fmt::format("nodeset {} '{}'", flag, arg));
    if (!out) return std::nullopt;
    return Words(*out);
  }

  static std::filesystem::path* dir_;
};

std::filesystem::path* HostlistTools::dir_ = nullptr;

#define REQUIRE_TOOL(tool)                                                        \
  if (!FindOnPath(tool)) {                                                        \
    GTEST_SKIP() << tool << " is not on PATH; cannot compare with the real tool"; \
  }

TEST_F(HostlistTools, ExpandMatchesScontrol) {
  REQUIRE_TOOL("scontrol");
  std::vector<const char*> exprs(std::begin(kCommonExpressions), std::end(kCommonExpressions));
  exprs.insert(exprs.end(), std::begin(kScontrolOnlyExpressions),
               std::end(kScontrolOnlyExpressions));
  for (const char* expr : exprs) {
    auto want = Scontrol("hostnames", expr);
    ASSERT_TRUE(want) << "scontrol show hostnames " << expr << " failed";
    EXPECT_EQ(MustExpand(expr), *want) << expr;
  }
}

TEST_F(HostlistTools, ExpandMatchesNodeset) {
  REQUIRE_TOOL("nodeset");
  std::vector<const char*> exprs(std::begin(kCommonExpressions), std::end(kCommonExpressions));
  exprs.insert(exprs.end(), std::begin(kNodesetOnlyExpressions), std::end(kNodesetOnlyExpressions));
  for (const char* expr : exprs) {
    auto want = Nodeset("-e", expr);
    ASSERT_TRUE(want) << "nodeset -e " << expr << " failed";
    EXPECT_EQ(MustExpand(expr), *want) << expr;
  }
}

// The documented differences, pinned so that a tool upgrade that changes them is noticed.
TEST_F(HostlistTools, KnownDifferences) {
  REQUIRE_TOOL("scontrol");
  REQUIRE_TOOL("nodeset");
  // nodeset sorts and drops duplicates; scontrol and Expand keep them as written.
  EXPECT_EQ(Nodeset("-e", "b1,a1").value_or(Names{}), (Names{"a1", "b1"}));
  // scontrol accepts empty names; Expand and nodeset refuse them.
  EXPECT_EQ(Scontrol("hostnames", "a,,b").value_or(Names{}), (Names{"a", "b"}));
  EXPECT_FALSE(Nodeset("-e", "a,,b"));
  EXPECT_FALSE(Expand("a,,b").ok());
  // scontrol refuses text after the last group; it says so on stderr and still exits 0.
  EXPECT_EQ(Scontrol("hostnames", "a[1-2]x").value_or(Names{}),
            (Names{"Invalid", "hostlist:", "a[1-2]x"}));
  // nodeset refuses padding that differs between the bounds of a range.
  EXPECT_FALSE(Nodeset("-e", "a[001-10]"));
  // Both merge differently padded numbers into one group; Fold keeps them apart.
  EXPECT_EQ(Nodeset("-f", "gpu01,gpu1").value_or(Names{}), (Names{"gpu[1,01]"}));
  EXPECT_EQ(Scontrol("hostlist", "gpu01,gpu1").value_or(Names{}), (Names{"gpu[01,1]"}));
  EXPECT_EQ(Fold({"gpu01", "gpu1"}), "gpu1,gpu01");
}

// One-dimensional name sets, sorted and without duplicates (scontrol keeps input order), on which
// the folds agree.
const Names kFoldCases[] = {
    {"gpu1"},
    {"gpu1", "gpu2", "gpu3", "gpu5"},
    {"gpu001", "gpu002", "gpu003", "gpu004", "gpu007"},
    {"gpu8", "gpu9", "gpu10"},
    {"gpu098", "gpu099", "gpu100", "gpu101"},
    {"gpu0", "gpu1", "gpu2"},
    {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.7"},
    {"a", "a1", "a2", "b"},
    {"a1", "a2", "b1"},
    {"1", "2", "3"},
    {"node-01", "node-03", "node-04", "node-05"},
};

TEST_F(HostlistTools, FoldMatchesNodeset) {
  REQUIRE_TOOL("nodeset");
  std::vector<Names> cases(std::begin(kFoldCases), std::end(kFoldCases));
  cases.push_back(MustExpand("gpu[00001-00100,00200]"));
  // nodeset also sorts, drops duplicates and folds suffixed names.
  cases.push_back({"gpu3", "gpu1", "gpu2", "gpu2"});
  cases.push_back({"n1x", "n2x", "n3x", "n5x"});
  for (const Names& names : cases) {
    auto want = Nodeset("-f", fmt::format("{}", fmt::join(names, ",")));
    ASSERT_TRUE(want) << "nodeset -f " << fmt::format("{}", fmt::join(names, ",")) << " failed";
    ASSERT_EQ(want->size(), 1u);
    EXPECT_EQ(Fold(names), want->front()) << fmt::format("{}", fmt::join(names, ","));
  }
}

TEST_F(HostlistTools, FoldMatchesScontrol) {
  REQUIRE_TOOL("scontrol");
  std::vector<Names> cases(std::begin(kFoldCases), std::end(kFoldCases));
  cases.push_back(MustExpand("gpu[00001-00100,00200]"));
  for (const Names& names : cases) {
    auto want = Scontrol("hostlist", fmt::format("{}", fmt::join(names, ",")));
    ASSERT_TRUE(want) << "scontrol show hostlist " << fmt::format("{}", fmt::join(names, ",")) << " failed";
    ASSERT_EQ(want->size(), 1u);
    EXPECT_EQ(Fold(names), want->front()) << fmt::format("{}", fmt::join(names, ","));
  }
}

}  // namespace
}  // namespace gpuforge::hostlist
