#pragma once

// The command-line front end: the one place that parses flags, prints, and turns results
// into exit codes. Every subcommand is a row of one table (name, one-line help, setup);
// `--help`, the command list and "did you mean" all come from that table.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"
#include "gpuforge/report/style.h"

namespace gpuforge::cli {

// Documented in docs/cli.md; CI keys on them.
enum ExitCode : int {
  kExitOk = 0,        // no error findings, checks passed
  kExitFindings = 1,  // lint errors or failed checks
  kExitUsage = 2,     // bad flags, unreadable or invalid input
};

enum class Format { kText, kJson, kYaml, kJunit };  // kJunit: cli/outputs.h

struct Io {
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  std::FILE* in = stdin;  // where confirm prompts read their answer
  // Whether a person answers on `in`; unset: whether `in` is a terminal. Tests set it to feed
  // a prompt from a string.
  std::optional<bool> interactive;
};

// What a running command gets: where to write and how to decorate it.
struct Context {
  Io io;
  report::Style out_style;
  report::Style err_style;
  int verbosity = 0;  // -1 quiet, 0 normal, 1+ verbose
  // The words after `--` (a remote command), for commands with takes_trailing.
  std::vector<std::string> trailing;
  // The errno of the first write to io.out that failed (EPIPE: its reader is gone); Run reports it.
  mutable int output_errno = 0;

  // Text for people. Every byte passes the one terminal gate (Style::Safe, text::ForTerminal):
  // node and server text inside a report cannot move the cursor, retitle or clear the screen.
  void Out(std::string_view s) const;
  void Err(std::string_view s) const;
  // Bytes as they are: `run`'s command output (as pdsh prints it; docs/cli.md says so) and the
  // progress bar's own "\r ESC[K".
  void OutRaw(std::string_view s) const;
  void ErrRaw(std::string_view s) const;
  void Error(std::string_view message) const;  // "gpuforge: error: ..." on stderr
  // A report's JSON on stdout, indented by two; bytes that are not UTF-8 (node output may hold
  // any) are replaced.
  void OutJson(const nlohmann::ordered_json& j) const;
  bool Interactive() const;                    // someone can answer a prompt on io.in
  std::string ReadLine() const;                // one line of io.in without its newline; "" at EOF
};

using Runner = std::function<int(Context&)>;

struct Command {
  std::string_view name;
  std::string_view help;
  // Adds the command's flags and positionals to `app` and returns what runs it.
  std::function<Runner(CLI::App& app)> setup;
  // Whether the words after `--` belong to the command (`gpuforge run INV -- CMD ...`).
  bool takes_trailing = false;
};

std::span<const Command> Commands();

// Marks a (sub)command whose positional words are free arguments its runner reads itself with
// `remaining()` (hostlist expand/fold: CLI11 would read a vector positional "[1-3]" as its own
// array syntax). Dispatch then does not call them unexpected.
void TakesFreeArguments(const CLI::App* app);

// What a shell completes for an option's value or a positional word (cli/completion.h): a
// fixed list of choices, files, or names read from the inventory on the command line.
enum class Values {
  kNone, kChoices, kFile, kDir, kInventory, kNodes, kChecks, kParts, kProbes, kCheckParams, kProfiles, kThresholdKeys
};
struct ValueCompletion {
  Values kind = Values::kNone;
  std::vector<std::string> choices;  // kChoices
};
// Registers what `opt` completes to and returns it, for chaining; `choices` for kChoices.
CLI::Option* CompleteAs(CLI::Option* opt, Values kind, std::vector<std::string> choices = {});
// What was registered for `opt`; kNone when nothing was.
ValueCompletion CompletionOf(const CLI::Option* opt);

// Runs the program as `argv` asks; returns the exit code. Never calls exit().
int Run(int argc, const char* const* argv, Io io = {});

// Shared by commands (local_inputs.cc): loads an inventory, printing every diagnostic to stderr.
std::optional<model::Cluster> LoadInventory(Context& ctx, const std::string& path);

// Adds `--format` with the given choices to `app`.
void AddFormatOption(CLI::App& app, Format* format, bool allow_yaml = false);

}  // namespace gpuforge::cli
