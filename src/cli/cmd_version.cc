#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "gpuforge/base/build_info.h"
#include "gpuforge/base/schemas.h"

namespace gpuforge::cli {

std::string VersionText() {
  const BuildInfo& b = GetBuildInfo();
  auto yn = [](bool v) { return v ? "yes" : "no"; };
  return fmt::format(
      "gpuforge {} ({})\n"
      "built with headers: CUDA {}, NCCL {}, ibverbs {}; those libraries load at run time\n"
      "GPU kernels embedded: {}; build: {}, {}{}\n",
      b.version, b.git_describe, yn(b.with_cuda_headers), yn(b.with_nccl_headers), yn(b.with_ibverbs_headers),
      yn(b.with_kernels), b.build_type, b.compiler, b.sanitizers ? ", sanitizers (a test build)" : "");
}

nlohmann::ordered_json VersionJson() {
  const BuildInfo& b = GetBuildInfo();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const schemas::Schema& s : schemas::All()) {
    schemas::Parsed p;
    schemas::Parse(s.id, &p);
    list.push_back({{"id", s.id}, {"name", p.name}, {"version", p.major}, {"written_by", s.written_by},
                    {"read_by", s.read_by}});
  }
  return {{"schema", schemas::kVersion},
          {"version", b.version},
          {"git_describe", b.git_describe},
          {"git_revision", b.git_revision},
          {"build",
           {{"type", b.build_type},
            {"compiler", b.compiler},
            {"sanitizers", b.sanitizers},
            {"cuda_headers", b.with_cuda_headers},
            {"nccl_headers", b.with_nccl_headers},
            {"ibverbs_headers", b.with_ibverbs_headers},
            {"gpu_kernels", b.with_kernels}}},
          {"schemas", list}};
}

Command VersionCommand() {
  return {"version", "The version, build options and the schema of every JSON document this gpuforge writes",
          [](CLI::App& app) -> Runner {
            auto format = std::make_shared<Format>(Format::kText);
            AddFormatOption(app, format.get());
            return [format](Context& ctx) {
              if (*format == Format::kJson) {
                ctx.OutJson(VersionJson());
              } else {
                ctx.Out(VersionText());
                ctx.Out("JSON schemas (docs/cli.md, \"Machine-readable output\"):\n");
                for (const schemas::Schema& s : schemas::All()) ctx.Out(fmt::format("  {:<24} {}\n", s.id, s.written_by));
              }
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
