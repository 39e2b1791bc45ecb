#include <memory>

#include "cli/commands.h"
#include "cli/completion.h"

namespace gpuforge::cli {

Command CompletionCommand() {
  return {"completion", "Print the shell completion script for bash, zsh or fish",
          [](CLI::App& app) -> Runner {
            auto shell = std::make_shared<std::string>();
            CompleteAs(app.add_option("SHELL", *shell, "bash, zsh or fish")->required(), Values::kChoices,
                       {"bash", "zsh", "fish"})
                ->check(CLI::IsMember({"bash", "zsh", "fish"}));
            app.footer(
                "Install (bash): gpuforge completion bash > /etc/bash_completion.d/gpuforge\n"
                "Install (zsh):  gpuforge completion zsh > \"${fpath[1]}/_gpuforge\"\n"
                "Install (fish): gpuforge completion fish > ~/.config/fish/completions/gpuforge.fish\n"
                "The Debian package installs all three.");
            return [shell](Context& ctx) {
              ctx.OutRaw(CompletionScript(*shell));
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
