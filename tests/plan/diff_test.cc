#include "gpuforge/plan/diff.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace gpuforge::plan {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDiff = "/usr/bin/diff";
constexpr const char* kPatch = "/usr/bin/patch";

fs::path DataDir() {
#ifdef GPUFORGE_TEST_DATA_DIR
  return GPUFORGE_TEST_DATA_DIR;
#else
  return "/work/main/tests/data";
#endif
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const fs::path& p, std::string_view content) {
  std::ofstream(p, std::ios::binary) << content;
}

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "gpuforge-diff-XXXXXX").string();
    if (mkdtemp(t.data()) != nullptr) path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs argv (argv[0] a full path) with stdout into `out`; its exit status, or -1.
int Run(const std::vector<std::string>& argv, const fs::path& out) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool HaveTools() { return fs::exists(kDiff) && fs::exists(kPatch); }

// What GNU diff prints for the pair.
std::string GnuDiff(const TempDir& dir, std::string_view a, std::string_view b, int context) {
  WriteFile(dir.path() / "a", a);
  WriteFile(dir.path() / "b", b);
  const fs::path out = dir.path() / "gnu.diff";
  Run({kDiff, "-U" + std::to_string(context), "--label", "FROM", "--label", "TO", dir.path() / "a",
       dir.path() / "b"},
      out);
  return ReadFile(out);
}

// `a` with `diff` applied by GNU patch, exact context required; nullopt if patch failed.
std::optional<std::string> Patch(const TempDir& dir, std::string_view a, std::string_view diff) {
  WriteFile(dir.path() / "orig", a);
  WriteFile(dir.path() / "p.diff", diff);
  const fs::path result = dir.path() / "patched";
  fs::remove(result);
  const int rc = Run({kPatch, "-f", "-s", "-F", "0", "--no-backup-if-mismatch", "-r", "-", "-o",
                      result, dir.path() / "orig", dir.path() / "p.diff"},
                     dir.path() / "patch.out");
  if (rc != 0) return std::nullopt;
  return ReadFile(result);
}

// Deleted plus inserted lines in a unified diff.
int ChangedLines(std::string_view diff) {
  int n = 0, line = 0;
  for (std::size_t pos = 0; pos < diff.size(); ++line) {
    if (line >= 2 && (diff[pos] == '-' || diff[pos] == '+')) ++n;
    const std::size_t nl = diff.find('\n', pos);
    pos = nl == std::string_view::npos ? diff.size() : nl + 1;
  }
  return n;
}

int Count(std::string_view s, std::string_view what) {
  int n = 0;
  for (std::size_t p = s.find(what); p != std::string_view::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// "1\n" .. "n\n", with `changes` applied: line number -> replacement ("" deletes it).
std::string Numbered(int n, const std::vector<std::pair<int, std::string>>& changes = {}) {
  std::string s;
  for (int i = 1; i <= n; ++i) {
    std::string line = std::to_string(i) + "\n";
    for (const auto& [at, text] : changes)
      if (at == i) line = text;
    s += line;
  }
  return s;
}

TEST(PlanLooksBinary, NulInTheFirst8000Bytes) {
  EXPECT_FALSE(LooksBinary(""));
  EXPECT_FALSE(LooksBinary("SlurmctldPort=6817\n"));
  EXPECT_TRUE(LooksBinary(std::string_view("\0abc", 4)));
  std::string s(9000, 'x');
  s[7999] = '\0';
  EXPECT_TRUE(LooksBinary(s));
  s[7999] = 'x';
  s[8000] = '\0';
  EXPECT_FALSE(LooksBinary(s));
}

TEST(PlanUnifiedDiff, EqualIsEmptyAndBinaryIsOneLine) {
  EXPECT_EQ(UnifiedDiff("a", "b", "x\n", "x\n"), "");
  EXPECT_EQ(UnifiedDiff("a", "b", "", ""), "");
  EXPECT_EQ(UnifiedDiff("/etc/x (node)", "/etc/x (planned)", std::string_view("a\0b\n", 4), "a\n"),
            "Binary files /etc/x (node) and /etc/x (planned) differ\n");
  // Even a NUL past diff's first buffer: the plan never prints one.
  EXPECT_EQ(UnifiedDiff("a", "b", std::string(10000, 'x') + std::string(1, '\0'), "x\n"),
            "Binary files a and b differ\n");
}

TEST(PlanUnifiedDiff, PinnedOutput) {
  // Two changes 6 common lines apart share a hunk; the last line has no newline on either side.
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\neleven\n12\n13\n14";
  EXPECT_EQ(UnifiedDiff("/etc/nccl.conf (gpu01)", "/etc/nccl.conf (planned)", a, b),
            "--- /etc/nccl.conf (gpu01)\n"
            "+++ /etc/nccl.conf (planned)\n"
            "@@ -2,13 +2,14 @@\n"
            " 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n 11\n+eleven\n 12\n 13\n 14\n"
            "\\ No newline at end of file\n");
  EXPECT_EQ(UnifiedDiff("F", "T", "", "a\n"), "--- F\n+++ T\n@@ -0,0 +1 @@\n+a\n");
  EXPECT_EQ(UnifiedDiff("F", "T", "a", "a\n"),
            "--- F\n+++ T\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
}

struct Case {
  const char* name;
  std::string a, b;
  int context = 3;
};

// Cases with one minimal edit only, so diff and UnifiedDiff must agree byte for byte.
std::vector<Case> UnambiguousCases() {
  return {
      {"insert at start", Numbered(8), "0\n" + Numbered(8)},
      {"insert at end", Numbered(8), Numbered(8) + "9\n"},
      {"insert in the middle", Numbered(12), Numbered(12, {{6, "6\nsix and a half\n"}})},
      {"delete in the middle", Numbered(12), Numbered(12, {{6, ""}})},
      {"delete first and last", Numbered(12), Numbered(12, {{1, ""}, {12, ""}})},
      {"change one line", Numbered(12), Numbered(12, {{7, "seven\n"}})},
      {"change a block", Numbered(12), Numbered(12, {{5, "V\n"}, {6, "VI\nVI.5\n"}, {7, ""}})},
      {"replace everything", "a\nb\n", "c\nd\ne\n"},
      {"newline added at the end", "a\nb\nc", "a\nb\nc\n"},
      {"newline dropped at the end", "a\nb\nc\n", "a\nb\nc"},
      {"no newline either side, last line changed", "a\nb\nc", "a\nb\nd"},
      {"no newline either side, context to the end", "a\nb\nc", "X\nb\nc"},
      {"empty to content", "", "a\nb\n"},
      {"content to empty", "a\nb\n", ""},
      {"empty to a line without newline", "", "x"},
      {"two hunks far apart", Numbered(30), Numbered(30, {{4, "four\n"}, {25, "twenty-five\n"}})},
      {"two changes 6 apart merge", Numbered(20), Numbered(20, {{5, "five\n"}, {12, "twelve\n"}})},
      {"two changes 7 apart stay apart", Numbered(20),
       Numbered(20, {{5, "five\n"}, {13, "thirteen\n"}})},
      {"CRLF lines", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"},
      {"context 0 insert", Numbered(10), Numbered(10, {{5, "5\nnew\n"}}), 0},
      {"context 0 delete", Numbered(10), Numbered(10, {{5, ""}}), 0},
      {"context 0 two changes", Numbered(10), Numbered(10, {{3, "c\n"}, {4, "d\n"}, {8, "h\n"}}),
       0},
      {"context 1 merge and split", Numbered(20),
       Numbered(20, {{3, "c\n"}, {6, "f\n"}, {9, "i\n"}}), 1},
      {"context 10 whole file", Numbered(8), Numbered(8, {{4, "d\n"}}), 10},
  };
}

TEST(PlanUnifiedDiff, MatchesGnuDiffOnUnambiguousCases) {
  if (!HaveTools()) GTEST_SKIP() << "needs " << kDiff << " and " << kPatch;
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  for (const Case& c : UnambiguousCases()) {
    SCOPED_TRACE(c.name);
    const std::string ours = UnifiedDiff("FROM", "TO", c.a, c.b, c.context);
    EXPECT_EQ(ours, GnuDiff(dir, c.a, c.b, c.context));
    EXPECT_EQ(Patch(dir, c.a, ours), c.b);
  }
}

// Random pairs over a few repeated lines, where many edits are minimal: patch must turn a into
// b, and the edit must be no longer than the one diff found.
TEST(PlanUnifiedDiff, PatchAppliesAndEditIsMinimalOnRandomPairs) {
  if (!HaveTools()) GTEST_SKIP() << "needs " << kDiff << " and " << kPatch;
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::mt19937 rng(20240611);
  const std::vector<std::string> pool = {"a\n", "b\n", "c\n", "x = 1\n", "\n", "a\r\n", "}\n"};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int iter = 0; iter < 250; ++iter) {
    std::vector<std::string> a_lines, b_lines;
    const int n = pick(40);
    for (int i = 0; i < n; ++i) a_lines.push_back(pool[pick(static_cast<int>(pool.size()))]);
    for (const std::string& l : a_lines) {
      const int r = pick(10);
      if (r == 0) continue;                                                       // delete
      if (r == 1) b_lines.push_back(pool[pick(static_cast<int>(pool.size()))]);   // insert
      b_lines.push_back(r == 2 ? pool[pick(static_cast<int>(pool.size()))] : l);  // change or keep
    }
    std::string a, b;
    for (const std::string& l : a_lines) a += l;
    for (const std::string& l : b_lines) b += l;
    if (pick(4) == 0 && !a.empty()) a.pop_back();  // no final newline
    if (pick(4) == 0 && !b.empty()) b.pop_back();
    const int context = pick(5);
    SCOPED_TRACE(fmt::format("iteration {} context {}\na:\n{}\nb:\n{}", iter, context, a, b));
    const std::string ours = UnifiedDiff("FROM", "TO", a, b, context);
    if (a == b) {
      EXPECT_EQ(ours, "");
      continue;
    }
    EXPECT_EQ(Patch(dir, a, ours), b) << ours;
    EXPECT_LE(ChangedLines(ours), ChangedLines(GnuDiff(dir, a, b, context))) << ours;
  }
}

TEST(PlanUnifiedDiff, TooManyEditsBecomeOneChange) {
  // Every third line differs: more than kMaxDiffEdits lines to delete and insert, known before
  // any search from the lines one side lacks.
  const int n = 3 * (kMaxDiffEdits / 2 + 3);
  std::string a, b;
  for (int i = 0; i < n; ++i) {
    a += "line " + std::to_string(i) + "\n";
    b += (i % 3 == 0 ? "changed " : "line ") + std::to_string(i) + "\n";
  }
  const std::string d = UnifiedDiff("FROM", "TO", a, b);
  EXPECT_EQ(Count(d, "\n@@ "), 1);
  // Common lines inside are replaced too, not kept as context; the common tail stays context.
  EXPECT_EQ(Count(d, "\n-line 1\n"), 1);
  EXPECT_EQ(Count(d, "\n+line 1\n"), 1);
  EXPECT_NE(d.find("\n line " + std::to_string(n - 1) + "\n"), std::string::npos);
  if (!HaveTools()) GTEST_SKIP() << "needs " << kPatch;
  TempDir dir;
  EXPECT_EQ(Patch(dir, a, d), b);
}

TEST(PlanUnifiedDiff, SearchStopsAtTheBound) {
  // The same lines, each pair swapped: a shortest edit moves one line of every pair (n edits in
  // all), which only the search finds out. Past the bound, every line is replaced.
  const int n = kMaxDiffEdits + 4;
  std::string a, b;
  for (int i = 0; i < n; i += 2) {
    a += fmt::format("{}\n{}\n", i, i + 1);
    b += fmt::format("{}\n{}\n", i + 1, i);
  }
  const std::string d = UnifiedDiff("FROM", "TO", a, b);
  EXPECT_EQ(Count(d, "\n@@ "), 1);
  EXPECT_EQ(ChangedLines(d), 2 * n);
  // Below it, the shortest.
  const std::string small_a = a.substr(0, a.find("\n100\n") + 1),
                    small_b = b.substr(0, b.find("\n101\n") + 1);
  EXPECT_EQ(ChangedLines(UnifiedDiff("FROM", "TO", small_a, small_b)), 100);
}

struct MaskCase {
  std::string in, out;
};

TEST(PlanMaskSecrets, MasksValuesKeepsKeysAndLayout) {
  const std::vector<MaskCase> cases = {
      {"password=hunter2\n", "password=(masked)\n"},
      {"DB_PASSWORD = hunter2\n", "DB_PASSWORD = (masked)\n"},
      {"  client_secret: \"abc\"\n", "  client_secret: (masked)\n"},
      {"export GITHUB_TOKEN=ghp_x\n", "export GITHUB_TOKEN=(masked)\n"},
      {"Passwd\thunter2\n", "Passwd\t(masked)\n"},
      {"password hunter2:x\n", "password (masked)\n"},
      {"aws_credentials: x\n", "aws_credentials: (masked)\n"},
      {"PrivateKey=x\nprivate-key: x\n", "PrivateKey=(masked)\nprivate-key: (masked)\n"},
      {"API_KEY=x\napikey=x\nauth_key=x\n",
       "API_KEY=(masked)\napikey=(masked)\nauth_key=(masked)\n"},
      {"JWT=x\nsession_key=x\n", "JWT=(masked)\nsession_key=(masked)\n"},
      {"key = abc\nssh_key: x\ntls.key: x\napi-key: x\n",
       "key = (masked)\nssh_key: (masked)\ntls.key: (masked)\napi-key: (masked)\n"},
      {"\"password\": \"x\",\n", "\"password\": (masked)\n"},
      {"AccountingStoragePass=pw\nStoragePass=pw\n",
       "AccountingStoragePass=(masked)\nStoragePass=(masked)\n"},
      // #28 item 15: every Slurm and MariaDB password key.
      {"JobCompPass=pw\n", "JobCompPass=(masked)\n"},
      {"jobcomppass = pw\n", "jobcomppass = (masked)\n"},
      {"[client]\npassword = pw\npass=pw\ndb_pass: pw\n", "[client]\npassword = (masked)\npass=(masked)\ndb_pass: (masked)\n"},
      {"StorageUser=slurm\nJobCompUser=slurm\n", "StorageUser=slurm\nJobCompUser=slurm\n"},
      {"curl -H \"Authorization: Bearer abc\" http://x\n", "curl -H \"Authorization: (masked)\n"},
      {"  bearer abc\n", "  bearer (masked)\n"},
      {"password=a\r\nuser=b\r\n", "password=(masked)\r\nuser=b\r\n"},
      {"token: x", "token: (masked)"},
      {"a=1\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n-----END RSA PRIVATE KEY-----\nb=2\n",
       "a=1\n(masked private key)\nb=2\n"},
      {"cert: |\n  -----BEGIN PRIVATE KEY-----\r\n  MII\r\n  -----END PRIVATE KEY-----\r\nx: 1\n",
       "cert: |\n  (masked private key)\r\nx: 1\n"},
      {"{\"k\": \"-----BEGIN EC PRIVATE KEY-----\\nMII\\n-----END EC PRIVATE KEY-----\\n\"}",
       "{\"k\": \"(masked private key)\\n\"}"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\ndef\n", "(masked private key)\n"},
      {"-----BEGIN PRIVATE KEY-----\nabc", "(masked private key)"},
  };
  for (const MaskCase& c : cases) {
    EXPECT_EQ(MaskSecrets(c.in), c.out) << c.in;
    EXPECT_EQ(MaskSecrets(c.out), c.out) << "masking twice changes " << c.out;
  }
}

TEST(PlanMaskSecrets, LeavesOrdinarySettingsAlone) {
  for (std::string_view s : {
           "AuthType=auth/munge\nCryptoType=crypto/munge\nSlurmctldPort=6817\n",
           "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1\nNCCL_SOCKET_IFNAME=eth0\n",
           "monkey = 3\nkeyboard = us\nkeys: 4\nhotkey=F1\n",
           "                      - key: \"kubernetes.io/hostname\"\n",
           "TOKENIZERS_PARALLELISM=false\n",
           "bypass=1\ncompass: north\nPassthrough=yes\n",
           "tlsPrivateKeyFile: "
           "/var/lib/kubelet/pki/kubelet.key\npassword_file=/etc/pw\nsecrets_dir: /run/s\n",
           "password=\npassword:\n[secrets]\n# set the password below\n",
           "authorization:\n  mode: Webhook\n",
           "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
           "",
           "no newline",
       }) {
    EXPECT_EQ(MaskSecrets(s), s);
  }
}

// Every file gpuforge renders in the goldens (and the other test data): nothing masked.
TEST(PlanMaskSecrets, GoldenFilesAreUnchanged) {
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(DataDir())) {
    if (!e.is_regular_file()) continue;
    const std::string content = ReadFile(e.path());
    if (LooksBinary(content)) continue;
    ++files;
    EXPECT_EQ(MaskSecrets(content), content) << e.path();
  }
  EXPECT_GT(files, 50);
}

TEST(PlanMaskedUnifiedDiff, ChangedSecretIsAChangedLineMaskedOnBothSides) {
  const std::string a = "user=slurm\npassword=one\nport=6819\n";
  const std::string b = "user=slurm\npassword=two\nport=6819\n";
  EXPECT_EQ(MaskedUnifiedDiff("FROM", "TO", a, b),
            "--- FROM\n+++ TO\n@@ -1,3 +1,3 @@\n "
            "user=slurm\n-password=(masked)\n+password=(masked)\n port=6819\n");
  // Diffing the masked texts instead would hide the change.
  EXPECT_EQ(UnifiedDiff("FROM", "TO", MaskSecrets(a), MaskSecrets(b)), "");
  EXPECT_EQ(MaskedUnifiedDiff("FROM", "TO", a, a), "");
}

TEST(PlanMaskedUnifiedDiff, PrivateKeyBlockIsOneLine) {
  const std::string a =
      "x=1\n-----BEGIN PRIVATE KEY-----\nAAA\nBBB\n-----END PRIVATE KEY-----\ny=2\n";
  const std::string b =
      "x=1\n-----BEGIN PRIVATE KEY-----\nAAA\nCCC\n-----END PRIVATE KEY-----\ny=3\n";
  EXPECT_EQ(MaskedUnifiedDiff("FROM", "TO", a, b),
            "--- FROM\n+++ TO\n@@ -1,3 +1,3 @@\n x=1\n-(masked private key)\n-y=2\n+(masked "
            "private key)\n+y=3\n");
}

TEST(PlanMaskedUnifiedDiff, SameAsUnifiedDiffWithoutSecrets) {
  const std::string a = Numbered(20), b = Numbered(20, {{3, "three\n"}, {17, ""}});
  EXPECT_EQ(MaskedUnifiedDiff("FROM", "TO", a, b), UnifiedDiff("FROM", "TO", a, b));
  EXPECT_EQ(MaskedUnifiedDiff("FROM", "TO", std::string_view("a\0", 2), "b"),
            "Binary files FROM and TO differ\n");
}

}  // namespace
}  // namespace gpuforge::plan
