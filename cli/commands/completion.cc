// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/completion.h"

#include "bai/session_client.h"
#include "bai/vfolder_client.h"

#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

namespace bai::cli {
namespace {

// What a command's arguments name, read from its first positional: SESSION a session, FOLDER
// a folder; the two `cp`s take SESSION:PATH or FOLDER:PATH and local paths.
std::string NamesFor(CLI::App const& app) {
  if (app.get_name() == "cp") {
    bool session = app.get_parent() && app.get_parent()->get_name() == "session";
    return session ? "session-places" : "folder-places";
  }
  for (CLI::Option const* opt : app.get_options()) {
    if (!opt->get_positional()) continue;
    if (opt->get_name() == "SESSION") return "sessions";
    if (opt->get_name() == "FOLDER") return "folders";
    return "";
  }
  return "";
}

CommandNode Describe(CLI::App const& app) {
  CommandNode node;
  node.name = app.get_name();
  node.names = NamesFor(app);
  for (CLI::Option const* opt : app.get_options()) {
    if (opt->nonpositional()) {
      for (auto const& s : opt->get_snames()) node.flags.push_back("-" + s);
      for (auto const& l : opt->get_lnames()) node.flags.push_back("--" + l);
    }
  }
  for (CLI::App const* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden (__complete)
    node.children.push_back(Describe(*sub));
  }
  return node;
}

std::string Join(std::vector<std::string> const& words) {
  std::string out;
  for (auto const& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// A node's words: its subcommands, its flags, then the global flags, each once.
std::vector<std::string> Words(CommandNode const& node, CommandNode const& root) {
  std::vector<std::string> words;
  auto add = [&words](std::string const& w) {
    if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  };
  for (auto const& c : node.children) add(c.name);
  for (auto const& f : node.flags) add(f);
  for (auto const& f : root.flags) add(f);
  return words;
}

// Visits every node with its path of command names ("" for the root, "config set", …).
template <typename F>
void Walk(CommandNode const& node, std::string const& path, F const& f) {
  f(node, path);
  for (auto const& child : node.children) {
    Walk(child, path.empty() ? child.name : path + " " + child.name, f);
  }
}

std::vector<std::string> ChildNames(CommandNode const& node) {
  std::vector<std::string> names;
  for (auto const& c : node.children) names.push_back(c.name);
  return names;
}

void Bash(CommandNode const& root, std::ostream& out) {
  out << "# bash completion for bai; load with: source <(bai completion bash)\n"
         "_bai() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" i w\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    w=\"${COMP_WORDS[i]}\"\n"
         "    [[ $w == -* ]] && continue\n"
         "    case \"${path:+$path }$w\" in\n";
  Walk(root, "", [&](CommandNode const&, std::string const& path) {
    if (!path.empty()) out << "      \"" << path << "\") path=\"" << path << "\" ;;\n";
  });
  out << "    esac\n"
         "  done\n"
         "  local words names=\"\"\n"
         "  case \"$path\" in\n";
  Walk(root, "", [&](CommandNode const& node, std::string const& path) {
    out << "    \"" << path << "\") words=\"" << Join(Words(node, root)) << "\"";
    if (!node.names.empty()) out << "; names=" << node.names;
    out << " ;;\n";
  });
  out << "  esac\n"
         "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "  # Names from the manager (sessions, folders), and local paths where cp takes them.\n"
         "  if [[ -n $names && $cur != -* ]]; then\n"
         "    COMPREPLY+=($(compgen -W \"$(\"${COMP_WORDS[0]}\" __complete \"$names\" "
         "2>/dev/null)\" -- "
         "\"$cur\"))\n"
         "    [[ $names == *-places ]] && COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -F _bai bai\n";
}

void Zsh(CommandNode const& root, std::ostream& out) {
  out << "#compdef bai\n"
         "# zsh completion for bai; load with: source <(bai completion zsh)\n"
         "_bai() {\n"
         "  local path=\"\" w i\n"
         "  for ((i = 2; i < CURRENT; i++)); do\n"
         "    w=\"${words[i]}\"\n"
         "    [[ $w == -* ]] && continue\n"
         "    case \"${path:+$path }$w\" in\n";
  Walk(root, "", [&](CommandNode const&, std::string const& path) {
    if (!path.empty()) out << "      \"" << path << "\") path=\"" << path << "\" ;;\n";
  });
  out << "    esac\n"
         "  done\n"
         "  local -a candidates\n"
         "  case \"$path\" in\n";
  Walk(root, "", [&](CommandNode const& node, std::string const& path) {
    out << "    \"" << path << "\") candidates=(" << Join(Words(node, root)) << ")";
    if (!node.names.empty()) {
      out << "; [[ $PREFIX != -* ]] && candidates+=(${(f)\"$(bai __complete " << node.names
          << " 2>/dev/null)\"})";
      if (node.names.find("-places") != std::string::npos) out << "; _files";
    }
    out << " ;;\n";
  });
  out << "  esac\n"
         "  compadd -- $candidates\n"
         "}\n"
         "if [[ $funcstack[1] == _bai ]]; then _bai \"$@\"; else compdef _bai bai; fi\n";
}

void Fish(CommandNode const& root, std::ostream& out) {
  out << "# fish completion for bai; load with: bai completion fish | source\n"
         "complete -c bai -f\n";
  for (auto const& flag : root.flags) {
    if (flag.rfind("--", 0) == 0) out << "complete -c bai -l " << flag.substr(2) << "\n";
  }
  Walk(root, "", [&](CommandNode const& node, std::string const& path) {
    // A node's children are offered once every word of its path has been seen and none of the
    // children has.
    std::string condition;
    if (path.empty()) {
      condition = "__fish_use_subcommand";
    } else {
      condition = "__fish_seen_subcommand_from " + path.substr(path.rfind(' ') + 1);
    }
    auto children = ChildNames(node);
    if (!children.empty()) {
      out << "complete -c bai -n '" << condition << "; and not __fish_seen_subcommand_from "
          << Join(children) << "' -a '" << Join(children) << "'\n";
    }
    if (!node.names.empty()) {
      out << "complete -c bai -n '" << condition << "' -a '(bai __complete " << node.names
          << " 2>/dev/null)'" << (node.names.find("-places") != std::string::npos ? " -F" : "")
          << "\n";
    }
    if (!path.empty()) {
      for (auto const& flag : node.flags) {
        if (flag.rfind("--", 0) == 0) {
          out << "complete -c bai -n '" << condition << "' -l " << flag.substr(2) << "\n";
        }
      }
    }
  });
}

}  // namespace

int RunCompletion(std::string const& shell, CommandNode const& root, Context& ctx) {
  if (shell == "bash") {
    Bash(root, ctx.out());
  } else if (shell == "zsh") {
    Zsh(root, ctx.out());
  } else if (shell == "fish") {
    Fish(root, ctx.out());
  } else {
    ctx.err() << "error: unsupported shell \"" << shell << "\" (bash, zsh or fish)\n";
    return kExitUsage;
  }
  return 0;
}

int RunCompletionNames(std::string const& kind, Context& ctx) {
  // Quiet whatever happens: a shell is waiting, and an error would land in its completions.
  auto client = ctx.MakeClient();
  if (!client.ok()) return 1;
  std::string suffix = kind.find("-places") != std::string::npos ? ":" : "";
  if (kind == "sessions" || kind == "session-places") {
    SessionListOptions list;
    list.statuses = {"PENDING", "SCHEDULED",  "PULLING",         "PREPARING",
                     "RUNNING", "RESTARTING", "RUNNING_DEGRADED"};
    list.limit = 500;
    auto sessions = SessionClient(*client).ListAll(list);
    if (!sessions.ok()) return 1;
    for (auto const& s : *sessions) ctx.out() << s.name << suffix << "\n";
    return 0;
  }
  if (kind == "folders" || kind == "folder-places") {
    auto folders = VFolderClient(*client).List();
    if (!folders.ok()) return 1;
    for (auto const& f : *folders) ctx.out() << f.name << suffix << "\n";
    return 0;
  }
  return kExitUsage;
}

void AddCompletionCommands(CommandSet& set) {
  auto& shell = set.Keep<std::string>();
  auto* completion = set.root().add_subcommand("completion", "Print a shell completion script");
  if (set.names_only()) return;
  completion->add_option("SHELL", shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  set.OnRun(completion,
            [&set, &shell] { return RunCompletion(shell, Describe(set.root()), set.ctx()); });

  // Hidden (no group): what the scripts call for names.
  auto& kind = set.Keep<std::string>();
  auto* names = set.root().add_subcommand("__complete", "Names for shell completion");
  names->group("");
  names->add_option("KIND", kind)->required();
  set.OnRun(names, [&set, &kind] { return RunCompletionNames(kind, set.ctx()); });
}

}  // namespace bai::cli
