// SPDX-License-Identifier: Apache-2.0
// Background tasks (PROTOCOL.md §5.6): the event stream that follows one, and the operation that
// runs as one in this manager, committing a session's kernel to a tar archive on its agent.
#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"

#include "libbai/util/json_parse.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/agent_relay.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/state/bgtasks.h"
#include "server-reference/manager/state/sessions.h"
#include "server-reference/manager/vfolders/storage_links.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <ctime>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;

namespace {

// A file name on the agent, no path: letters, digits, '.', '_', '-', not starting with '.'.
bool ValidCommitFilename(std::string const& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  for (unsigned char c : name) {
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// NAME-YYYYmmddTHHMMSSZ-TASK.tar: the task's id (unique) keeps two commits in the same second
// apart (they collided, and the second failed "exists").
std::string DefaultCommitFilename(std::string const& session_name, std::string const& task_id) {
  return session_name + "-" + protocol::FormatStamp(std::chrono::system_clock::now()) + "-" +
         task_id.substr(0, 8) + ".tar";
}

// What the task routes share.
struct TaskEnv {
  SessionStore& sessions;
  AgentRegistry& agents;
  BackgroundTaskStore& tasks;
  EventHub& hub;
  vfolders::StorageLinks const& links;
};

// GET /events/background-task: the events of one task. Unknown, expired or someone else's
// task: 404 before the stream opens (DECISIONS.md; 24.09 opened and closed an empty stream).
std::optional<HttpResponse> FollowTask(TaskEnv& env, RequestContext& ctx,
                                       LateExchange const& exchange) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return ProblemResponse(p.status());
  auto id = p->String({"taskId", "task_id"}, true);
  if (auto st = p->Check(); !st.ok()) return ProblemResponse(st);
  auto task = env.tasks.Get(*id);
  if (!task.ok()) return ProblemResponse(task.status());
  if (!*task ||
      ((*task)->access_key != ctx.identity->access_key && !ctx.identity->IsSuperadmin())) {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kObjectNotFound, "No such background task."));
  }
  exchange->StartEventStream(ctx.response_headers);
  env.hub.FollowTask(exchange, **task);
  return std::nullopt;
}

// Where a commit goes: the session's main kernel, no commit of it running, and for bai's
// `folder` the owner's writable folder.
struct CommitTarget {
  std::string kernel;        ///< the session's main kernel
  std::string directory;     ///< the folder's host directory ("": on the agent)
  std::string shown_prefix;  ///< "FOLDER:" for a folder
};

StatusOr<CommitTarget> CommitTargetOf(TaskEnv& env, RequestContext& ctx, SessionRecord const& s,
                                      std::optional<std::string> const& folder) {
  CommitTarget t;
  auto kernel = env.sessions.MainKernelId(s.id);
  if (!kernel.ok()) return kernel.status();
  t.kernel = *kernel;
  auto running = env.tasks.Ongoing("commit", s.id);
  if (!running.ok()) return running.status();
  if (*running) {
    return MakeProblemStatus(
        ProblemType::kInvalidApiParams,
        "A commit of this session is already running (task " + (*running)->id + ").");
  }
  // Into a folder: the owner's, writable by them, resolved as a mount would be.
  if (folder) {
    auto found =
        ResolveOwnerFolders(ctx, s, env.links, {vfolders::MountRequest{*folder, {}, "rw"}});
    if (!found.ok()) return found.status();
    t.directory = found->front().second;
    t.shown_prefix = found->front().first.folder.name + ":";
  }
  return t;
}

// The agent's answer to a commit, as the client's response; a failed commit fails its task.
HttpResponse CommitAnswered(BackgroundTaskStore& tasks, std::string const& task_id,
                            std::string const& kernel_id, std::string const& shown,
                            StatusOr<std::string> const& result) {
  auto reply = result.ok() ? server::agent_protocol::DecodeCommitReply(*result)
                           : StatusOr<server::agent_protocol::CommitReply>(result.status());
  if (reply.ok() && reply->ok) {
    // In a folder, the path is FOLDER:FILE (what `bai cp` takes), never the host's.
    return JsonResponse({{"bgtask_id", task_id},
                         {"kernel", kernel_id},
                         {"path", shown.empty() ? reply->path : shown}},
                        201);
  }
  std::string why = AgentFailure(result, reply, "refused");
  (void)tasks.Finish(task_id, protocol::TaskStatus::kFailed, why);
  if (!result.ok()) return ProblemResponse(result.status());  // 503 when the agent is elsewhere
  bool theirs = reply.ok() && reply->client_error;
  return ProblemResponse(
      MakeProblemStatus(theirs ? ProblemType::kInvalidApiParams : ProblemType::kInternalServerError,
                        "The agent cannot commit: " + why));
}

// POST /session/{id}/commit: the agent archives what the kernel changed (its writable
// directories) into a tar file on the agent, or (bai's `folder`) into one of the session
// owner's folders where `bai vfolder download` fetches it and `rm-files` deletes it; 201 at
// once with the task to follow, as Backend.AI answers.
std::optional<HttpResponse> Commit(TaskEnv& env, RequestContext& ctx,
                                   LateExchange const& exchange) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return ProblemResponse(p.status());
  auto filename = p->String({"filename", "fname"});
  (void)p->String({"login_session_token"});
  auto folder = p->String({"folder"});
  if (filename && !ValidCommitFilename(*filename)) {
    p->Fail("filename", "letters, digits, '.', '_' and '-' only, at most 128, no leading '.'");
  }
  if (auto st = p->Check(); !st.ok()) return ProblemResponse(st);
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  auto t = CommitTargetOf(env, ctx, *s, folder);
  if (!t.ok()) return ProblemResponse(t.status());
  auto task = env.tasks.Create("commit", ctx.identity->access_key, s->id, 0);
  if (!task.ok()) return ProblemResponse(task.status());
  server::agent_protocol::CommitKernel message{
      "", s->id, task->id, filename.value_or(DefaultCommitFilename(s->name, task->id)),
      t->directory};
  std::string shown = t->shown_prefix.empty() ? "" : t->shown_prefix + message.filename;
  AnswerFromAgent(env.agents, *s->agent_id, std::move(message), std::chrono::seconds(30), ctx,
                  exchange,
                  [&tasks = env.tasks, task_id = task->id, kernel_id = t->kernel,
                   shown](StatusOr<std::string> const& result) {
                    return CommitAnswered(tasks, task_id, kernel_id, shown, result);
                  });
  return std::nullopt;
}

// GET /session/{id}/commit: whether a commit of the session is running (PROTOCOL.md: "ongoing"
// or "ready").
StatusOr<HttpResponse> CommitStatus(TaskEnv& env, RequestContext& ctx) {
  auto s = ResolveSession(env.sessions, ctx, false);
  if (!s.ok()) return std::move(s).status();
  auto kernel = env.sessions.MainKernelId(s->id);
  if (!kernel.ok()) return std::move(kernel).status();
  auto running = env.tasks.Ongoing("commit", s->id);
  if (!running.ok()) return std::move(running).status();
  return JsonResponse({{"status", *running ? "ongoing" : "ready"}, {"kernel", *kernel}});
}

}  // namespace

void RegisterTaskRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents,
                        BackgroundTaskStore& tasks, EventHub& hub,
                        vfolders::StorageLinks const& links) {
  using L = AuthLevel;
  AddRoutes<TaskEnv>(api, std::make_shared<TaskEnv>(TaskEnv{sessions, agents, tasks, hub, links}),
                     {
                         {"GET", "/events/background-task", L::kUser, FollowTask},
                         {"POST", "/session/{id}/commit", L::kUser, Commit},
                         {"GET", "/session/{id}/commit", L::kUser, CommitStatus},
                     });
}

}  // namespace bai::manager
