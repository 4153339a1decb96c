// SPDX-License-Identifier: Apache-2.0
// `bai template`: session templates (ls, get, create, update, rm, run) through AdminClient.
#include "bai/admin_client.h"

#include "cli/commands/admin_util.h"
#include "cli/commands/session_util.h"
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

// A template named by its id or its name (unique among those the caller may see): its id.
StatusOr<std::string> TemplateId(AdminClient& a, std::string const& ref) {
  auto all = a.Templates(false);
  if (!all.ok()) return all.status();
  std::vector<std::string> named;
  for (auto const& t : *all) {
    if (t.id == ref) return t.id;
    if (t.name == ref) named.push_back(t.id);
  }
  if (named.size() == 1) return named.front();
  if (named.empty()) {
    // An id the caller may use but not list (a project's): the server decides. Anything else
    // names nothing (a real manager answers 500 for an id that is not one).
    std::string hex;
    for (char ch : ref) {
      if (ch != '-') hex += ch;
    }
    bool id =
        hex.size() == 32 && hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
    if (id) return ref;
    return Status(StatusCode::kNotFound, "no template named " + ref + " (nor with that id)");
  }
  std::string ids;
  for (auto const& id : named) ids += (ids.empty() ? "" : ", ") + id;
  return Status(StatusCode::kFailedPrecondition,
                "several templates are named " + ref + " (" + ids + "): give the id");
}

struct TemplateOptions {
  std::string id, file, project, format = "yaml", name, command;
  bool all = false;
};

// bai template ls
Status RunTemplateList(TemplateOptions& l, Context& ctx, AdminClient& a) {
  auto all = a.Templates(l.all);
  if (!all.ok()) return all.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"templates", json::parse(protocol::EncodeSessionTemplates(*all))}});
    return Status();
  }
  std::vector<std::vector<std::string>> rows{{"ID", "NAME", "IMAGE", "TYPE", "PROJECT", "OWNER"}};
  for (auto const& t : *all) {
    auto body = internal::ParseJson(t.template_json);
    std::string image = "-", type = "-";
    if (body && body->contains("spec") && (*body)["spec"].is_object()) {
      auto const& spec = (*body)["spec"];
      type = spec.value("session_type", "-");
      if (spec.contains("kernel") && spec["kernel"].is_object()) {
        image = spec["kernel"].value("image", "-");
      }
    }
    rows.push_back({t.id, t.name, image, type, t.group_name.empty() ? "-" : t.group_name,
                    t.user_email.empty() ? t.user : t.user_email});
  }
  PrintTable(ctx, rows);
  return Status();
}

// bai template get
Status RunTemplateGet(TemplateOptions& g, Context& ctx, AdminClient& a) {
  auto id = TemplateId(a, g.id);
  if (!id.ok()) return id.status();
  auto text = a.TemplateText(*id, ctx.json() ? "json" : "yaml");
  if (!text.ok()) return text.status();
  ctx.out() << *text;
  if (text->empty() || text->back() != '\n') ctx.out() << "\n";
  return Status();
}

// bai template rm
Status RunTemplateRemove(TemplateOptions& r, Context& ctx, AdminClient& a) {
  auto id = TemplateId(a, r.id);
  if (!id.ok()) return id.status();
  auto done = a.DeleteTemplate(*id);
  if (done.ok()) PrintDone(ctx, "template " + r.id + " deleted");
  return done;
}

// bai template run (create a session from it)
Status RunTemplateRun(TemplateOptions& s, Context& ctx, AdminClient& a) {
  std::map<std::string, std::string> overrides;
  if (!s.name.empty()) overrides["name"] = s.name;
  if (!s.command.empty()) overrides["startupCommand"] = s.command;
  auto id = TemplateId(a, s.id);
  if (!id.ok()) return id.status();
  auto made = a.CreateFromTemplate(*id, overrides);
  if (!made.ok()) return made.status();
  if (ctx.json()) {
    PrintJson(ctx,
              {{"session", {{"id", made->id}, {"name", made->name}, {"status", made->status}}}});
  } else {
    ctx.out() << made->name << "\n";
  }
  return Status();
}
// A template's text from -f FILE or standard input.
StatusOr<std::string> ReadPayload(TemplateOptions const& f, Context& ctx) {
  if (!f.file.empty()) {
    std::ifstream in(f.file, std::ios::binary);
    if (!in) return Status(StatusCode::kNotFound, "cannot read " + f.file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  if (ctx.stdin_tty()) {
    return Status(StatusCode::kInvalidArgument, "give the template with -f FILE, or pipe it in");
  }
  return std::string(std::istreambuf_iterator<char>(ctx.in()), {});
}

// bai template create: prints the new ids.
Status RunTemplateCreate(TemplateOptions& c, Context& ctx, AdminClient& a) {
  auto payload = ReadPayload(c, ctx);
  if (!payload.ok()) return payload.status();
  auto ids = a.CreateTemplates(*payload, c.project);
  if (!ids.ok()) return ids.status();
  if (ctx.json()) {
    PrintJson(ctx, {{"ids", *ids}});
  } else {
    for (auto const& id : *ids) ctx.out() << id << "\n";
  }
  return Status();
}

// bai template update
Status RunTemplateUpdate(TemplateOptions& u, Context& ctx, AdminClient& a) {
  auto payload = ReadPayload(u, ctx);
  if (!payload.ok()) return payload.status();
  auto id = TemplateId(a, u.id);
  if (!id.ok()) return id.status();
  auto done = a.UpdateTemplate(*id, *payload);
  if (done.ok()) PrintDone(ctx, "template " + u.id + " updated");
  return done;
}

}  // namespace

void AddTemplateCommands(CommandSet& set) {
  auto& ctx = set.ctx();
  auto* noun = set.root().add_subcommand(
      "template", "Session templates: a session's image, command, resources and folders, stored");
  if (set.names_only()) return;
  noun->require_subcommand(1);
  auto& l = set.Keep<TemplateOptions>();
  auto* ls = noun->add_subcommand("ls", "List your templates");
  ls->alias("list");
  ls->add_flag("-a,--all", l.all, "Every template you may manage (admins: the domain's)");
  OnAdminRun(set, ls, [&l, &ctx](AdminClient& a) { return RunTemplateList(l, ctx, a); });

  auto& g = set.Keep<TemplateOptions>();
  auto* get = noun->add_subcommand("get", "Print a template (YAML; -o json: JSON)");
  get->add_option("TEMPLATE", g.id, "The template's id or name")->required();
  OnAdminRun(set, get, [&g, &ctx](AdminClient& a) { return RunTemplateGet(g, ctx, a); });

  auto& c = set.Keep<TemplateOptions>();
  auto* create = noun->add_subcommand(
      "create", "Store a template (YAML or JSON) from -f FILE or standard input; prints its id");
  create->add_option("-f,--file", c.file, "The template file");
  create->add_option("--project", c.project, "The project it belongs to (default: default)");
  OnAdminRun(set, create, [&c, &ctx](AdminClient& a) { return RunTemplateCreate(c, ctx, a); });

  auto& u = set.Keep<TemplateOptions>();
  auto* update =
      noun->add_subcommand("update", "Replace a template from -f FILE or standard input");
  update->add_option("TEMPLATE", u.id, "The template's id or name")->required();
  update->add_option("-f,--file", u.file, "The template file");
  OnAdminRun(set, update, [&u, &ctx](AdminClient& a) { return RunTemplateUpdate(u, ctx, a); });

  auto& r = set.Keep<TemplateOptions>();
  auto* rm = noun->add_subcommand("rm", "Delete a template");
  rm->add_option("TEMPLATE", r.id, "The template's id or name")->required();
  OnAdminRun(set, rm, [&r, &ctx](AdminClient& a) { return RunTemplateRemove(r, ctx, a); });

  auto& s = set.Keep<TemplateOptions>();
  auto* run = noun->add_subcommand(
      "run", "Queue a session from a template; prints its name (follow it with bai logs -f)");
  run->add_option("TEMPLATE", s.id, "The template's id or name")->required();
  run->add_option("-n,--name", s.name, "The session's name");
  run->add_option("-c,--command", s.command, "A command instead of the template's");
  OnAdminRun(set, run, [&s, &ctx](AdminClient& a) { return RunTemplateRun(s, ctx, a); });
}

}  // namespace bai::cli
