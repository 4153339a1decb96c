// SPDX-License-Identifier: Apache-2.0
// `bai dotfile`: files written into each new session's /home/work (one's own, a project's, a
// domain's) through AdminClient.
#include "bai/admin_client.h"

#include "cli/commands/admin_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "libbai/protocol/wire_json.h"
#include "libbai/util/json_parse.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace bai::cli {

using nlohmann::json;

namespace {

struct DotfileOptions {
  std::string path, file, data, perm = "644", project, domain;
  bool has_data = false;  ///< --data given (an empty one included)
};

AdminClient::DotfileOwner OwnerOf(DotfileOptions const& f) { return {f.project, f.domain}; }

void AddOwnerFlags(CLI::App* cmd, DotfileOptions& f) {
  cmd->add_option("--project", f.project, "A project's (admins write; members read)");
  cmd->add_option("--domain", f.domain, "A domain's (or the project's domain)");
}

// bai dotfile ls
Status RunDotfileList(DotfileOptions& l, Context& ctx, AdminClient& a) {
  auto all = a.Dotfiles(OwnerOf(l));
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"dotfiles", json::parse(protocol::EncodeDotfiles(*all))}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{{"PATH", "PERMISSION", "SIZE"}};
  for (auto const& d : *all) rows.push_back({d.path, d.permission, std::to_string(d.data.size())});
  PrintTable(ctx, rows);
  return Status();
}

// bai dotfile get
Status RunDotfileGet(DotfileOptions& g, Context& ctx, AdminClient& a) {
  auto all = a.Dotfiles(OwnerOf(g));
  if (!all.ok()) return all.status();
  std::string wanted = g.path.rfind("/home/work/", 0) == 0 ? g.path.substr(11) : g.path;
  for (auto const& d : *all) {
    if (d.path != wanted) continue;
    if (ctx.json()) {
      PrintJson(ctx, {{"dotfile", json::parse(protocol::EncodeDotfiles({d}))[0]}});
    } else {
      ctx.out() << d.data;
    }
    return Status();
  }
  return Status(StatusCode::kNotFound, "no dotfile " + g.path);
}

// The contents `set` writes: -f FILE, --data, or standard input.
StatusOr<std::string> DotfileContents(DotfileOptions const& s, Context& ctx) {
  if (!s.file.empty()) {
    std::ifstream in(s.file, std::ios::binary);
    if (!in) return Status(StatusCode::kNotFound, "cannot read " + s.file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  if (s.has_data) return s.data;
  if (ctx.stdin_tty()) {
    return Status(StatusCode::kInvalidArgument,
                  "give the contents with -f FILE or --data, or pipe them in");
  }
  return std::string(std::istreambuf_iterator<char>(ctx.in()), {});
}

// bai dotfile set: created, or replaced when it exists.
Status RunDotfileSet(DotfileOptions& s, Context& ctx, AdminClient& a) {
  auto contents = DotfileContents(s, ctx);
  if (!contents.ok()) return contents.status();
  protocol::Dotfile d{s.path, s.perm, *contents};
  auto made = a.PutDotfile(d, false, OwnerOf(s));
  if (made.code() == StatusCode::kInvalidArgument &&
      made.message().find("already exists") != std::string::npos) {
    made = a.PutDotfile(d, true, OwnerOf(s));
  }
  if (made.ok()) PrintDone(ctx, "dotfile " + d.path + " set");
  return made;
}

// bai dotfile rm
Status RunDotfileRemove(DotfileOptions& r, Context& ctx, AdminClient& a) {
  auto done = a.DeleteDotfile(r.path, OwnerOf(r));
  if (done.ok()) PrintDone(ctx, "dotfile " + r.path + " deleted");
  return done;
}

}  // namespace

void AddDotfileCommands(CommandSet& set) {
  auto& ctx = set.ctx();
  auto* noun = set.root().add_subcommand(
      "dotfile",
      "Files written into each new session's /home/work: yours, a project's, a domain's");
  if (set.names_only()) return;
  noun->require_subcommand(1);

  auto& l = set.Keep<DotfileOptions>();
  auto* ls = noun->add_subcommand("ls", "List dotfiles");
  ls->alias("list");
  AddOwnerFlags(ls, l);
  OnAdminRun(set, ls, [&l, &ctx](AdminClient& a) { return RunDotfileList(l, ctx, a); });

  auto& g = set.Keep<DotfileOptions>();
  auto* get = noun->add_subcommand("get", "Print a dotfile's contents");
  get->add_option("PATH", g.path, "Its path (.bashrc, /home/work/.vimrc)")->required();
  AddOwnerFlags(get, g);
  OnAdminRun(set, get, [&g, &ctx](AdminClient& a) { return RunDotfileGet(g, ctx, a); });

  auto& s = set.Keep<DotfileOptions>();
  auto* put = noun->add_subcommand(
      "set", "Create or replace a dotfile from a file, --data, or standard input");
  put->add_option("PATH", s.path, "Its path in /home/work (.bashrc)")->required();
  auto* from = put->add_option("-f,--file", s.file, "Read the contents from this file");
  put->add_option("--data", s.data, "The contents")->excludes(from);
  put->add_option("--perm", s.perm, "Permission bits, three octal digits")->capture_default_str();
  AddOwnerFlags(put, s);
  OnAdminRun(set, put, [&s, &ctx, put](AdminClient& a) {
    s.has_data = put->count("--data") > 0;
    return RunDotfileSet(s, ctx, a);
  });

  auto& r = set.Keep<DotfileOptions>();
  auto* rm = noun->add_subcommand("rm", "Delete a dotfile");
  rm->add_option("PATH", r.path, "Its path")->required();
  AddOwnerFlags(rm, r);
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunDotfileRemove(r, ctx, a); });
}

}  // namespace bai::cli
