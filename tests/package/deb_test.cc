// The Debian package (cmake/GpuforgePackage.cmake, scripts/package.sh): made by CPack from this
// build, judged by lintian, installed with `apt install ./gpuforge_*.deb` into a clean Debian 12
// that debootstrap makes, and run there. apt has to find every library the binary needs from
// the Depends dpkg-shlibdeps wrote, since nothing of this machine's is in the new root.
//
// Needs root (chroot, mounts in a private namespace), cpack, lintian, debootstrap and the
// Debian archive (the mirror apt uses here); without one it SKIPs and says which.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

struct Out {
  int rc = -1;
  std::string text;
};

Out Sh(const std::string& cmd) {
  Out o;
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) o.text.append(buf.data(), n);
  const int st = ::pclose(p);
  o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

std::string Mirror() {
  if (const char* m = std::getenv("GPUFORGE_TEST_DEBIAN_MIRROR"); m != nullptr && *m != '\0') return m;
  return "http://deb.debian.org/debian";
}

// Tags lintian gives only the sanitizer build that the tests run in (the binary is linked
// with libasan and built without _FORTIFY_SOURCE and -O2); scripts/package.sh makes the
// release package, which must not have them.
constexpr const char* kSanitizerBuildOnly = "hardening-no-pie,hardening-no-fortify-functions";

class PackageE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / fmt::format("gpuforge-deb-{}", ::getpid()));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (chroot)";
    for (const char* tool : {"cpack", "lintian", "debootstrap", "unshare"}) {
      if (Sh(fmt::format("command -v {}", tool)).rc != 0) {
        GTEST_SKIP() << tool << " is not installed (scripts/deps.sh --test installs it)";
      }
    }
  }

  // The package, made once for the suite from the build the tests run from.
  static const std::string& Deb() {
    static const std::string deb = [] {
      const fs::path build = fs::path(GPUFORGE_BINARY).parent_path();
      const fs::path out = *dir_ / "package";
      // gzip: the sanitizer build's binary is large, and xz (the release default) is slow.
      Out o = Sh(fmt::format("cd '{}' && cpack -G DEB -D CPACK_DEBIAN_COMPRESSION_TYPE=gzip -B '{}'", build.string(),
                             out.string()));
      if (o.rc != 0) return "cpack failed: " + o.text;
      for (const auto& e : fs::directory_iterator(out)) {
        if (e.path().extension() == ".deb") return e.path().string();
      }
      return "cpack wrote no .deb: " + o.text;
    }();
    return deb;
  }

  // A clean Debian 12, made once for the suite.
  static const fs::path& Root() {
    static const fs::path root = [] {
      const fs::path r = *dir_ / "root";
      Out o = Sh(fmt::format("debootstrap --variant=minbase bookworm '{}' '{}'", r.string(), Mirror()));
      root_error_ = o.rc == 0 ? "" : o.text;
      return r;
    }();
    return root;
  }

  // `cmd` inside the new root, with its own /proc in a private mount namespace (gone with it).
  // The command goes in a file there, so that it needs no quoting.
  static Out InRoot(const std::string& cmd) {
    std::ofstream(Root() / "tmp/gpuforge-test.sh")
        << "export PATH=/usr/sbin:/usr/bin:/sbin:/bin ASAN_OPTIONS=detect_leaks=0\n" << cmd << "\n";
    return Sh(fmt::format("unshare --mount --fork sh -c 'mount -t proc proc \"$0/proc\" && chroot \"$0\" /bin/sh "
                          "/tmp/gpuforge-test.sh' '{}'",
                          Root().string()));
  }

  static fs::path* dir_;
  static std::string root_error_;
};

fs::path* PackageE2e::dir_ = nullptr;
std::string PackageE2e::root_error_;

TEST_F(PackageE2e, LintianFindsNothingUnexplained) {
  ASSERT_TRUE(Deb().ends_with(".deb")) << Deb();
  // The package's own overrides (cmake/debian/lintian-overrides) are honoured; what is left fails.
  Out o = Sh(fmt::format("lintian --fail-on error,warning --tag-display-limit 0 --suppress-tags {} '{}'",
                         kSanitizerBuildOnly, Deb()));
  EXPECT_EQ(o.rc, 0) << o.text;
  // The fields a person and apt read.
  Out info = Sh(fmt::format("dpkg-deb --field '{}' Package Version Architecture Depends Suggests Section", Deb()));
  ASSERT_EQ(info.rc, 0) << info.text;
  EXPECT_NE(info.text.find("Package: gpuforge\n"), std::string::npos) << info.text;
  EXPECT_NE(info.text.find("Version: 0.1.0-1\n"), std::string::npos) << info.text;
  // From dpkg-shlibdeps: the libraries the binary links.
  for (const char* lib : {"libc6", "libssh-4", "libyaml-cpp0.7", "libfmt9"}) {
    EXPECT_NE(info.text.find(lib), std::string::npos) << lib << " missing from Depends: " << info.text;
  }
  // What it opens at run time is suggested, never required.
  const std::string depends = info.text.substr(info.text.find("Depends:"), info.text.find('\n', info.text.find("Depends:")) - info.text.find("Depends:"));
  for (const char* lib : {"libnccl", "libcuda", "libnvidia-ml", "libibverbs", "libcublaslt"}) {
    EXPECT_EQ(depends.find(lib), std::string::npos) << lib << " in " << depends;
    EXPECT_NE(info.text.find(lib), std::string::npos) << lib << " is not suggested: " << info.text;
  }
}

TEST_F(PackageE2e, InstallsIntoACleanDebianAndLints) {
  ASSERT_TRUE(Deb().ends_with(".deb")) << Deb();
  const fs::path& root = Root();
  if (!root_error_.empty()) GTEST_SKIP() << "debootstrap from " << Mirror() << " failed (no archive?): " << root_error_;
  fs::copy_file(Deb(), root / "tmp" / fs::path(Deb()).filename(), fs::copy_options::overwrite_existing);
  Out install = InRoot(fmt::format("apt-get install -y -q --no-install-recommends ./tmp/{}",
                                   fs::path(Deb()).filename().string()));
  ASSERT_EQ(install.rc, 0) << install.text;
  // Found from /usr/bin through PATH, the example from /usr/share/gpuforge.
  Out lint = InRoot("cd /tmp && gpuforge lint --color never /usr/share/gpuforge/examples/h200-ib-32gpu.yaml");
  EXPECT_EQ(lint.rc, 0) << lint.text;
  EXPECT_NE(lint.text.find("lint PASS: 0 errors"), std::string::npos) << lint.text;
  // render reads the installed templates (not this source tree's, which the chroot cannot see).
  Out render = InRoot("cd /tmp && gpuforge render /usr/share/gpuforge/examples/h200-ib-32gpu.yaml --out /tmp/r -q && "
                      "test -s /tmp/r/_cluster/etc/slurm/slurm.conf && ls /tmp/r/gpu001/etc/nccl.conf");
  EXPECT_EQ(render.rc, 0) << render.text;
  Out version = InRoot("gpuforge version --format json");
  EXPECT_EQ(version.rc, 0) << version.text;
  EXPECT_NE(version.text.find("\"gpuforge.version/v1\""), std::string::npos) << version.text;
  // The completion and the pages where Debian's bash-completion, zsh, fish and man look.
  Out files = InRoot(
      "test -s /usr/share/bash-completion/completions/gpuforge && test -s /usr/share/zsh/vendor-completions/_gpuforge "
      "&& test -s /usr/share/fish/vendor_completions.d/gpuforge.fish && test -s /usr/share/man/man1/gpuforge.1.gz && "
      "test -s /usr/share/man/man1/gpuforge-validate.1.gz && test -s /usr/share/doc/gpuforge/copyright && "
      "test -s /usr/share/gpuforge/validation/gpu-models.yaml");
  EXPECT_EQ(files.rc, 0) << files.text;
  Out complete = InRoot(
      "bash -c '. /usr/share/bash-completion/completions/gpuforge && complete -p gpuforge && "
      "COMP_LINE=\"gpuforge valid\" COMP_POINT=14 COMP_WORDS=(gpuforge valid) COMP_CWORD=1 && "
      "_gpuforge_complete && echo \"${COMPREPLY[*]}\"'");
  EXPECT_EQ(complete.rc, 0) << complete.text;
  EXPECT_NE(complete.text.find("\nvalidate\n"), std::string::npos) << complete.text;
  // apt removes it cleanly.
  Out remove = InRoot("apt-get remove -y -q gpuforge && ! test -e /usr/bin/gpuforge");
  EXPECT_EQ(remove.rc, 0) << remove.text;
}

}  // namespace
}  // namespace gpuforge
