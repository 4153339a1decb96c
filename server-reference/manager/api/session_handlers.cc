// SPDX-License-Identifier: Apache-2.0
// Session routes (PROTOCOL.md §5) and the session event stream (§5.6).
#include "bai/protocol/errors.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/signing.h"

#include "libbai/internal/json_codec.h"
#include "server-reference/common/problem.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/params.h"
#include "server-reference/manager/api/routes.h"
#include "server-reference/manager/events.h"
#include "server-reference/manager/scheduler/scheduling.h"
#include "server-reference/manager/state/bootstrap.h"
#include "server-reference/manager/state/sessions.h"

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

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// ^(?=.{4,64}$)\w[\w.-]*\w$ (ASCII), and not the reserved "from-template".
bool ValidSessionName(std::string const& n) {
  if (n.size() < 4 || n.size() > 64 || n == "from-template") return false;
  if (!IsWordChar(n.front()) || !IsWordChar(n.back())) return false;
  for (char c : n) {
    if (!IsWordChar(c) && c != '.' && c != '-') return false;
  }
  return true;
}

// "90", "30s", "5m", "1h", "2d", "1w" → seconds.
std::optional<std::int64_t> ParseDuration(std::string const& text) {
  if (text.empty()) return std::nullopt;
  std::int64_t unit = 1;
  std::string number = text;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 604800;
      break;
    default:
      unit = 0;
  }
  if (unit != 0) {
    number.pop_back();
  } else {
    unit = 1;
  }
  if (number.empty() || number.size() > 9) return std::nullopt;
  for (char c : number) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoll(number) * unit;
}

std::string IsoFromUnix(std::int64_t secs) {
  return IsoTime(std::chrono::system_clock::time_point(std::chrono::seconds(secs)));
}

json CreatedBody(SessionRecord const& s, std::string const& status, bool created) {
  json body = {
      {"sessionId", s.id}, {"sessionName", s.name}, {"status", status}, {"created", created}};
  // 24.09 answers a reused session with the snake_case key; tolerant clients read both.
  body[created ? "servicePorts" : "service_ports"] = json::array();
  return body;
}

struct CreateInput {
  SessionRecord session;
  bool enqueue_only = false;
  std::int64_t max_wait_seconds = 0;
  bool reuse = true;
  // Named in the request, resolved against the database after parsing.
  std::string group;
  std::string domain;
  std::optional<std::string> owner;
  std::optional<std::string> scaling_group;
  std::vector<std::string> dependency_refs;
};

// starts_at (a time or a delay; batch only) and batch_timeout (seconds or a duration).
void ParseTiming(Params& p, SessionRecord& s) {
  if (auto starts = p.String({"starts_at", "startsAt"})) {
    if (s.type != "batch") {
      p.Fail("starts_at", "only batch sessions can start later");
    } else if (auto rel = ParseDuration(*starts)) {
      auto now = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
      s.starts_at = IsoFromUnix(now + *rel);
    } else if (auto abs = protocol::ParseHttpDate(*starts)) {
      s.starts_at = IsoFromUnix(abs->unix_seconds);
    } else {
      p.Fail("starts_at", "expected an ISO 8601 time or a duration such as 30m");
    }
  }
  if (auto const* bt = p.Raw({"batch_timeout", "batchTimeout"}); bt && !bt->is_null()) {
    auto secs = bt->is_number_integer()
                    ? std::optional<std::int64_t>(bt->get<std::int64_t>())
                    : (bt->is_string() ? ParseDuration(bt->get<std::string>()) : std::nullopt);
    if (!secs || *secs <= 0) {
      p.Fail("batch_timeout", "expected seconds or a duration such as 1h");
    } else {
      s.batch_timeout = *secs;
    }
  }
}

std::vector<std::string> ParseDependencies(Params& p) {
  std::vector<std::string> dependency_refs;
  if (auto const* deps = p.Raw({"dependencies"}); deps && !deps->is_null()) {
    if (!deps->is_array()) {
      p.Fail("dependencies", "must be a list of session ids or names");
    } else {
      for (auto const& d : *deps) {
        if (!d.is_string()) {
          p.Fail("dependencies", "must be a list of session ids or names");
          break;
        }
        dependency_refs.push_back(d.get<std::string>());
      }
    }
  }
  return dependency_refs;
}

// The `config` object: environment, mounts, resource options, pinned agents, resources.
Status ParseConfig(RequestContext& ctx, Params& p, CreateInput& in) {
  auto const& who = *ctx.identity;
  auto& s = in.session;
  json config = json::object();
  if (auto const* c = p.Raw({"config"}); c && !c->is_null()) {
    if (!c->is_object()) {
      p.Fail("config", "must be an object");
    } else {
      config = *c;
    }
  }
  Params cfg(config);
  in.scaling_group = cfg.String({"scaling_group", "scalingGroup"});
  if (auto const* env = cfg.Raw({"environ"}); env && !env->is_null()) {
    bool ok = env->is_object();
    if (ok) {
      for (auto const& [k, v] : env->items()) ok = ok && v.is_string() && !k.empty();
    }
    if (!ok) {
      p.Fail("config.environ", "must be an object of strings");
    } else {
      s.environ = env->dump();
    }
  }
  if (auto const* mounts = cfg.Raw({"mounts"}); mounts && !mounts->is_null()) {
    if (!mounts->is_array()) {
      p.Fail("config.mounts", "must be a list of vfolder names");
    } else {
      s.mounts = mounts->dump();
    }
  }
  if (auto const* mm = cfg.Raw({"mount_map", "mountMap"}); mm && !mm->is_null()) {
    if (!mm->is_object()) {
      p.Fail("config.mount_map", "must be an object");
    } else {
      s.mount_map = mm->dump();
    }
  }
  if (auto const* ro = cfg.Raw({"resource_opts", "resourceOpts"}); ro && !ro->is_null()) {
    if (!ro->is_object()) {
      p.Fail("config.resource_opts", "must be an object");
    } else {
      s.resource_opts = ro->dump();
    }
  }
  if (auto const* agents = cfg.Raw({"agent_list", "agentList"}); agents && !agents->is_null()) {
    if (!who.IsSuperadmin()) {
      return MakeProblemStatus(ProblemType::kInsufficientPrivilege,
                               "Only superadmins may pick agents (config.agent_list).");
    }
    bool ok = agents->is_array();
    for (auto const& a : ok ? *agents : json::array()) {
      ok = ok && a.is_string() && !a.get<std::string>().empty();
      if (ok) s.agent_list.push_back(a.get<std::string>());
    }
    if (!ok) p.Fail("config.agent_list", "must be a list of agent ids");
  }
  s.requested = {{"cpu", protocol::Decimal::FromInteger(1)},
                 {"mem", protocol::Decimal::FromInteger(1024LL * 1024 * 1024)}};
  if (auto const* res = cfg.Raw({"resources"}); res && !res->is_null()) {
    if (!res->is_object()) {
      p.Fail("config.resources", "must be an object of slot amounts");
    } else {
      auto cluster = ctx.store.ClusterSlotTypes();
      if (!cluster.ok()) return cluster.status();
      for (auto const& [slot, amount] : res->items()) {
        if (!cluster->count(slot) && !protocol::KnownSlotType(slot)) {
          p.Fail("config.resources." + slot, "Unknown slot type");
        }
      }
      auto slots = internal::SlotsFromJson(*res, [&](std::string const& slot_name) {
        auto it = cluster->find(slot_name);
        return it != cluster->end() ? protocol::ParseSlotType(it->second)
                                    : protocol::KnownSlotType(slot_name);
      });
      if (!slots.ok()) {
        p.Fail("config.resources", slots.status().message());
      } else {
        for (auto const& [slot, amount] : *slots) {
          if (amount.is_unlimited()) p.Fail("config.resources." + slot, "must be finite");
          s.requested[slot] = amount;
        }
      }
    }
  }
  return Status();
}

// Whose session it is, and where: owner (admins may act for another keypair), domain, project,
// resource group, pinned agents, dependencies.
Status ResolvePlacement(RequestContext& ctx, CreateInput& in) {
  auto const& who = *ctx.identity;
  auto& s = in.session;
  // Ownership: admins may act for another keypair.
  s.access_key = who.access_key;
  s.user_id = who.user_id;
  s.domain_name = who.domain;
  if (in.owner && *in.owner != who.access_key) {
    auto kp = ActFor(who, ctx.store, *in.owner);
    if (!kp.ok()) return kp.status();
    s.access_key = *in.owner;
    s.user_id = kp->identity.user_id;
    s.domain_name = kp->identity.domain;
  }
  if (in.domain != s.domain_name) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such domain.");
  }
  auto group_id = ctx.store.FindGroup(s.domain_name, in.group);
  if (!group_id.ok()) return group_id.status();
  if (!*group_id)
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such user group (or project).");
  auto member = ctx.store.IsMember(**group_id, s.user_id);
  if (!member.ok()) return member.status();
  if (!*member && !who.IsSuperadmin()) {
    return MakeProblemStatus(ProblemType::kObjectNotFound, "No such user group (or project).");
  }
  s.group_id = **group_id;
  Identity owner_identity = who;
  owner_identity.access_key = s.access_key;
  owner_identity.user_id = s.user_id;
  owner_identity.domain = s.domain_name;
  auto allowed = ctx.store.AllowedScalingGroups(owner_identity, s.group_id);
  if (!allowed.ok()) return allowed.status();
  if (in.scaling_group) {
    if (std::find(allowed->begin(), allowed->end(), *in.scaling_group) == allowed->end()) {
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such scaling group.");
    }
    s.scaling_group = *in.scaling_group;
  } else {
    if (allowed->empty())
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such scaling group.");
    s.scaling_group = allowed->front();
  }
  if (auto st = CheckAgentsKnown(ctx.store.db(), s.scaling_group, s.agent_list); !st.ok()) {
    return st;
  }
  json deps = json::array();
  for (auto const& ref : in.dependency_refs) {
    // Dependencies are usually finished sessions: match dead ones too.
    SessionStore store(ctx.store.db());
    auto dep = store.Resolve(ref, s.access_key, /*allow_dead=*/true);
    if (!dep.ok()) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams, "Input validation error",
                               json{{"dependencies", "no such session: " + ref}}.dump());
    }
    deps.push_back(dep->id);
  }
  s.dependencies = deps.dump();
  return {};
}

// Parses and checks a creation request; fills `in` or returns the problem to answer.
Status ParseCreate(RequestContext& ctx, CreateInput& in) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return std::move(p).status();
  auto const& who = *ctx.identity;
  auto& s = in.session;
  s.id = GenerateUuid();

  auto name = p->String({"name", "session_name", "clientSessionToken"});
  if (name && !ValidSessionName(*name)) {
    p->Fail("name",
            "4–64 characters of letters, digits, '_', '.', '-', starting and ending "
            "with a letter, digit or '_' (not \"from-template\")");
  }
  s.name = name.value_or("s-" + s.id.substr(0, 8));
  auto image = p->String({"image", "lang"}, true);
  if (image && (image->empty() || image->size() > 512))
    p->Fail("image", "must be 1–512 characters");
  s.image = image.value_or("");
  s.architecture = p->String({"architecture", "arch"}).value_or("x86_64");
  s.type = p->String({"type", "sessionType"}).value_or("interactive");
  if (s.type != "interactive" && s.type != "batch" && s.type != "inference" &&
      !(s.type == "system" && who.IsSuperadmin())) {
    p->Fail("type", "must be interactive, batch or inference");
  }
  in.group = p->String({"group", "groupName", "group_name"}).value_or("default");
  in.domain = p->String({"domain", "domainName", "domain_name"}).value_or(who.domain);
  auto cluster_size = p->Int({"cluster_size", "clusterSize"}, 1, 1024).value_or(1);
  auto cluster_mode = p->String({"cluster_mode", "clusterMode"}).value_or("single-node");
  if (cluster_mode != "single-node" && cluster_mode != "multi-node") {
    p->Fail("cluster_mode", "must be single-node or multi-node");
  }
  s.tag = p->String({"tag"});
  in.enqueue_only = p->Bool({"enqueueOnly", "enqueue_only"}).value_or(false);
  in.max_wait_seconds = p->Int({"maxWaitSeconds", "max_wait_seconds"}, 0, 86400 * 365).value_or(0);
  in.reuse = p->Bool({"reuseIfExists", "reuse_if_exists"}).value_or(true);
  s.startup_command = p->String({"startupCommand", "startup_command"});
  s.bootstrap_script = p->String({"bootstrap_script", "bootstrapScript"});
  s.callback_url = p->String({"callback_url", "callbackUrl", "callbackURL"});
  s.priority = static_cast<int>(p->Int({"priority"}, 0, 100).value_or(10));
  in.owner = p->String({"owner_access_key", "ownerAccessKey"});
  ParseTiming(*p, s);
  if (s.type == "batch" && (!s.startup_command || s.startup_command->empty())) {
    p->Fail("startupCommand", "required for batch sessions");
  }
  in.dependency_refs = ParseDependencies(*p);
  if (auto st = ParseConfig(ctx, *p, in); !st.ok()) return st;
  if (auto st = p->Check(); !st.ok()) return st;
  if (cluster_size > 1 || cluster_mode == "multi-node") {
    return MakeProblemStatus(ProblemType::kNotImplemented,
                             "Multi-container sessions are not supported by this manager yet.");
  }
  return ResolvePlacement(ctx, in);
}

// Visibility of an event for a requester (PROTOCOL.md §5.6).
bool Visible(EventRecord const& e, Identity const& who) {
  if (who.IsSuperadmin()) return true;
  if (who.role == "admin") return e.domain_name == who.domain;
  return e.access_key == who.access_key;
}

}  // namespace

void RegisterExecuteRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  api.AddAsync(
      "POST", "/session/{id}", AuthLevel::kUser,
      [&sessions, &agents](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange)
          -> std::optional<HttpResponse> {
        // The execute body is read as JSON whatever the method rules say (PROTOCOL.md §4.1).
        auto step = protocol::DecodeExecuteStep(ctx.request.body.empty() ? std::string_view("{}")
                                                                         : ctx.request.body);
        if (!step.ok()) return ProblemResponse(step.status());
        auto s = ResolveRunning(sessions, ctx);
        if (!s.ok()) return ProblemResponse(s.status());
        if (step->run_id.empty()) {
          // 32 hex characters, as 24.09 generates.
          std::string uuid = GenerateUuid();
          uuid.erase(std::remove(uuid.begin(), uuid.end(), '-'), uuid.end());
          step->run_id = uuid;
        }
        (void)ctx.store.db().Exec("UPDATE sessions SET num_queries = num_queries + 1 WHERE id = ?",
                                  {s->id});
        server::agent_protocol::Execute message;
        static_cast<protocol::ExecuteStep&>(message) = *std::move(step);
        message.session_id = s->id;
        auto headers = ctx.response_headers;
        agents.Request(
            *s->agent_id, std::move(message), std::chrono::seconds(30),
            [exchange, headers](StatusOr<std::string> result) {
              HttpResponse r;
              if (!result.ok()) {
                r = ProblemResponse(result.status());
              } else if (auto decoded = protocol::DecodeExecuteResult(*result); !decoded.ok()) {
                r = ProblemResponse(MakeProblemStatus(
                    ProblemType::kInternalServerError,
                    "The agent answered with a malformed result: " + decoded.status().message()));
              } else {
                r = HttpResponse::Json(
                    200, "{\"result\":" + protocol::EncodeExecuteResult(*decoded) + "}");
              }
              RespondLate(*exchange, headers, std::move(r));
            });
        return std::nullopt;
      });
  RegisterKernelControlRoutes(api, sessions, agents);
}

void RegisterKernelControlRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  // Restart: RUNNING → RESTARTING while the agent replaces the kernel with a fresh one of the
  // same spec, then RUNNING again; 204 once it runs (Backend.AI answers after the restart too).
  api.AddAsync(
      "PATCH", "/session/{id}", AuthLevel::kUser,
      [&sessions, &agents](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange)
          -> std::optional<HttpResponse> {
        auto s = ResolveRunning(sessions, ctx);
        if (!s.ok()) return ProblemResponse(s.status());
        auto moved = sessions.Transition(s->id, SessionStatus::kRunning, SessionStatus::kRestarting,
                                         TransitionDetails{});
        if (!moved.ok()) return ProblemResponse(moved.status());
        if (!*moved) {
          return ProblemResponse(MakeProblemStatus(ProblemType::kInvalidApiParams,
                                                   "The session changed status meanwhile."));
        }
        auto headers = ctx.response_headers;
        std::string id = s->id;
        agents.Request(
            *s->agent_id, server::agent_protocol::RestartKernel{"", id}, std::chrono::seconds(60),
            [&sessions, exchange, headers, id](StatusOr<std::string> result) {
              auto reply = result.ok()
                               ? server::agent_protocol::DecodeRestartReply(*result)
                               : StatusOr<server::agent_protocol::RestartReply>(result.status());
              bool ok = reply.ok() && reply->ok;
              // Back to RUNNING either way: a kernel that did not come back is reported
              // TERMINATED by its agent, which ends the session.
              (void)sessions.Transition(id, SessionStatus::kRestarting, SessionStatus::kRunning,
                                        TransitionDetails{});
              HttpResponse r;
              if (ok) {
                r = HttpResponse::NoContent();
              } else {
                std::string why = AgentFailure(result, reply, "failed");
                r = ProblemResponse(MakeProblemStatus(ProblemType::kKernelRestartFailed,
                                                      "Restarting the kernel failed: " + why));
              }
              RespondLate(*exchange, headers, std::move(r));
            });
        return std::nullopt;
      });

  // Interrupt: SIGINT to the running snippet, through the agent and the kernel runner.
  api.AddAsync(
      "POST", "/session/{id}/interrupt", AuthLevel::kUser,
      [&sessions, &agents](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange)
          -> std::optional<HttpResponse> {
        auto s = ResolveRunning(sessions, ctx);
        if (!s.ok()) return ProblemResponse(s.status());
        server::agent_protocol::Execute message;
        message.session_id = s->id;
        message.mode = "interrupt";
        auto headers = ctx.response_headers;
        agents.Request(*s->agent_id, std::move(message), std::chrono::seconds(10),
                       [exchange, headers](StatusOr<std::string> result) {
                         HttpResponse r = result.ok() ? HttpResponse::NoContent()
                                                      : ProblemResponse(result.status());
                         RespondLate(*exchange, headers, std::move(r));
                       });
        return std::nullopt;
      });
}

namespace {

// The session routes' handlers, with what they share.
struct SessionRoutes {
  SessionStore& sessions;
  EventHub& hub;
  std::function<void(std::string const&)> schedule;

  // POST /session, /session/_/create: queue a session; unless enqueueOnly, answer once it
  // has started (or its maxWaitSeconds passed).
  std::optional<HttpResponse> Create(RequestContext& ctx,
                                     std::shared_ptr<server::Exchange> const& exchange) {
    CreateInput in;
    if (auto st = ParseCreate(ctx, in); !st.ok()) return ProblemResponse(st);
    auto& s = in.session;
    auto existing = sessions.ActiveByName(s.access_key, s.name);
    if (!existing.ok()) return ProblemResponse(existing.status());
    if (!existing->empty()) {
      auto const& old = existing->front();
      if (!in.reuse || old.image != s.image) {
        return ProblemResponse(
            MakeProblemStatus(ProblemType::kSessionAlreadyExists,
                              in.reuse ? "An active session with this name runs another image."
                                       : "An active session with this name exists.",
                              json{{"existingSessionId", old.id}}.dump()));
      }
      return JsonResponse(CreatedBody(old, old.status, false), 201);
    }
    if (auto st = CheckImageKnown(ctx.store.db(), s.image); !st.ok()) return ProblemResponse(st);
    if (auto st = sessions.Create(s); !st.ok()) return ProblemResponse(st);
    schedule(s.scaling_group);
    hub.Wake();
    if (in.enqueue_only) return JsonResponse(CreatedBody(s, "PENDING", true), 201);
    if (in.max_wait_seconds == 0) {
      // Waiting without end for a start that needs an agent nobody runs would never answer:
      // answer PENDING now (status_info says what it waits for; events follow the start).
      auto served = AgentServes(ctx.store.db(), s.scaling_group);
      if (!served.ok()) return ProblemResponse(served.status());
      if (!*served) return JsonResponse(CreatedBody(s, "PENDING", true), 201);
    }
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (in.max_wait_seconds > 0) {
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(in.max_wait_seconds);
    }
    auto headers = ctx.response_headers;
    hub.WaitForStart(s.id, deadline, exchange,
                     [exchange, record = s, headers](std::string const& status) {
                       auto r = JsonResponse(CreatedBody(record, status, true), 201);
                       r.headers = headers;
                       exchange->Respond(std::move(r));
                     });
    return std::nullopt;
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
    if (owner && *owner != who.access_key && !who.is_admin && !who.IsSuperadmin()) {
      return ProblemResponse(MakeProblemStatus(
          ProblemType::kGenericForbidden, "Only admins may watch another keypair's sessions."));
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
    if (!key && !session_id && !who.is_admin && !who.IsSuperadmin()) key = who.access_key;
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
      matches.push_back({{"id", found->id}, {"name", found->name}, {"status", found->status}});
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
    auto s = ResolveSession(sessions, ctx, false);
    if (!s.ok()) return std::move(s).status();
    return HttpResponse::Json(200, SessionInfoJson(*s));
  }

  // DELETE /session/{id}
  StatusOr<HttpResponse> Delete(RequestContext& ctx) {
    auto p = Params::From(ctx.request);
    if (!p.ok()) return std::move(p).status();
    (void)p->Bool({"forced"});
    (void)p->Bool({"recursive"});
    if (auto st = p->Check(); !st.ok()) return st;
    auto s = ResolveSession(sessions, ctx, false);
    if (!s.ok()) return std::move(s).status();
    auto from = protocol::ParseSessionStatus(s->status).status;
    if (protocol::IsTerminal(from)) {
      return MakeProblemStatus(ProblemType::kObjectNotFound, "No such session.");
    }
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
                               "A " + s->status + " session cannot be destroyed now; try again.");
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
    auto history = internal::ParseJson(s->status_history).value_or(json::object());
    return JsonResponse({{"result", history}});
  }

  // GET /session/{id}/logs
  StatusOr<HttpResponse> GetLogs(RequestContext& ctx) {
    auto s = ResolveSession(sessions, ctx, true);
    if (!s.ok()) return std::move(s).status();
    auto logs = sessions.MainKernelLogs(s->id);
    if (!logs.ok()) return std::move(logs).status();
    return JsonResponse({{"result", {{"logs", *logs}}}});
  }

  // POST /session/{id}/rename
  StatusOr<HttpResponse> PostRename(RequestContext& ctx) {
    auto p = Params::From(ctx.request);
    if (!p.ok()) return std::move(p).status();
    auto name = p->String({"name", "session_name", "clientSessionToken"}, true);
    if (name && !ValidSessionName(*name)) p->Fail("name", "invalid session name");
    if (auto st = p->Check(); !st.ok()) return st;
    auto s = ResolveSession(sessions, ctx, true);
    if (!s.ok()) return std::move(s).status();
    if (s->status != "RUNNING") {
      return MakeProblemStatus(
          ProblemType::kInvalidApiParams,
          "Only RUNNING sessions can be renamed (this one is " + s->status + ").");
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
                           std::function<void(std::string const&)> schedule) {
  using L = AuthLevel;
  auto r = std::make_shared<SessionRoutes>(SessionRoutes{sessions, hub, std::move(schedule)});
  auto create = [r](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange) {
    return r->Create(ctx, exchange);
  };
  api.AddAsync("POST", "/session", L::kUser, create);
  api.AddAsync("POST", "/session/_/create", L::kUser, create);
  // A SessionRoutes member as a sync handler (errors become problem responses).
  auto guarded = [r](StatusOr<HttpResponse> (SessionRoutes::*handler)(RequestContext&)) {
    return
        [r, handler](RequestContext& ctx) { return Guard([&] { return ((*r).*handler)(ctx); }); };
  };
  api.Add("GET", "/session/_/match", L::kUser, guarded(&SessionRoutes::GetMatch));
  api.Add("GET", "/session/{id}", L::kUser, guarded(&SessionRoutes::Get));
  api.Add("DELETE", "/session/{id}", L::kUser, guarded(&SessionRoutes::Delete));
  api.Add("GET", "/session/{id}/status-history", L::kUser,
          guarded(&SessionRoutes::GetStatusHistory));
  api.Add("GET", "/session/{id}/logs", L::kUser, guarded(&SessionRoutes::GetLogs));
  api.Add("POST", "/session/{id}/rename", L::kUser, guarded(&SessionRoutes::PostRename));
  api.AddAsync("GET", "/events/session", L::kUser,
               [r](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange) {
                 return r->Events(ctx, exchange);
               });
}

}  // namespace bai::manager
