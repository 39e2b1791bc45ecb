#include "cli/app.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/completion.h"
#include "gpuforge/base/files.h"
#include "gpuforge/base/names.h"

namespace gpuforge::cli {

void Context::Out(std::string_view s) const { OutRaw(out_style.Safe(s)); }
void Context::Err(std::string_view s) const { ErrRaw(err_style.Safe(s)); }
void Context::OutRaw(std::string_view s) const {
  if (std::fwrite(s.data(), 1, s.size(), io.out) != s.size() && output_errno == 0) output_errno = errno != 0 ? errno : EIO;
}
void Context::ErrRaw(std::string_view s) const { std::fwrite(s.data(), 1, s.size(), io.err); }
void Context::Error(std::string_view message) const {
  Err(fmt::format("gpuforge: {} {}\n", err_style.Red("error:"), message));
}

void Context::OutJson(const nlohmann::ordered_json& j) const {
  // JSON escapes every control character itself; the gate would only corrupt valid UTF-8 data.
  OutRaw(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

bool Context::Interactive() const {
  if (io.interactive) return *io.interactive;
  return io.in != nullptr && ::isatty(::fileno(io.in)) == 1;
}

std::string Context::ReadLine() const {
  std::string line;
  for (int c; io.in != nullptr && (c = std::fgetc(io.in)) != EOF && c != '\n';) line.push_back(static_cast<char>(c));
  return line;
}

std::span<const Command> Commands() {
  static const std::array kCommands = {
      LintCommand(), EstimateCommand(), PlanCommand(), RenderCommand(), RunCommand(), FactsCommand(), CablingCommand(), InitCommand(), ApplyCommand(), RollbackCommand(), UnlockCommand(), ValidateCommand(), AgentCommand(), InventoryCommand(), HostlistCommand(), ThresholdsCommand(), VersionCommand(), CompletionCommand(),
  };
  return kCommands;
}

void AddFormatOption(CLI::App& app, Format* format, bool allow_yaml) {
  std::map<std::string, Format> choices = {{"text", Format::kText}, {"json", Format::kJson}};
  if (allow_yaml) choices["yaml"] = Format::kYaml;
  app.add_option("--format", *format, allow_yaml ? "Output format: text, json or yaml" : "Output format: text or json")
      ->transform(CLI::CheckedTransformer(choices, CLI::ignore_case))
      ->option_text("FORMAT");
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) names.push_back(name);
  CompleteAs(app.get_option("--format"), Values::kChoices, std::move(names));
}

namespace {

bool UseColor(const std::string& mode, std::FILE* f) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return isatty(fileno(f)) == 1;
}

std::vector<std::string> OptionNames(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::vector<std::string> SubcommandNames(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app->get_subcommands({})) out.push_back(s->get_name());
  return out;
}

// The deepest subcommand the user selected.
CLI::App* Selected(CLI::App* app) {
  for (CLI::App* s : app->get_subcommands()) return Selected(s);
  return app;
}

std::set<const CLI::App*>& FreeArgumentApps() {
  static std::set<const CLI::App*> apps;
  return apps;
}

std::string UnknownArgumentMessage(CLI::App* at, const std::string& arg) {
  if (!arg.empty() && arg[0] == '-') {
    std::string flag = arg.substr(0, arg.find('='));
    std::string msg = fmt::format("unknown option '{}' for '{}'", flag, at->get_name());
    // A flag cut short ("--sep") names the one flag it begins, before any spelling guess.
    std::vector<std::string> begun;
    for (const std::string& o : OptionNames(at)) {
      if (flag.size() >= 3 && o.starts_with(flag)) begun.push_back(o);
    }
    if (begun.size() == 1) {
      msg += fmt::format("; did you mean '{}'?", begun.front());
    } else if (auto best = names::Closest(flag, OptionNames(at))) {
      msg += fmt::format("; did you mean '{}'?", *best);
    }
    return msg;
  }
  std::vector<std::string> subs = SubcommandNames(at);
  if (!subs.empty()) {
    std::string msg = fmt::format("unknown command '{}'", arg);
    if (auto best = names::Closest(arg, subs)) msg += fmt::format("; did you mean '{}'?", *best);
    else msg += fmt::format(" (commands: {})", fmt::join(subs, ", "));
    return msg;
  }
  return fmt::format("unexpected argument '{}' for '{}'", arg, at->get_name());
}

}  // namespace

void TakesFreeArguments(const CLI::App* app) { FreeArgumentApps().insert(app); }

namespace {
std::map<const CLI::Option*, ValueCompletion>& CompletionRegistry() {
  static std::map<const CLI::Option*, ValueCompletion> registry;
  return registry;
}
}  // namespace

CLI::Option* CompleteAs(CLI::Option* opt, Values kind, std::vector<std::string> choices) {
  CompletionRegistry()[opt] = ValueCompletion{kind, std::move(choices)};
  return opt;
}

ValueCompletion CompletionOf(const CLI::Option* opt) {
  auto it = CompletionRegistry().find(opt);
  return it == CompletionRegistry().end() ? ValueCompletion{} : it->second;
}

namespace {

int Dispatch(Context& ctx, int argc, const char* const* argv) {
  const Io& io = ctx.io;
  const int full_argc = argc;
  // Everything after the first `--` is a command for the nodes, never gpuforge's flags; CLI11
  // would otherwise see it through the fallthrough of the subcommands.
  int head = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      head = i;
      for (int j = i + 1; j < argc; ++j) ctx.trailing.emplace_back(argv[j]);
      break;
    }
  }
  const bool had_separator = head != argc;
  argc = head;
  // The apps and options of an earlier Run (tests call it in one process) are gone; their
  // addresses may be reused by this one's.
  FreeArgumentApps().clear();
  CompletionRegistry().clear();
  CLI::App app{"gpuforge: check, configure and validate GPU training clusters from one inventory", "gpuforge"};
  app.set_help_all_flag("--help-all", "Show help for every command");
  app.footer(
      "Exit codes: 0 ok, 1 error findings or failed checks, 2 usage or input errors.\n"
      "Run 'gpuforge COMMAND --help' for a command's flags. Docs: docs/cli.md");
  std::string color = "auto";
  bool verbose = false, quiet = false, version = false;
  app.add_flag("--version", version, "Print the version and build options, then exit");
  app.add_flag("-v,--verbose", verbose, "More diagnostics on stderr");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");
  CompleteAs(app.add_option("--color", color, "Colour output: auto, always or never (NO_COLOR is honoured)"),
             Values::kChoices, {"auto", "always", "never"})
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("WHEN");
  app.allow_extras();
  app.fallthrough();

  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const Command& c : Commands()) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.help));
    sub->allow_extras();
    sub->fallthrough();
    runners.emplace_back(sub, c.setup(*sub));
  }

  // The helpers the completion scripts and the build call (cli/completion.h) read the tree and
  // never parse it; they are not commands a person types, so --help does not list them.
  if (full_argc >= 2 && std::string_view(argv[1]) == "__complete") {
    std::vector<std::string> words(argv + 2, argv + full_argc);
    if (words.empty()) words.emplace_back();
    for (const std::string& c : CompleteWords(app, words)) ctx.OutRaw(c + "\n");
    return kExitOk;
  }
  if (full_argc >= 2 && std::string_view(argv[1]) == "__man") {
    if (full_argc != 4) {
      ctx.Error("usage: gpuforge __man DIR DATE (the build writes the manual pages with it)");
      return kExitUsage;
    }
    const std::vector<std::pair<std::string, std::string>> pages = ManPages(app, argv[3]);
    std::vector<base::FileToWrite> files;
    for (const auto& [name, text] : pages) files.push_back({std::filesystem::path(argv[2]) / name, &text, 0644});
    std::error_code ec;
    std::filesystem::create_directories(argv[2], ec);
    if (Status s = base::WriteFilesAtomically(files); !s.ok() || ec) {
      ctx.Error(fmt::format("__man: {}", ec ? ec.message() : s.error().message));
      return kExitUsage;
    }
    return kExitOk;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    ctx.Out(app.help());
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    ctx.Out(app.help("", CLI::AppFormatMode::All));
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // Help on a subcommand arrives here too, as a CallForHelp from that subcommand.
    if (e.get_exit_code() == 0) {
      CLI::App* sel = Selected(&app);
      ctx.Out(sel->help());
      return kExitOk;
    }
    ctx.out_style.color = false;
    ctx.err_style.color = UseColor(color, io.err);
    ctx.Error(e.what());
    return kExitUsage;
  }
  ctx.out_style.color = UseColor(color, io.out);
  ctx.err_style.color = UseColor(color, io.err);
  ctx.verbosity = quiet ? -1 : verbose ? 1 : 0;
  spdlog::set_level(quiet ? spdlog::level::err : verbose ? spdlog::level::debug : spdlog::level::warn);

  if (version) {
    ctx.Out(VersionText());
    return kExitOk;
  }
  CLI::App* sel = Selected(&app);
  std::vector<std::string> extras;
  if (!FreeArgumentApps().count(sel)) {
    extras = sel->remaining();
    if (extras.empty()) extras = app.remaining();
  } else {
    // A command that takes free words (hostlist expressions) still has flags: a word that starts
    // with '-' is a flag it does not know, never a name (no host name starts with '-'); before,
    // `hostlist expand --sep x` printed "--sep" as a name (#28 item 24).
    for (const CLI::App* at = sel; at != nullptr; at = at->get_parent()) {
      for (const std::string& w : at->remaining()) {
        if (w.size() > 1 && w[0] == '-') {
          extras.push_back(w);
          break;
        }
      }
      if (!extras.empty()) break;
    }
  }
  // The whole command path for the hint: "gpuforge hostlist expand", never "gpuforge expand".
  std::string path;
  for (const CLI::App* at = sel; at != nullptr; at = at->get_parent()) {
    path = at->get_parent() == nullptr ? "gpuforge" + path : " " + at->get_name() + path;
  }
  if (!extras.empty()) {
    ctx.Error(UnknownArgumentMessage(sel, extras.front()));
    ctx.Err(fmt::format("Run '{} --help' for usage.\n", path));
    return kExitUsage;
  }
  if (sel == &app) {
    ctx.Out(app.help());
    return kExitUsage;
  }
  if (!sel->get_subcommands({}).empty()) {
    // A command made of subcommands (hostlist, inventory) given none.
    ctx.Error(fmt::format("'{}' needs a command: {}", path, fmt::join(SubcommandNames(sel), ", ")));
    ctx.Err(fmt::format("Run '{} --help' for usage.\n", path));
    return kExitUsage;
  }
  for (std::size_t i = 0; i < runners.size(); ++i) {
    auto& [sub, runner] = runners[i];
    if (!sub->parsed()) continue;
    if (had_separator && !Commands()[i].takes_trailing) {
      ctx.Error(fmt::format("'{}' takes no command after --", sub->get_name()));
      return kExitUsage;
    }
    return runner(ctx);
  }
  return kExitUsage;
}

}  // namespace

int Run(int argc, const char* const* argv, Io io) {
  Context ctx;
  ctx.io = io;
  int code = Dispatch(ctx, argc, argv);
  // SIGPIPE is ignored (main.cc), so output lost to a closed or failing stdout shows here: say
  // so, and do not exit 0 for a result nobody received (issue #12, item 8).
  errno = 0;
  const bool flushed = std::fflush(io.out) == 0;
  if (!flushed || std::ferror(io.out) != 0) {
    const int e = ctx.output_errno != 0 ? ctx.output_errno : errno;
    ctx.Error(fmt::format("cannot write the output: {}", e != 0 ? std::strerror(e) : "write error"));
    if (code == kExitOk) code = kExitFindings;
  }
  return code;
}

}  // namespace gpuforge::cli
