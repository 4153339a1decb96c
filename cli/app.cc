// SPDX-License-Identifier: Apache-2.0
// Assembles the command tree from the nouns' Add…Commands, parses, runs the chosen command.
#include "cli/app.h"

#include "cli/command_set.h"
#include "cli/commands/admin.h"
#include "cli/commands/api.h"
#include "cli/commands/completion.h"
#include "cli/commands/config.h"
#include "cli/commands/help.h"
#include "cli/commands/session.h"
#include "cli/commands/session_util.h"
#include "cli/commands/version.h"
#include "cli/commands/vfolder.h"
#include "cli/context.h"
#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <string_view>

namespace bai::cli {
namespace {

// Usage lines name the whole command as typed: "Usage: bai session create …" (CLI11 names only
// the last word).
class PathFormatter : public CLI::Formatter {
 public:
  std::string make_usage(CLI::App const* app, std::string /*name*/) const override {
    std::string path;
    for (CLI::App const* a = app; a != nullptr; a = a->get_parent()) {
      path = a->get_name() + (path.empty() ? "" : " " + path);
    }
    return CLI::Formatter::make_usage(app, path);
  }
};

enum class Noun { kAll, kRootHelp, kVersion, kConfig, kApi, kSession, kVFolder, kAdmin };

// The noun whose commands the first word after the global options names; kRootHelp for the
// root's own help (`bai`, `bai --help`), which shows only the root's commands.
Noun NounOf(int argc, char** argv) {
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word == "-o" || word == "--output" || word == "--profile" || word == "--endpoint") {
      ++i;  // and its value
      continue;
    }
    if (word == "-h" || word == "--help") {
      help = true;
      continue;
    }
    if (!word.empty() && word[0] == '-') {
      // --debug, --output=json, -ojson; --help and anything unknown: the whole tree.
      if (word == "--debug" || word.rfind("--output=", 0) == 0 ||
          word.rfind("--profile=", 0) == 0 || word.rfind("--endpoint=", 0) == 0 ||
          (word.size() > 2 && word.rfind("-o", 0) == 0)) {
        continue;
      }
      return Noun::kAll;
    }
    if (word == "version") return Noun::kVersion;
    if (word == "config") return Noun::kConfig;
    if (word == "api") return Noun::kApi;
    if (word == "session" || word == "run" || word == "ps" || word == "exec" || word == "logs" ||
        word == "rm" || word == "wait" || word == "shell" || word == "app") {
      return Noun::kSession;
    }
    if (word == "vfolder" || word == "vf" || word == "cp") return Noun::kVFolder;
    if (word == "admin" || word == "user" || word == "keypair" || word == "dotfile" ||
        word == "template") {
      return Noun::kAdmin;
    }
    return Noun::kAll;
  }
  return help || argc == 1 ? Noun::kRootHelp : Noun::kAll;
}

}  // namespace

namespace {

// The command tree is built for one run: tearing it down (thousands of small objects) was a
// measurable part of a short command's time (issue 43, item 14), so a release build leaves it
// to the process's exit. Sanitizer builds free it, so that leak checks see everything else.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kFreeTree = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kFreeTree = true;
#else
constexpr bool kFreeTree = false;
#endif
#else
constexpr bool kFreeTree = false;
#endif

struct Tree {
  explicit Tree(Context& ctx)
      : app("bai: the Backend.AI command-line tool", "bai"), set(app, ctx) {}
  CLI::App app;
  CommandSet set;
};

int Run(Tree& tree, Context& ctx, int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err, std::istream& in,
         std::shared_ptr<Transport> transport) {
  Context ctx(out, err, in, ::isatty(STDOUT_FILENO) == 1, ::isatty(STDIN_FILENO) == 1);
  ctx.set_transport(std::move(transport));
  auto* tree = new Tree(ctx);
  int rc = Run(*tree, ctx, argc, argv, out, err);
  if (kFreeTree) delete tree;
  return rc;
}

namespace {

int Run(Tree& tree, Context& ctx, int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App& app = tree.app;
  app.formatter(std::make_shared<PathFormatter>());
  app.fallthrough();
  app.require_subcommand(0, 1);
  app.footer("Run `bai help exit-codes` for exit codes, `bai help environment` for settings.");
  auto& g = ctx.globals();
  app.add_option("-o,--output", g.output, "Output format: table, json, or csv (tables only)")
      ->check(CLI::IsMember({"json", "table", "csv"}));
  app.add_flag("--debug", g.debug, "Log requests and responses to stderr (secrets redacted)");
  app.add_option("--profile", g.profile, "Configuration profile to use");
  app.add_option("--endpoint", g.endpoint, "Manager URL (overrides profile and environment)");

  // Each noun adds its own commands: only the named one's when the first word names one (the
  // tree is a measurable part of a command's start-up), every noun's for help, completion, no
  // command or a word no noun knows (so the usage errors and help stay whole).
  CommandSet& set = tree.set;
  auto noun = NounOf(argc, argv);
  if (noun == Noun::kRootHelp) set.set_names_only(true);
  switch (noun) {
    case Noun::kVersion:
      AddVersionCommands(set);
      break;
    case Noun::kConfig:
      AddConfigCommands(set);
      break;
    case Noun::kApi:
      AddApiCommands(set);
      break;
    case Noun::kSession:
      AddSessionCommands(set);
      break;
    case Noun::kVFolder:
      AddVFolderCommands(set);
      break;
    case Noun::kAdmin:
      AddAdminCommands(set);
      AddUserCommands(set);
      AddDotfileCommands(set);
      AddTemplateCommands(set);
      break;
    case Noun::kAll:
    case Noun::kRootHelp:
      AddVersionCommands(set);
      AddConfigCommands(set);
      AddApiCommands(set);
      AddSessionCommands(set);
      AddVFolderCommands(set);
      AddAdminCommands(set);
      AddUserCommands(set);
      AddDotfileCommands(set);
      AddTemplateCommands(set);
      AddCompletionCommands(set);
      AddHelpCommands(set);
      break;
  }

  try {
    app.parse(argc, argv);
  } catch (CLI::CallForHelp const&) {
    // --help on the innermost subcommand that was named.
    CLI::App const* target = &app;
    while (!target->get_subcommands().empty()) target = target->get_subcommands().front();
    out << target->help();
    return 0;
  } catch (CLI::CallForAllHelp const&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (CLI::ParseError const& e) {
    // The innermost command named, as the user typed its path ("bai session info").
    std::string path = "bai";
    CLI::App const* target = &app;
    while (!target->get_subcommands().empty()) {
      target = target->get_subcommands().front();
      path += " " + target->get_name();
    }
    if (dynamic_cast<CLI::ExtrasError const*>(&e) != nullptr) {
      // In the order given (CLI11 lists them last first).
      std::string extras;
      for (CLI::App const* level = &app;;) {
        for (auto const& a : level->remaining()) extras += (extras.empty() ? "" : " ") + a;
        if (level->get_subcommands().empty()) break;
        level = level->get_subcommands().front();
      }
      err << "error: unexpected arguments: " << extras << "\n";
    } else {
      err << "error: " << e.what() << "\n";
    }
    err << "Run '" << path << " --help' for usage.\n";
    return kExitUsage;
  }
  if (!set.action()) {
    out << app.help();
    return 0;
  }
  int rc = set.action()();
  // Stopped by SIGTERM (a CI runner cancelling the job): 143, as a shell reports it; Ctrl-C 130.
  if (rc == kExitInterrupted && InterruptSignal() == SIGTERM) rc = 128 + SIGTERM;
  return rc;
}

}  // namespace

}  // namespace bai::cli
