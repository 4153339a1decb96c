// SPDX-License-Identifier: Apache-2.0
// `bai vfolder invite|invitations|accept|reject|leave|share|unshare|clone`: sharing folders and
// copying them. Results on stdout (ids, a table, or -o json); a clone waits for its background
// task unless --no-wait.
#include "bai/session_client.h"
#include "bai/vfolder_client.h"

#include "cli/commands/session_util.h"
#include "cli/commands/vfolder.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace bai::cli {
namespace {

using nlohmann::json;

// Ids or emails, one per line (or as `key` under -o json).
void PrintList(Context& ctx, char const* key, std::vector<std::string> const& items) {
  if (ctx.json()) {
    ctx.out() << json{{key, items}, {"exit_code", 0}}.dump() << "\n";
    return;
  }
  for (auto const& i : items) ctx.out() << i << "\n";
}

struct PeopleArgs {
  std::string folder;
  std::vector<std::string> emails;
  std::string permission = "rw";
};

struct CloneArgs {
  std::string folder;
  VFolderCloneRequest request;
  bool no_wait = false;
};

int RunClone(CloneArgs const& a, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  VFolderClient folders(*client);
  auto started = folders.Clone(a.folder, a.request);
  if (!started.ok()) return ReportError(ctx, started.status());
  json out = {{"id", started->id}, {"name", started->name}, {"task_id", started->task_id}};
  if (a.no_wait) {
    out["exit_code"] = 0;
    if (ctx.json()) {
      ctx.out() << out.dump() << "\n";
    } else {
      ctx.out() << started->id << "\n";
    }
    return 0;
  }
  SessionClient tasks(*client);
  auto last = tasks.FollowTask(started->task_id);
  if (!last.ok()) return ReportError(ctx, last.status());
  int code = last->Succeeded() ? kExitOk : kExitError;
  out["status"] = last->event;
  out["message"] = last->message;
  out["exit_code"] = code;
  if (ctx.json()) {
    ctx.out() << out.dump() << "\n";
  } else if (last->Succeeded()) {
    ctx.out() << started->id << "\n";
  }
  if (!last->Succeeded()) {
    ctx.err() << "error: the clone of " << a.folder << " failed"
              << (last->message.empty() ? "" : ": " + last->message) << "\n";
  }
  return code;
}

}  // namespace

void AddVFolderSharingCommands(CommandSet& set, CLI::App* noun) {
  auto& ctx = set.ctx();
  auto permission_option = [](CLI::App* cmd, std::string& into, char const* help) {
    cmd->add_option("--perm,--permission", into, help)->check(CLI::IsMember({"ro", "rw", "wd"}));
  };

  auto& inv = set.Keep<PeopleArgs>();
  auto* invite = noun->add_subcommand("invite", "Invite users to your folder: FOLDER EMAIL…");
  invite->add_option("FOLDER", inv.folder, "Folder")->required();
  invite->add_option("EMAILS", inv.emails, "Users' emails")->required();
  permission_option(invite, inv.permission, "ro, rw (default) or wd");
  set.OnRun(invite, [&inv, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto ids = f.Invite(inv.folder, inv.emails, inv.permission);
      if (!ids.ok()) return ids.status();
      PrintList(ctx, "invited_ids", *ids);
      return Status();
    });
  });

  auto& sent = set.Keep<bool>();
  auto* invitations =
      noun->add_subcommand("invitations", "Pending invitations to you (--sent: from you)");
  invitations->add_flag("--sent", sent, "Those you sent");
  set.OnRun(invitations, [&sent, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto list = f.Invitations(sent);
      if (!list.ok()) return list.status();
      if (ctx.json()) {
        json out = json::array();
        for (auto const& i : *list) {
          out.push_back({{"id", i.id},
                         {"vfolder_id", i.vfolder_id},
                         {"vfolder_name", i.vfolder_name},
                         {"inviter", i.inviter},
                         {"invitee", i.invitee},
                         {"perm", i.permission},
                         {"state", i.state},
                         {"created_at", i.created_at}});
        }
        ctx.out() << json{{"invitations", out}, {"exit_code", 0}}.dump() << "\n";
        return Status();
      }
      if (list->empty()) {
        if (ctx.stdout_tty()) ctx.out() << "no pending invitations\n";
        return Status();
      }
      std::vector<std::vector<std::string>> rows{
          {"ID", "FOLDER", sent ? "INVITEE" : "INVITER", "PERM", "CREATED"}};
      for (auto const& i : *list) {
        rows.push_back({i.id, i.vfolder_name, sent ? i.invitee : i.inviter, i.permission,
                        i.created_at.substr(0, 19)});
      }
      PrintTable(ctx, rows);
      return Status();
    });
  });

  auto add_by_id = [&](char const* verb, char const* help, char const* words,
                       Status (VFolderClient::*call)(std::string const&) const) {
    auto& ids = set.Keep<std::vector<std::string>>();
    auto* cmd = noun->add_subcommand(verb, help);
    cmd->add_option("IDS", ids, "Invitation ids")->required();
    set.OnRun(cmd, [&ids, &ctx, call, words] {
      return WithFolders(ctx, [&](VFolderClient& f) -> Status {
        for (auto const& id : ids) {
          if (auto s = (f.*call)(id); !s.ok()) return s;
        }
        PrintDone(ctx, std::string(words) + " " + std::to_string(ids.size()) + " invitation" +
                           (ids.size() == 1 ? "" : "s"));
        return Status();
      });
    });
  };
  add_by_id("accept", "Accept invitations: ID…", "accepted", &VFolderClient::AcceptInvitation);
  add_by_id("reject", "Reject invitations to you, or cancel ones you sent: ID…", "ended",
            &VFolderClient::DeleteInvitation);

  struct LeaveArgs {
    std::string folder, user;
  };
  auto& lv = set.Keep<LeaveArgs>();
  auto* leave = noun->add_subcommand("leave", "Leave a folder shared with you");
  leave->add_option("FOLDER", lv.folder, "Folder")->required();
  leave->add_option("--user", lv.user, "Owner: remove this user (UUID) instead");
  set.OnRun(leave, [&lv, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto s = f.Leave(lv.folder, lv.user);
      if (s.ok()) PrintDone(ctx, "left " + lv.folder);
      return s;
    });
  });

  auto& sh = set.Keep<PeopleArgs>();
  auto* share = noun->add_subcommand(
      "share", "Admins: give project members a permission on a project folder: FOLDER EMAIL…");
  share->add_option("FOLDER", sh.folder, "Project folder")->required();
  share->add_option("EMAILS", sh.emails, "Members' emails")->required();
  permission_option(share, sh.permission, "ro, rw (default) or wd");
  set.OnRun(share, [&sh, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto done = f.Share(sh.folder, sh.emails, sh.permission);
      if (!done.ok()) return done.status();
      PrintList(ctx, "shared_emails", *done);
      return Status();
    });
  });

  auto& ush = set.Keep<PeopleArgs>();
  auto* unshare =
      noun->add_subcommand("unshare", "Admins: take back members' own permission: FOLDER EMAIL…");
  unshare->add_option("FOLDER", ush.folder, "Project folder")->required();
  unshare->add_option("EMAILS", ush.emails, "Members' emails")->required();
  set.OnRun(unshare, [&ush, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto done = f.Unshare(ush.folder, ush.emails);
      if (!done.ok()) return done.status();
      PrintList(ctx, "unshared_emails", *done);
      return Status();
    });
  });

  auto& cl = set.Keep<CloneArgs>();
  auto* clone = noun->add_subcommand(
      "clone", "Copy a folder into a new folder of yours: FOLDER TARGET (waits unless --no-wait)");
  clone->add_option("FOLDER", cl.folder, "Folder to copy")->required();
  clone->add_option("TARGET", cl.request.target_name, "The new folder's name")->required();
  clone->add_option("--host", cl.request.target_host, "Storage host (default: the source's)");
  clone->add_option("--usage-mode", cl.request.usage_mode, "general, model or data")
      ->check(CLI::IsMember({"general", "model", "data"}));
  permission_option(clone, cl.request.permission, "ro, rw (default) or wd");
  clone->add_flag("--cloneable", cl.request.cloneable, "Others may clone the copy");
  clone->add_flag("--no-wait", cl.no_wait, "Print the task and return at once");
  set.OnRun(clone, [&cl, &ctx] { return RunClone(cl, ctx); });
}

}  // namespace bai::cli
