#pragma once

// Shell completion and manual pages, both read from the one CLI11 command tree that parses the
// flags, so neither can drift from `--help`.
//
// Completion: the shell scripts `gpuforge completion bash|zsh|fish` prints call
// `gpuforge __complete WORD...` with the words after "gpuforge" up to the cursor (the last one
// is the word being completed, "" after a space). It prints one candidate per line; a line
// ":file" or ":dir" asks the shell for its own file or directory completion as well.
// Candidates come from the tree (commands, flags, choices) and from the inventory named on the
// line (node names and @groups for --nodes, check keys for --checks). Nothing it prints goes to
// a terminal as output, and it never fails loudly: a word it cannot place completes nothing.

#include <CLI/CLI.hpp>

#include <span>
#include <string>
#include <vector>

#include "cli/app.h"

namespace gpuforge::cli {

std::vector<std::string> CompleteWords(CLI::App& root, std::span<const std::string> words);

// The script for `shell` ("bash", "zsh", "fish"); "" for another shell.
std::string CompletionScript(std::string_view shell);

// roff man(7) pages: "gpuforge.1" for the program and "gpuforge-CMD.1" for each visible command,
// as {file name, text}. `date` goes in the title lines (a build passes the commit's date, so
// two builds of one commit write the same bytes).
std::vector<std::pair<std::string, std::string>> ManPages(CLI::App& root, std::string_view date);

}  // namespace gpuforge::cli
