// What rollback reads back from a node: the journal lines of one run (ParseJournal). A run it
// accepts names only absolute, clean paths, known actions, backups under this run's own
// backup directory and digests of what the run wrote; nothing else reaches RestoreScript.

#include <string>

#include "fuzz_check.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/base/names.h"

namespace apply = gpuforge::apply;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string run = "20261130T064252Z-0000abcd";
  const std::string backups = "/var/lib/gpuforge/backups/" + run + "/";
  auto j = apply::ParseJournal("n1", gpuforge::fuzz::AsText(data, size), run);
  if (!j.ok()) {
    FUZZ_CHECK(j.error().message.starts_with("node n1: journal line "), "%s", j.error().message.c_str());
    return 0;
  }
  for (const apply::JournalFile& f : j->files) {
    FUZZ_CHECK(!gpuforge::names::CheckPath(f.path) && f.path.starts_with("/"), "path '%s'", f.path.c_str());
    FUZZ_CHECK(f.action == "create" || f.action == "change" || f.action == "remove", "action '%s'", f.action.c_str());
    if (f.action != "create") {
      FUZZ_CHECK(f.backup == backups + f.path.substr(1), "backup '%s' for '%s'", f.backup.c_str(), f.path.c_str());
      (void)apply::RestoreScript(f.backup, f.path);
    }
    if (f.action != "remove") FUZZ_CHECK(f.sha256.size() == 64, "sha256 '%s'", f.sha256.c_str());
  }
  for (char c : j->rolled_back_by) FUZZ_CHECK(c >= 0x20 && c < 0x7f, "rolled_back_by is not printable");
  return 0;
}
