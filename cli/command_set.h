// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cli/context.h"

#include <functional>
#include <memory>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace bai::cli {

/// What each noun's Add…Commands registers into (app.cc only assembles them): the CLI11 node to
/// add commands under, the context they run with, storage for their parsed options, and the one
/// action the parse selects. The run functions themselves never see the parser.
class CommandSet {
 public:
  CommandSet(CLI::App& root, Context& ctx) : root_(root), ctx_(ctx) {}
  CommandSet(CommandSet const&) = delete;
  CommandSet& operator=(CommandSet const&) = delete;

  CLI::App& root() { return root_; }
  /// Set for the root's own help (`bai`, `bai --help`): each noun adds its root-level commands
  /// with their descriptions and aliases, and returns before its verbs and options (the tree
  /// was most of that help's start-up, issue 43 item 14).
  bool names_only() const { return names_only_; }
  void set_names_only(bool on) { names_only_ = on; }
  Context& ctx() { return ctx_; }

  /// A fresh T that lives as long as this set: where a command's options are parsed into.
  template <typename T>
  T& Keep() {
    auto p = std::make_shared<T>();
    kept_.push_back(p);
    return *p;
  }

  /// When `command` is the one given, `run` runs once the whole line has parsed.
  void OnRun(CLI::App* command, std::function<int()> run);
  /// For a noun given without a verb: `run`, unless one of its verbs chose an action.
  void OnRunDefault(CLI::App* command, std::function<int()> run);

  /// The chosen action; empty when the line named no command.
  std::function<int()> const& action() const { return action_; }

 private:
  CLI::App& root_;
  Context& ctx_;
  bool names_only_ = false;
  std::vector<std::shared_ptr<void>> kept_;
  std::function<int()> action_;
};

}  // namespace bai::cli
