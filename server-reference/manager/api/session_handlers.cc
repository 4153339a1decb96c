// SPDX-License-Identifier: Apache-2.0
// Session routes (PROTOCOL.md §5) and the session event stream (§5.6).
#include "bai/protocol/errors.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/session_wire.h"
#include "bai/protocol/signing.h"

#include "libbai/protocol/wire_json.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/agent_relay.h"
#include "server-reference/manager/api/dialect.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/scheduler/devices.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/domains.h"
#include "server-reference/manager/state/images.h"
#include "server-reference/manager/state/registries.h"
#include "server-reference/manager/state/sessions.h"
#include "server-reference/manager/vfolders/mounts.h"
#include "server-reference/manager/vfolders/storage_links.h"
#include "server-reference/storage/storage_api.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace bai::manager {

using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using protocol::SessionStatus;
using server::HttpResponse;
using server::ProblemResponse;

namespace {

std::string IsoFromUnix(std::int64_t secs) {
  return IsoTime(std::chrono::system_clock::time_point(std::chrono::seconds(secs)));
}

HttpResponse CreatedResponse(SessionRecord const& s, std::string status, bool created) {
  return HttpResponse::Json(
      201, protocol::EncodeSessionCreateResult({s.id, s.name, std::move(status), created}));
}

struct CreateInput {
  protocol::SessionCreateRequest request;  ///< as decoded
  SessionRecord session;                   ///< what will be stored
};

// starts_at as an absolute time: a delay counts from now.
std::optional<std::string> StartTime(std::optional<std::string> const& starts_at) {
  if (!starts_at) return std::nullopt;
  if (auto rel = protocol::ParseDurationSeconds(*starts_at)) {
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return IsoFromUnix(now + *rel);
  }
  auto abs = protocol::ParseHttpDate(*starts_at);  // the decoder checked it is one or the other
  return abs ? std::optional(IsoFromUnix(abs->unix_seconds)) : std::nullopt;
}

// The record to store for a decoded request (ownership and placement come after).
SessionRecord RecordOf(protocol::SessionCreateRequest const& r) {
  SessionRecord s;
  s.id = GenerateUuid();
  s.name = r.name.empty() ? "s-" + s.id.substr(0, 8) : r.name;
  s.image = r.image;
  if (!r.architecture.empty()) s.architecture = r.architecture;
  s.type = r.type;
  s.tag = r.tag;
  s.startup_command = r.startup_command;
  s.bootstrap_script = r.bootstrap_script;
  s.callback_url = r.callback_url;
  s.priority = r.priority.value_or(10);
  s.starts_at = StartTime(r.starts_at);
  s.batch_timeout = r.batch_timeout_seconds;
  s.environ = r.environ;
  s.mounts = r.mounts;
  s.mount_map = r.mount_map;
  s.resource_opts = r.resource_opts;
  s.agent_list = r.agent_list;
  s.network = r.network;
  for (int port : r.preopen_ports) {
    s.service_ports.push_back(
        {std::to_string(port), "preopen", {port}, false, std::nullopt, {}, {}});
  }
  s.requested = protocol::DefaultSessionSlots();
  for (auto const& [slot, amount] : r.resources) s.requested[slot] = amount;
  return s;
}

// Whose session it is, and where: owner (admins may act for another keypair), domain, project,
// resource group, pinned agents, dependencies.
Status ResolvePlacement(RequestContext& ctx, CreateInput& in) {
  auto const& who = *ctx.identity;
  auto const& r = in.request;
  auto& s = in.session;
  // Ownership: admins may act for another keypair.
  s.access_key = who.access_key;
  s.user_id = who.user_id;
  s.domain_name = who.domain;
  if (r.owner_access_key && *r.owner_access_key != who.access_key) {
    auto kp = ActFor(who, ctx.store, *r.owner_access_key);
    if (!kp.ok()) return kp.status();
    s.access_key = *r.owner_access_key;
    s.user_id = kp->identity.user_id;
    s.domain_name = kp->identity.domain;
  }
  if (!r.domain.empty() && r.domain != s.domain_name) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such domain.");
  }
  // No script in the request: the owner's keypair's own (`/user-config/bootstrap-script`).
  if (!s.bootstrap_script || s.bootstrap_script->empty()) {
    auto stored = ctx.store.GetBootstrapScript(s.access_key);
    if (!stored.ok()) return stored.status();
    s.bootstrap_script = stored->empty() ? std::nullopt : std::optional(*std::move(stored));
  }
  auto group_id = ctx.store.ResolveProject(s.domain_name, s.user_id, r.group, who.IsSuperadmin());
  if (!group_id.ok()) return group_id.status();
  s.group_id = *group_id;
  Identity owner_identity = who;
  owner_identity.access_key = s.access_key;
  owner_identity.user_id = s.user_id;
  owner_identity.domain = s.domain_name;
  auto allowed = ctx.store.AllowedScalingGroups(owner_identity, s.group_id);
  if (!allowed.ok()) return allowed.status();
  if (r.scaling_group) {
    if (std::find(allowed->begin(), allowed->end(), *r.scaling_group) == allowed->end()) {
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such scaling group.");
    }
    s.scaling_group = *r.scaling_group;
  } else {
    if (allowed->empty())
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such scaling group.");
    s.scaling_group = allowed->front();
  }
  if (auto st = CheckAgentsKnown(ctx.store.db(), s.scaling_group, s.agent_list); !st.ok()) {
    return st;
  }
  SessionStore sessions(ctx.store.db());
  for (auto const& ref : r.dependencies) {
    // Dependencies are usually finished sessions: match dead ones too.
    auto dep = sessions.Resolve(ref, s.access_key, /*allow_dead=*/true);
    if (!dep.ok()) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams, "Input validation error",
                               json{{"dependencies", "no such session: " + ref}}.dump());
    }
    s.dependencies.push_back(dep->id);
  }
  return {};
}

// Decodes and checks a creation request (the wire codec checks the shape, this the caller's
// rights and what the cluster knows); fills `in` or returns the problem to answer.
// The least memory a kernel is given (the runtime, the kernel runner and an interpreter).
constexpr std::int64_t kMinKernelMemory = 64LL << 20;

Status ParseCreate(RequestContext& ctx, CreateInput& in) {
  if (auto frozen = ctx.store.RefuseWhileFrozen(); !frozen.ok()) return frozen;
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto const& who = *ctx.identity;
  // The slot types the cluster's agents report, read once, when a request names resources.
  std::optional<StatusOr<std::map<std::string, std::string>>> cluster;
  auto slot_types = [&](std::string const& slot) -> std::optional<protocol::SlotType> {
    if (!cluster) cluster = ctx.store.ClusterSlotTypes();
    if (cluster->ok()) {
      if (auto it = (*cluster)->find(slot); it != (*cluster)->end()) {
        return protocol::ParseSlotType(it->second).value_or(protocol::SlotType::kCount);
      }
    }
    return protocol::KnownSlotType(slot);
  };
  // The keys `config` takes depend on the caller's API version (24.09's creation_config_v2…v5).
  if (auto const* config = p->Raw({"config"})) {
    auto refused = RefusedConfigKeys(DialectOf(ctx.request), *config);
    if (!refused.empty()) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams, "Input validation error",
                               json(refused).dump());
    }
  }
  auto request = internal::SessionCreateRequestFromJson(p->values(), slot_types);
  if (cluster && !cluster->ok()) return cluster->status();
  if (!request.ok()) return std::move(request).status();
  in.request = *std::move(request);
  auto const& r = in.request;
  if (r.type == "system" && !who.IsSuperadmin()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, "Input validation error",
                             json{{"type", "must be interactive, batch or inference"}}.dump());
  }
  if (!r.agent_list.empty() && !who.IsSuperadmin()) {
    return MakeProblemStatus(ProblemType::kInsufficientPrivilege,
                             "Only superadmins may pick agents (config.agent_list).");
  }
  // GPU slots go on individual devices: whole devices, and fractions in steps of 0.01.
  for (auto const& [slot, amount] : r.resources) {
    bool whole =
        slot == scheduler::kCudaDeviceSlot && amount.units() % protocol::Decimal::kUnitsPerOne != 0;
    bool fraction = slot == scheduler::kCudaSharesSlot && !scheduler::OnShareQuantum(amount);
    if (whole || fraction) {
      return MakeProblemStatus(
          ProblemType::kInvalidApiParams, "Input validation error",
          json{{"resources." + slot,
                whole ? "whole devices only (an integer)" : "a multiple of 0.01 (one fGPU step)"}}
              .dump());
    }
  }
  in.session = RecordOf(r);
  // A kernel needs some CPU and enough memory to start at all: `cpu=0` ran charged nothing and
  // `mem=1` failed later with runc's own text. Refused now, naming the floor.
  auto const& asked = in.session.requested;
  if (auto cpu = asked.find("cpu"); cpu != asked.end() && !(protocol::Decimal() < cpu->second)) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams, "Input validation error",
                             json{{"resources.cpu", "must be more than 0"}}.dump());
  }
  if (auto mem = asked.find("mem");
      mem != asked.end() && mem->second < protocol::Decimal::FromInteger(kMinKernelMemory)) {
    return MakeProblemStatus(
        ProblemType::kInvalidApiParams, "Input validation error",
        json{{"resources.mem", "at least 64m (a kernel cannot start in less)"}}.dump());
  }
  return ResolvePlacement(ctx, in);
}

// Visibility of an event for a requester (PROTOCOL.md §5.6).
bool Visible(EventRecord const& e, Identity const& who) {
  if (who.IsSuperadmin()) return true;
  if (who.IsAdmin()) return e.domain_name == who.domain;
  return e.access_key == who.access_key;
}

// What the kernel routes share.
struct KernelEnv {
  SessionStore& sessions;
  AgentRegistry& agents;
};

// The agent's answer to an execute step, as the client's response.
HttpResponse Executed(StatusOr<std::string> const& result) {
  if (!result.ok()) return ProblemResponse(result.status());
  auto decoded = protocol::DecodeExecuteResult(*result);
  if (!decoded.ok()) {
    return ProblemResponse(MakeProblemStatus(
        ProblemType::kInternalServerError,
        "The agent answered with a malformed result: " + decoded.status().message()));
  }
  return HttpResponse::Json(200, "{\"result\":" + protocol::EncodeExecuteResult(*decoded) + "}");
}

// POST /session/{id}: one step of code execution, relayed to the session's agent.
std::optional<HttpResponse> Execute(KernelEnv& env, RequestContext& ctx,
                                    LateExchange const& exchange) {
  // The execute body is read as JSON whatever the method rules say (PROTOCOL.md §4.1).
  auto step = protocol::DecodeExecuteStep(ctx.request.body.empty() ? std::string_view("{}")
                                                                   : ctx.request.body);
  if (!step.ok()) return ProblemResponse(step.status());
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  if (step->run_id.empty()) {
    // 32 hex characters, as 24.09 generates.
    std::string uuid = GenerateUuid();
    uuid.erase(std::remove(uuid.begin(), uuid.end(), '-'), uuid.end());
    step->run_id = uuid;
  }
  (void)env.sessions.CountQuery(s->id);
  server::agent_protocol::Execute message;
  static_cast<protocol::ExecuteStep&>(message) = *std::move(step);
  message.session_id = s->id;
  AnswerFromAgent(env.agents, *s->agent_id, std::move(message), std::chrono::seconds(30), ctx,
                  exchange, Executed);
  return std::nullopt;
}

// PATCH /session/{id}: restart. RUNNING → RESTARTING while the agent replaces the kernel with a
// fresh one of the same spec, then RUNNING again; 204 once it runs (Backend.AI answers after
// the restart too).
std::optional<HttpResponse> Restart(KernelEnv& env, RequestContext& ctx,
                                    LateExchange const& exchange) {
  auto s = ResolveRunning(env.sessions, ctx, /*destructive=*/true);
  if (!s.ok()) return ProblemResponse(s.status());
  auto moved = env.sessions.Transition(s->id, SessionStatus::kRunning, SessionStatus::kRestarting,
                                       TransitionDetails{});
  if (!moved.ok()) return ProblemResponse(moved.status());
  if (!*moved) {
    return ProblemResponse(
        MakeProblemStatus(ProblemType::kInvalidApiParams, "The session changed status meanwhile."));
  }
  std::string id = s->id;
  AnswerFromAgent(
      env.agents, *s->agent_id, server::agent_protocol::RestartKernel{"", id},
      std::chrono::seconds(60), ctx, exchange,
      [&sessions = env.sessions, id](StatusOr<std::string> const& result) -> HttpResponse {
        auto reply = result.ok() ? server::agent_protocol::DecodeRestartReply(*result)
                                 : StatusOr<server::agent_protocol::RestartReply>(result.status());
        // Back to RUNNING either way: a kernel that did not come back is reported TERMINATED by
        // its agent, which ends the session.
        (void)sessions.Transition(id, SessionStatus::kRestarting, SessionStatus::kRunning,
                                  TransitionDetails{});
        if (reply.ok() && reply->ok) return HttpResponse::NoContent();
        return ProblemResponse(MakeProblemStatus(
            ProblemType::kKernelRestartFailed,
            "Restarting the kernel failed: " + AgentFailure(result, reply, "failed")));
      });
  return std::nullopt;
}

// POST /session/{id}/interrupt: SIGINT to the running snippet, through the agent and the kernel
// runner.
std::optional<HttpResponse> Interrupt(KernelEnv& env, RequestContext& ctx,
                                      LateExchange const& exchange) {
  auto p = Params::From(ctx.request, ParamSource::kBoth);
  if (!p.ok()) return ProblemResponse(p.status());
  // bai's addition: `run_id` interrupts that run only (a command exec'd into a batch session,
  // not the session's job); without it, whatever runs.
  auto run_id = p->String({"run_id", "runId"});
  if (auto st = p->Check(); !st.ok()) return ProblemResponse(st);
  auto s = ResolveRunning(env.sessions, ctx);
  if (!s.ok()) return ProblemResponse(s.status());
  server::agent_protocol::Execute message;
  message.session_id = s->id;
  message.mode = "interrupt";
  message.run_id = run_id.value_or("");
  AnswerFromAgent(env.agents, *s->agent_id, std::move(message), std::chrono::seconds(10), ctx,
                  exchange, [](StatusOr<std::string> const& result) {
                    return result.ok() ? HttpResponse::NoContent()
                                       : ProblemResponse(result.status());
                  });
  return std::nullopt;
}

}  // namespace

void RegisterExecuteRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  AddRoutes<KernelEnv>(api, std::make_shared<KernelEnv>(KernelEnv{sessions, agents}),
                       {{"POST", "/session/{id}", AuthLevel::kUser, Execute}});
  RegisterKernelControlRoutes(api, sessions, agents);
}

void RegisterKernelControlRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  AddRoutes<KernelEnv>(api, std::make_shared<KernelEnv>(KernelEnv{sessions, agents}),
                       {
                           {"PATCH", "/session/{id}", AuthLevel::kUser, Restart},
                           {"POST", "/session/{id}/interrupt", AuthLevel::kUser, Interrupt},
                       });
}

namespace {

// The folders the session mounts (PROTOCOL.md §5.2 config.mounts, mount_map, mount_options):
// resolved among those its owner reaches (vfolders::PlanMounts), each with its host path from
// its storage proxy.
Status ResolveMounts(RequestContext& ctx, vfolders::StorageLinks const& links, CreateInput& in) {
  auto const& r = in.request;
  for (auto const* named : {&r.mount_map, &r.mount_permissions}) {
    for (auto const& [name, value] : *named) {
      if (std::find(r.mounts.begin(), r.mounts.end(), name) == r.mounts.end()) {
        return MakeProblemStatus(
            ProblemType::kInvalidApiParams,
            "config.mount_map and mount_options name '" + name + "', which config.mounts does not");
      }
    }
  }
  std::vector<vfolders::MountRequest> requests;
  for (auto const& name : r.mounts) {
    vfolders::MountRequest m{name, std::nullopt, std::nullopt};
    if (auto it = r.mount_map.find(name); it != r.mount_map.end()) m.path = it->second;
    if (auto it = r.mount_permissions.find(name); it != r.mount_permissions.end()) {
      m.permission = it->second;
    }
    requests.push_back(std::move(m));
  }
  auto resolved = ResolveOwnerFolders(ctx, in.session, links, requests);
  if (!resolved.ok()) return resolved.status();
  for (auto const& [m, host_path] : *resolved) {
    in.session.vfolder_mounts.push_back({m.folder.name, m.folder.id, host_path, m.kernel_path,
                                         std::string(protocol::ToString(m.permission))});
  }
  return Status();
}

}  // namespace

StatusOr<std::vector<std::pair<vfolders::PlannedMount, std::string>>> ResolveOwnerFolders(
    RequestContext& ctx, SessionRecord const& s, vfolders::StorageLinks const& links,
    std::vector<vfolders::MountRequest> const& requests) {
  vfolders::CallerFacts owner;
  owner.user_id = s.user_id;
  owner.domain = s.domain_name;
  owner.role = ctx.identity->role;
  if (s.access_key != ctx.identity->access_key) {
    auto kp = ctx.store.FindKeypair(s.access_key);
    if (!kp.ok()) return kp.status();
    owner.role = *kp ? (*kp)->identity.role : "user";
  }
  vfolders::FolderStore folders(ctx.store.db());
  auto visible = folders.Visible(owner);
  if (!visible.ok()) return visible.status();
  auto plan = vfolders::PlanMounts(requests, *visible);
  if (!plan.ok()) {
    return server::ProblemFor(
        plan.status(),
        {{{StatusCode::kNotFound}, ProblemType::kObjectNotFound},
         {{StatusCode::kFailedPrecondition}, ProblemType::kVfolderFilterStatusNotAvailable},
         {{StatusCode::kPermissionDenied}, ProblemType::kVfolderPermissionError}},
        server::ProblemRule{{}, ProblemType::kInvalidApiParams});
  }
  std::vector<std::pair<vfolders::PlannedMount, std::string>> out;
  for (auto const& m : *plan) {
    auto where = links.Ask(m.folder.host, storage::api::MountPath{},
                           vfolders::ScopeDirectory(m.folder.quota_scope_id), m.folder.id);
    if (!where.ok()) {
      return MakeProblemStatus(ProblemType::kStorageProxyError,
                               "mount " + m.folder.name + ": " + where.status().message());
    }
    out.emplace_back(m, where->path);
  }
  return out;
}

namespace {

// The session routes' handlers, with what they share.
struct SessionRoutes {
  SessionStore& sessions;
  EventHub& hub;
  std::function<void(std::string const&)> schedule;
  vfolders::StorageLinks const& links;

  // POST /session, /session/_/create: queue a session; unless enqueueOnly, answer once it
  // has started (or its maxWaitSeconds passed). `check_only` (POST /session/_/check, bai's):
  // every rule a creation meets, then 200 with where it would go, and nothing made — the
  // console's fit check is the start's own rule.
  std::optional<HttpResponse> Create(RequestContext& ctx,
                                     std::shared_ptr<server::Exchange> const& exchange,
                                     bool check_only = false) {
    CreateInput in;
    if (auto st = ParseCreate(ctx, in); !st.ok()) return ProblemResponse(st);
    auto& s = in.session;
    bool reuse = in.request.reuse_if_exists;
    // A superadmin's alias stands for its image (before --reuse compares images).
    ImageStore images(ctx.store.db());
    auto target = images.Resolve(s.image);
    if (!target.ok()) return ProblemResponse(target.status());
    s.image = *target;
    auto existing = sessions.ActiveByName(s.access_key, s.name);
    if (!existing.ok()) return ProblemResponse(existing.status());
    if (!existing->empty()) {
      auto const& old = existing->front();
      if (!reuse || old.image != s.image) {
        return ProblemResponse(
            MakeProblemStatus(ProblemType::kSessionAlreadyExists,
                              reuse ? "An active session with this name runs another image."
                                    : "An active session with this name exists.",
                              json{{"existingSessionId", old.id}}.dump()));
      }
      return CreatedResponse(old, std::string(protocol::ToString(old.status)), false);
    }
    if (auto st = images.CheckKnown(s.image); !st.ok()) return ProblemResponse(st);
    // The domain's allowed_docker_registries (24.09's check; an empty list allows any).
    auto domain = DomainStore(ctx.store.db()).Get(s.domain_name);
    if (!domain.ok()) return ProblemResponse(domain.status());
    if (*domain) {
      if (auto st =
              CheckRegistryAllowed(s.image, (*domain)->allowed_docker_registries, s.domain_name);
          !st.ok()) {
        return ProblemResponse(st);
      }
    }
    // A registry image's minimum resources (ai.backend.resource.min.*), as 24.09.
    if (auto scanned = RegistryStore(ctx.store.db()).FindImage(s.image, s.architecture);
        scanned.ok() && *scanned) {
      if (auto st = ApplyImageMinimum((*scanned)->labels, in.request.resources, s.requested);
          !st.ok()) {
        return ProblemResponse(st);
      }
    }
    if (auto st = ResolveMounts(ctx, links, in); !st.ok()) return ProblemResponse(st);
    // Fail fast: what can never start is refused now, not queued in silence.
    // Also with enqueueOnly: a slot no agent of the group offers (cuda.shares on a cluster
    // without GPUs) waited for ever.
    if (auto st = CheckCanEverFit(ctx.store.db(), s.scaling_group, s.requested,
                                  /*unoffered_ok=*/false);
        !st.ok()) {
      return ProblemResponse(st);
    }
    auto admit = [&](server::SqlExecutor& tx) -> Status {
      if (auto st = AdmitSession(tx, s.access_key, in.request.cluster_size, s.requested);
          !st.ok()) {
        return st;
      }
      // After the policy's own refusal, which names its limit.
      if (in.request.cluster_size > 1 || in.request.cluster_mode == "multi-node") {
        return MakeProblemStatus(ProblemType::kNotImplemented,
                                 "Multi-container sessions are not supported by this manager yet.");
      }
      return Status();
    };
    if (check_only) {
      if (auto st = admit(ctx.store.db()); !st.ok()) return ProblemResponse(st);
      return JsonResponse({{"ok", true},
                           {"scaling_group", s.scaling_group},
                           {"group_id", s.group_id},
                           {"image", s.image}});
    }
    if (auto st = sessions.Create(s, admit); !st.ok()) return ProblemResponse(st);
    schedule(s.scaling_group);
    hub.Wake();
    std::string const pending(protocol::ToString(SessionStatus::kPending));
    if (in.request.enqueue_only) return CreatedResponse(s, pending, true);
    auto max_wait = in.request.max_wait_seconds;
    if (max_wait == 0) {
      // Waiting without end for a start that needs an agent nobody runs would never answer:
      // answer PENDING now (status_info says what it waits for; events follow the start).
      auto served = AgentServes(ctx.store.db(), s.scaling_group);
      if (!served.ok()) return ProblemResponse(served.status());
      if (!*served) return CreatedResponse(s, pending, true);
    }
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (max_wait > 0) {
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(max_wait);
    }
    auto headers = ctx.response_headers;
    hub.WaitForStart(s.id, deadline, exchange,
                     [exchange, record = s, headers](std::string const& status) {
                       auto r = CreatedResponse(record, status, true);
                       r.headers = headers;
                       exchange->Respond(std::move(r));
                     });
    return std::nullopt;
  }

  // POST /session/_/create-from-template: the template's values under the request's.
  std::optional<HttpResponse> CreateFromTemplate(
      RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange) {
    auto body = TemplateCreationBody(ctx);
    if (!body.ok()) return ProblemResponse(body.status());
    server::HttpRequest request = ctx.request;
    request.body = body->dump();
    RequestContext made{request, ctx.params, ctx.identity, ctx.store, ctx.response_headers};
    return Create(made, exchange);
  }

  // GET /events/session: the session event stream (PROTOCOL.md §5.6).
  std::optional<HttpResponse> Events(RequestContext& ctx,
                                     std::shared_ptr<server::Exchange> const& exchange) {
    auto p = Params::From(ctx.request);
    if (!p.ok()) return ProblemResponse(p.status());
    std::string name = p->String({"sessionName", "name", "session_name"}).value_or("*");
    auto owner = p->String({"ownerAccessKey", "owner_access_key"});
    auto session_id = p->String({"sessionId", "session_id"});
    std::string group = p->String({"groupName", "group", "group_name"}).value_or("*");
    std::string scope = p->String({"scope"}).value_or("*");
    if (scope != "*" && scope != "session" && scope != "kernel") {
      p->Fail("scope", "must be session, kernel or *");
    }
    if (auto st = p->Check(); !st.ok()) return ProblemResponse(st);
    Identity who = *ctx.identity;
    if (owner && *owner != who.access_key) {
      // As for every session endpoint: admins only, and within their domain.
      if (auto kp = ActFor(who, ctx.store, *owner); !kp.ok()) return ProblemResponse(kp.status());
    }
    std::optional<std::string> group_id;
    if (group != "*") {
      auto g = ctx.store.FindGroup(who.domain, group);
      if (!g.ok()) return ProblemResponse(g.status());
      if (!*g) {
        return ProblemResponse(
            MakeProblemStatus(ProblemType::kObjectNotFound, "No such user group (or project)."));
      }
      group_id = **g;
    }
    // Without an explicit owner or session, users see their own sessions and admins
    // what their role covers.
    std::optional<std::string> key = owner;
    if (!key && !session_id && !who.IsAdmin()) key = who.access_key;
    auto filter = [=](EventRecord const& e) {
      if (!Visible(e, who)) return false;
      bool kernel_event = e.name.rfind("kernel_", 0) == 0;
      if (scope == "session" && kernel_event) return false;
      if (scope == "kernel" && !kernel_event) return false;
      if (session_id) return e.session_id == *session_id;
      if (key && e.access_key != *key) return false;
      if (name != "*" && e.session_name != name) return false;
      if (group_id && e.group_id != *group_id) return false;
      return true;
    };
    exchange->StartEventStream(ctx.response_headers);
    hub.Subscribe(exchange, filter);
    return std::nullopt;
  }

  // GET /session/_/match
  StatusOr<HttpResponse> GetMatch(RequestContext& ctx) {
    auto p = Params::From(ctx.request);
    if (!p.ok()) return std::move(p).status();
    auto id = p->String({"id"}, true);
    if (auto st = p->Check(); !st.ok()) return st;
    json matches = json::array();
    auto key = ActingAccessKey(ctx);
    if (!key.ok()) return std::move(key).status();
    auto found = sessions.Resolve(*id, *key, false);
    if (found.ok()) {
      matches.push_back({{"id", found->id},
                         {"name", found->name},
                         {"status", std::string(protocol::ToString(found->status))}});
    } else if (found.status().error_info().type ==
               protocol::ProblemTypeUrl(ProblemType::kTooManySessionsMatched)) {
      auto data = internal::ParseJson(found.status().error_info().data_json);
      if (data && data->contains("matches")) {
        for (auto const& m : (*data)["matches"]) {
          matches.push_back({{"id", m["id"]}, {"name", m["name"]}, {"status", m["status"]}});
        }
      }
    }
    return JsonResponse({{"matches", matches}});
  }

  // GET /session/{id}
  StatusOr<HttpResponse> Get(RequestContext& ctx) {
    // Ended sessions too: a finished job's result stays readable by its name (newest first).
    auto s = ResolveSession(sessions, ctx, true);
    if (!s.ok()) return std::move(s).status();
    return HttpResponse::Json(200, protocol::EncodeSessionInfo(InfoOf(*s)));
  }

  // DELETE /session/{id}
  StatusOr<HttpResponse> Delete(RequestContext& ctx) {
    auto p = Params::From(ctx.request);
    if (!p.ok()) return std::move(p).status();
    (void)p->Bool({"forced"});
    (void)p->Bool({"recursive"});
    if (auto st = p->Check(); !st.ok()) return st;
    auto s = ResolveSession(sessions, ctx, false, /*destructive=*/true);
    if (!s.ok()) return std::move(s).status();
    auto from = s->status;
    if (protocol::IsTerminal(from)) {
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such session.");
    }
    // Already on its way out: destroying it again is done, not an error.
    if (from == SessionStatus::kTerminating) return JsonResponse({{"stats", json::object()}});
    TransitionDetails d;
    d.status_info = "user-requested";
    d.reason = "user-requested";
    StatusOr<bool> moved = false;
    // Not started yet: cancel (an agent already preparing a SCHEDULED one is told to drop it).
    if (from == SessionStatus::kPending || from == SessionStatus::kScheduled) {
      d.event = "session_cancelled";
      moved = sessions.Transition(s->id, from, SessionStatus::kCancelled, d);
    } else if (protocol::CanTransition(from, SessionStatus::kTerminating)) {
      d.event = "session_terminating";
      moved = sessions.Transition(s->id, from, SessionStatus::kTerminating, d);
    } else {
      return MakeProblemStatus(ProblemType::kGenericBadRequest,
                               "A " + std::string(protocol::ToString(from)) +
                                   " session cannot be destroyed now; try again.");
    }
    if (!moved.ok()) return std::move(moved).status();
    schedule(s->scaling_group);  // frees slots for the queue and tells the agent now
    hub.Wake();
    return JsonResponse({{"stats", json::object()}});
  }

  // GET /session/{id}/status-history
  StatusOr<HttpResponse> GetStatusHistory(RequestContext& ctx) {
    auto s = ResolveSession(sessions, ctx, true);
    if (!s.ok()) return std::move(s).status();
    return JsonResponse({{"result", s->status_history}});
  }

  // POST /session/{id}/rename
  StatusOr<HttpResponse> PostRename(RequestContext& ctx) {
    auto p = Params::From(ctx.request);
    if (!p.ok()) return std::move(p).status();
    auto name = p->String({"name", "session_name", "clientSessionToken"}, true);
    if (name && !protocol::ValidSessionName(*name)) p->Fail("name", "invalid session name");
    if (auto st = p->Check(); !st.ok()) return st;
    auto s = ResolveSession(sessions, ctx, true);
    if (!s.ok()) return std::move(s).status();
    if (s->status != SessionStatus::kRunning) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams,
                               "Only RUNNING sessions can be renamed (this one is " +
                                   std::string(protocol::ToString(s->status)) + ").");
    }
    auto clash = sessions.ActiveByName(s->access_key, *name);
    if (!clash.ok()) return std::move(clash).status();
    if (!clash->empty()) {
      return MakeProblemStatus(ProblemType::kSessionAlreadyExists,
                               "An active session has that name.",
                               json{{"existingSessionId", clash->front().id}}.dump());
    }
    if (auto st = sessions.Rename(s->id, *name); !st.ok()) return st;
    return HttpResponse::NoContent();
  }
};

}  // namespace

void RegisterSessionRoutes(ManagerApi& api, SessionStore& sessions, EventHub& hub,
                           std::function<void(std::string const&)> schedule,
                           vfolders::StorageLinks const& links) {
  using L = AuthLevel;
  using R = SessionRoutes;
  using X = LateExchange;
  AddRoutes<R>(
      api, std::make_shared<R>(R{sessions, hub, std::move(schedule), links}),
      {
          {"POST", "/session", L::kUser,
           +[](R& r, RequestContext& c, X const& x) { return r.Create(c, x); }},
          {"POST", "/session/_/create", L::kUser,
           +[](R& r, RequestContext& c, X const& x) { return r.Create(c, x); }},
          {"POST", "/session/_/check", L::kUser,
           +[](R& r, RequestContext& c, X const& x) {
             return r.Create(c, x, /*check_only=*/true);
           }},
          {"POST", "/session/_/create-from-template", L::kUser,
           +[](R& r, RequestContext& c, X const& x) { return r.CreateFromTemplate(c, x); }},
          {"GET", "/session/_/match", L::kUser,
           +[](R& r, RequestContext& c) { return r.GetMatch(c); }},
          {"GET", "/session/{id}", L::kUser, +[](R& r, RequestContext& c) { return r.Get(c); }},
          {"DELETE", "/session/{id}", L::kUser,
           +[](R& r, RequestContext& c) { return r.Delete(c); }},
          {"GET", "/session/{id}/status-history", L::kUser,
           +[](R& r, RequestContext& c) { return r.GetStatusHistory(c); }},
          {"POST", "/session/{id}/rename", L::kUser,
           +[](R& r, RequestContext& c) { return r.PostRename(c); }},
          {"GET", "/events/session", L::kUser,
           +[](R& r, RequestContext& c, X const& x) { return r.Events(c, x); }},
      });
}

}  // namespace bai::manager
