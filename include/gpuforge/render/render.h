#pragma once

// Render: the configuration files gpuforge manages, written from the model through
// templates (templates/*.mustache, kainjow mustache), deterministically. Each family of files
// (NCCL, Slurm, Kubernetes, OS, monitoring) contributes Jobs: which template, for which node,
// to which target path, with which context. The engine renders them, prefixes the generated-by
// header in the target's comment syntax, and writes them atomically.

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::render {

enum class CommentStyle { kHash, kXml, kNone };  // "# ...", "<!-- ... -->", no header (JSON)

// The values a template sees, held once however many jobs see them: the slurm.conf context
// pushed to 16,384 nodes is one object, not 16,384 deep copies (#28 item 19). Built from a
// json implicitly; copies share it.
class Context {
 public:
  Context() : json_(std::make_shared<const nlohmann::json>(nlohmann::json::object())) {}
  Context(nlohmann::json j)  // NOLINT(google-explicit-constructor): jobs are written {.., ctx, ..}
      : json_(std::make_shared<const nlohmann::json>(std::move(j))) {}
  Context(nlohmann::json::initializer_list_t init)  // NOLINT(google-explicit-constructor): {{"key", v}}
      : Context(nlohmann::json(init)) {}
  const nlohmann::json& json() const { return *json_; }

 private:
  std::shared_ptr<const nlohmann::json> json_;
};

// One file to produce. `node` is empty for cluster-wide files (written under _cluster/).
struct Job {
  std::string node;
  std::string path;           // absolute target path on the node: "/etc/nccl.conf"
  std::string template_name;  // file name under the templates dir: "nccl.conf.mustache"
  Context context;            // values the template sees; strings already safe for the target
  CommentStyle comment = CommentStyle::kHash;
  std::string mode = "0644";
  // "user:group" apply gives the file on the node (slurmdbd.conf: slurm:slurm, which slurmdbd
  // insists on); render --out writes it as whoever runs render.
  std::string owner = "root:root";
};

// A file that was deliberately not rendered, and why (e.g. a topology file without bus ids).
struct Skip {
  std::string node;
  std::string path;
  std::string reason;
};

struct RenderedFile {
  std::string node;  // "" = cluster-wide
  std::string path;
  std::string content;
  std::string mode;
  std::string template_name;
  std::string owner = "root:root";  // Job::owner
};

struct Output {
  std::vector<RenderedFile> files;  // sorted by (node, path)
  std::vector<Skip> skipped;
  // Files that were rendered but cannot work until the operator does something the inventory
  // does not say (a placeholder image), and what the files assume but gpuforge does not install
  // (#28 item 12); `reason` is the note. render, plan and apply print them on stderr.
  std::vector<Skip> notes;
};

struct Options {
  std::string templates_dir;         // default: the templates/ of the source tree or install
  std::vector<std::string> nodes;    // empty = every node
  std::string inventory_label;       // named in the generated-by header
};

// The jobs of every family for the selected nodes, and the skips they decided on.
struct Plan {
  std::vector<Job> jobs;
  std::vector<Skip> skipped;
  std::vector<Skip> notes;
};
Plan CollectJobs(const model::Cluster& c, const Options& o);

// Renders every job. A missing or broken template is an error naming the template, and the
// line and column of the problem inside it.
Result<Output> Render(const model::Cluster& c, const Options& o);

// Writes DIR/<node>/<path> (DIR/_cluster/<path> for cluster-wide files), each through a
// temporary file in the same directory and rename(2), so no reader ever sees a partial file.
Status WriteTree(const Output& out, const std::string& dir);

// The directory gpuforge looks for templates in when --templates is not given.
std::string DefaultTemplatesDir();

}  // namespace gpuforge::render
