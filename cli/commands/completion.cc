// SPDX-License-Identifier: Apache-2.0
#include "cli/commands/completion.h"

#include "cli/exit_codes.h"

#include <CLI/CLI.hpp>

#include <ostream>

namespace bai::cli {
namespace {

CommandNode Describe(CLI::App const& app) {
  CommandNode node;
  node.name = app.get_name();
  for (CLI::Option const* opt : app.get_options()) {
    if (opt->nonpositional()) {
      for (auto const& s : opt->get_snames()) node.flags.push_back("-" + s);
      for (auto const& l : opt->get_lnames()) node.flags.push_back("--" + l);
    }
  }
  for (CLI::App const* sub : app.get_subcommands({})) node.children.push_back(Describe(*sub));
  return node;
}

std::string Join(std::vector<std::string> const& words) {
  std::string out;
  for (auto const& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
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
         "  local words\n"
         "  case \"$path\" in\n";
  Walk(root, "", [&](CommandNode const& node, std::string const& path) {
    auto words = ChildNames(node);
    words.insert(words.end(), node.flags.begin(), node.flags.end());
    words.insert(words.end(), root.flags.begin(), root.flags.end());
    out << "    \"" << path << "\") words=\"" << Join(words) << "\" ;;\n";
  });
  out << "  esac\n"
         "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
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
    auto words = ChildNames(node);
    words.insert(words.end(), node.flags.begin(), node.flags.end());
    words.insert(words.end(), root.flags.begin(), root.flags.end());
    out << "    \"" << path << "\") candidates=(" << Join(words) << ") ;;\n";
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

void AddCompletionCommands(CommandSet& set) {
  auto& shell = set.Keep<std::string>();
  auto* completion = set.root().add_subcommand("completion", "Print a shell completion script");
  completion->add_option("SHELL", shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  set.OnRun(completion,
            [&set, &shell] { return RunCompletion(shell, Describe(set.root()), set.ctx()); });
}

}  // namespace bai::cli
