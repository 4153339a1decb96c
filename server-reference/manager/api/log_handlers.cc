// SPDX-License-Identifier: Apache-2.0
// `GET /session/{id}/logs`: the whole output, read from the log the session's agent keeps (up to
// its size limit, with the truncation notice), or the tail the manager stored when the agent is
// out of reach. With `follow=true`: an event stream of the output as it is produced (the
// backlog from the agent's log first, then what the agent relays live, lined up by offset) and
// an `end` event once the session has ended.
#include "bai/protocol/errors.h"
#include "bai/protocol/session_wire.h"

#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/routes.h"

namespace bai::manager {
namespace {

namespace ap = server::agent_protocol;
using nlohmann::json;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;

constexpr std::int64_t kPage = 4 << 20;

bool Ended(protocol::SessionStatus s) {
  return protocol::IsTerminal(s) || s == protocol::SessionStatus::kError;
}

std::int64_t DataBytes(std::vector<ap::OutputChunk> const& chunks) {
  std::int64_t n = 0;
  for (auto const& c : chunks) {
    if (c.stream != "notice") n += static_cast<std::int64_t>(c.data.size());
  }
  return n;
}

// Reads the agent's log of `session_id` from `offset` page by page; `page` gets each reply
// and returns whether to go on; `done` gets the error that stopped it, or ok.
void ReadPages(AgentRegistry& agents, std::string agent_id, std::string session_id,
               std::int64_t offset, std::function<bool(ap::LogsReply const&)> page,
               std::function<void(Status)> done) {
  ap::ReadLogs request;
  request.session_id = session_id;
  request.offset = offset;
  request.limit = kPage;
  agents.Request(agent_id, request, std::chrono::seconds(30),
                 [&agents, agent_id, session_id, offset, page = std::move(page),
                  done = std::move(done)](StatusOr<std::string> result) mutable {
                   if (!result.ok()) return done(result.status());
                   auto reply = ap::DecodeLogsReply(*result);
                   if (!reply.ok()) return done(reply.status());
                   if (!reply->ok) return done(Status(StatusCode::kNotFound, reply->msg));
                   if (!page(*reply)) return done(Status());
                   // A reply starts past `offset` when that fell in the dropped middle.
                   std::int64_t data = DataBytes(reply->chunks);
                   std::int64_t next = reply->offset + data;
                   if (data == 0 || next >= reply->size) return done(Status());
                   ReadPages(agents, agent_id, session_id, next, std::move(page), std::move(done));
                 });
}

// One follower of a session's output. It goes at its reader's pace: while the reader keeps up
// it gets the output live as the agent relays it; before that (the backlog when it joins) and
// whenever it falls behind (more than kLag waiting to be written to it), it reads the agent's
// stored log page by page instead, each page once the one before has been written, and goes
// live again once it has caught up. So a fast job is never slowed by its slow reader, the
// reader misses nothing the store keeps (past the store's limit: the dropped middle's notice),
// and the manager holds at most about kLag + one page for it. The end event comes last.
constexpr std::size_t kLag = 6u << 20;
constexpr std::size_t kResume = 2u << 20;
// A page is at most 512 KiB of output: escaped into events it stays under 3 MiB even for
// control bytes (6 each), so kResume + a page stays under the server's 8 MiB stream limit.
constexpr std::int64_t kCatchUpPage = 512 << 10;

struct Follower : std::enable_shared_from_this<Follower> {
  std::shared_ptr<server::Exchange> exchange;
  SessionStore& sessions;
  AgentRegistry& agents;
  std::string agent_id;
  std::string session_id;
  std::mutex mu;
  std::int64_t next = 0;      // the offset of the next byte to send
  std::int64_t live_end = 0;  // the end of the output relayed live so far
  bool catching_up = true;    // reading the stored log, not sending live output
  int empty_reads = 0;        // pages in a row that had nothing past `next`
  bool notice_sent = false;
  bool ended = false;  // the live relay said the session ended
  bool finished = false;
  std::uint64_t token = 0;

  Follower(std::shared_ptr<server::Exchange> e, SessionStore& s, AgentRegistry& a,
           std::string agent, std::string id, std::int64_t from)
      : exchange(std::move(e)),
        sessions(s),
        agents(a),
        agent_id(std::move(agent)),
        session_id(std::move(id)),
        next(from),
        live_end(from) {}

  // Sends what of `chunks` (starting at `offset`) is past `next`. mu held.
  void Send(std::int64_t offset, std::vector<ap::OutputChunk> const& chunks) {
    for (auto const& c : chunks) {
      if (c.stream == "notice") {
        if (!notice_sent) {
          exchange->WriteEvent(
              protocol::EncodeLogEvent({"output", "notice", c.data, offset, "", {}, ""}));
        }
        notice_sent = true;
        continue;
      }
      std::int64_t size = static_cast<std::int64_t>(c.data.size());
      if (offset + size > next) {
        std::int64_t skip = std::max<std::int64_t>(next - offset, 0);
        protocol::LogEvent e{
            "output", c.stream, c.data.substr(static_cast<std::size_t>(skip)), offset + skip, "",
            {},       ""};
        exchange->WriteEvent(protocol::EncodeLogEvent(e));
        next = offset + size;
      }
      offset += size;
    }
  }

  // The end event with the session's final status. mu held.
  void Finish() {
    if (finished) return;
    finished = true;
    protocol::LogEvent e;
    e.kind = "end";
    auto s = sessions.Get(session_id);
    if (s.ok() && *s) {
      e.status = std::string(protocol::ToString((*s)->status));
      e.exit_code = (*s)->exit_code;
      e.status_info = (*s)->status_info;
    }
    exchange->WriteEvent(protocol::EncodeLogEvent(e));
    exchange->EndEventStream();
    agents.output().Unsubscribe(session_id, token);
  }

  // The stream stops without an end (the store could not be read): the client follows again.
  void Stop() {
    if (finished) return;
    finished = true;
    exchange->EndEventStream();
    agents.output().Unsubscribe(session_id, token);
  }

  void OnLive(std::int64_t offset, std::vector<ap::OutputChunk> const& chunks, bool end) {
    std::lock_guard<std::mutex> lock(mu);
    if (finished) return;
    if (end) {
      ended = true;
      if (!catching_up) Finish();
      return;
    }
    live_end = std::max(live_end, offset + DataBytes(chunks));
    if (catching_up) return;  // the store has it; read there
    if (exchange->StreamBacklog() > kLag) {
      catching_up = true;
      WaitThenCatchUp();
      return;
    }
    Send(offset, chunks);
  }

  // mu held.
  void WaitThenCatchUp() {
    exchange->WhenDrained(kResume, [self = shared_from_this()] { self->CatchUp(); });
  }

  // One page of the stored log from `next`; then the next page, or live again once caught up.
  void CatchUp() {
    ap::ReadLogs request;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (finished) return;
      request.session_id = session_id;
      request.offset = next;
      request.limit = kCatchUpPage;
    }
    agents.Request(agent_id, request, std::chrono::seconds(30),
                   [self = shared_from_this()](StatusOr<std::string> result) {
                     StatusOr<ap::LogsReply> reply = result.ok()
                                                         ? ap::DecodeLogsReply(*result)
                                                         : StatusOr<ap::LogsReply>(result.status());
                     std::lock_guard<std::mutex> lock(self->mu);
                     if (self->finished) return;
                     if (!reply.ok()) return self->Stop();
                     // No log yet (nothing written so far) reads as an empty one.
                     if (!reply->ok) reply->chunks.clear();
                     self->Send(reply->offset, reply->chunks);
                     bool got = DataBytes(reply->chunks) > 0;
                     bool more = reply->ok && got && self->next < reply->size;
                     if (more || (got && self->next < self->live_end)) {
                       self->empty_reads = 0;
                       return self->WaitThenCatchUp();
                     }
                     if (!got && self->next < self->live_end && self->empty_reads++ == 0) {
                       // Read before the agent stored what it has relayed since: once more. (It
                       // stores before it relays, so a second empty read means it could not store
                       // it.)
                       return self->WaitThenCatchUp();
                     }
                     self->catching_up = false;
                     auto now = self->sessions.Get(self->session_id);
                     if (self->ended || (now.ok() && *now && Ended((*now)->status))) self->Finish();
                   });
  }
};

// 24.09's answer; bytes that are not UTF-8 become U+FFFD (a JSON string cannot hold them).
// `plain`: the text itself (GET /session/_/logs, 24.09's task logs), else {result: {logs}}.
HttpResponse LogsResponse(std::string const& text, bool plain) {
  if (plain) {
    HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.body = text;
    return r;
  }
  json body = {{"result", {{"logs", text}}}};
  return HttpResponse::Json(200, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

// What the log routes share.
struct LogEnv {
  SessionStore& sessions;
  AgentRegistry& agents;
};

// What GET …/logs asks: follow (an event stream), the streams apart, from which byte on.
struct LogRequest {
  bool follow = false;
  bool streams = false;
  std::int64_t from = 0;
  bool plain = false;  ///< the text itself (24.09's task logs)
};

// The stored tail of a session's log, when its agent cannot be read (or no longer keeps it):
// as text, or with `streams` as one stdout chunk after a notice saying so.
HttpResponse StoredLogs(std::string const& text, LogRequest const& q, bool started,
                        char const* why = "the session's agent is out of reach") {
  if (!q.streams) return LogsResponse(text, q.plain);
  protocol::SessionOutput o;
  if (started) {
    o.chunks.push_back({"notice", std::string("[bai: ") + why +
                                      ": this is the end of its output as the manager stored "
                                      "it, streams merged]\n"});
    o.truncated = true;
  }
  if (!text.empty()) o.chunks.push_back({"stdout", text});
  o.next_offset = static_cast<std::int64_t>(text.size());
  return HttpResponse::Json(200, protocol::EncodeSessionOutput(o));
}

// Adds one page of the agent's log to `out` (neighbouring chunks of one stream merged).
void AddPage(protocol::SessionOutput& out, ap::LogsReply const& r) {
  for (auto const& c : r.chunks) {
    if (!out.chunks.empty() && out.chunks.back().first == c.stream && c.stream != "notice") {
      out.chunks.back().second += c.data;
    } else {
      out.chunks.emplace_back(c.stream, c.data);
    }
  }
  out.next_offset = r.offset + DataBytes(r.chunks);
  out.truncated = out.truncated || r.truncated;
}

// The agent's whole log of the session (its head and tail, a notice between); the tail the
// manager stored when the agent cannot be read.
std::optional<HttpResponse> WholeLogs(LogEnv& env, RequestContext& ctx,
                                      LateExchange const& exchange, SessionRecord const& s,
                                      LogRequest const& q, bool reachable) {
  auto stored = env.sessions.MainKernelLogs(s.id);
  if (!stored.ok()) return server::ProblemResponse(stored.status());
  bool started = s.agent_id.has_value();
  if (!reachable) return StoredLogs(*stored, q, started);
  auto out = std::make_shared<protocol::SessionOutput>();
  ReadPages(
      env.agents, *s.agent_id, s.id, 0,
      [out](ap::LogsReply const& r) {
        AddPage(*out, r);
        return true;
      },
      [exchange, headers = ctx.response_headers, out, q, text = *stored, started,
       over = Ended(s.status)](Status st) {
        // The agent answered that it keeps no log of the session: a running kernel that has
        // printed nothing yet (its log file is made by its first output), or an ended one whose
        // log the agent dropped. Neither is an agent out of reach.
        if (st.code() == StatusCode::kNotFound && over) {
          return RespondLate(
              *exchange, headers,
              StoredLogs(text, q, started, "the agent no longer keeps this session's log"));
        }
        if (!st.ok() && st.code() != StatusCode::kNotFound) {
          return RespondLate(*exchange, headers, StoredLogs(text, q, started));
        }
        if (q.streams) {
          return RespondLate(*exchange, headers,
                             HttpResponse::Json(200, protocol::EncodeSessionOutput(*out)));
        }
        std::string all;
        for (auto const& [stream, data] : out->chunks) all += data;
        RespondLate(*exchange, headers, LogsResponse(all, q.plain));
      });
  return std::nullopt;
}

// The log as an event stream: the backlog, then what the kernel prints, until it ends.
std::optional<HttpResponse> FollowLogs(LogEnv& env, RequestContext& ctx,
                                       LateExchange const& exchange, SessionRecord const& s,
                                       LogRequest const& q, bool reachable) {
  if (!s.agent_id) {
    return server::ProblemResponse(MakeProblemStatus(
        ProblemType::kInvalidApiParams,
        "The session has not started yet; wait for it to run (bai session wait --for running)."));
  }
  auto f =
      std::make_shared<Follower>(exchange, env.sessions, env.agents, *s.agent_id, s.id, q.from);
  f->token = env.agents.output().Subscribe(
      s.id, [f](std::int64_t offset, std::vector<ap::OutputChunk> const& chunks, bool end) {
        f->OnLive(offset, chunks, end);
      });
  exchange->OnClose([f] {
    std::lock_guard<std::mutex> lock(f->mu);
    f->finished = true;
    f->agents.output().Unsubscribe(f->session_id, f->token);
  });
  exchange->StartEventStream(ctx.response_headers);
  if (!reachable) {
    // The agent is elsewhere (or gone): what the manager stored, then the end if there is one;
    // else the stream just closes (no `end`), and the client falls back to waiting.
    auto stored = env.sessions.MainKernelLogs(s.id);
    std::lock_guard<std::mutex> lock(f->mu);
    if (stored.ok() && q.from == 0) f->Send(0, {{"stdout", *stored}});
    if (Ended(s.status)) {
      f->Finish();
    } else {
      f->Stop();
    }
    return std::nullopt;
  }
  f->CatchUp();  // the backlog first
  return std::nullopt;
}

std::optional<HttpResponse> GetLogs(LogEnv& env, RequestContext& ctx, LateExchange const& exchange,
                                    bool plain) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return server::ProblemResponse(p.status());
  LogRequest q;
  q.plain = plain;
  q.follow = p->Bool({"follow"}).value_or(false);
  q.streams = p->Bool({"streams"}).value_or(false);
  q.from = p->Int({"offset"}, 0, std::int64_t{1} << 50).value_or(0);
  if (auto st = p->Check(); !st.ok()) return server::ProblemResponse(st);
  auto s = ResolveSession(env.sessions, ctx, true);
  if (!s.ok()) return server::ProblemResponse(s.status());
  bool reachable = s->agent_id && env.agents.Connected().count(*s->agent_id);
  return q.follow ? FollowLogs(env, ctx, exchange, *s, q, reachable)
                  : WholeLogs(env, ctx, exchange, *s, q, reachable);
}

// GET /session/{id}/logs: whole or followed.
std::optional<HttpResponse> SessionLogs(LogEnv& env, RequestContext& ctx,
                                        LateExchange const& exchange) {
  return GetLogs(env, ctx, exchange, /*plain=*/false);
}

// GET /session/_/logs: 24.09's task logs (the 22.03 client's `task-logs`), a session's whole
// output as text, by its id, name or its main kernel's id.
std::optional<HttpResponse> TaskLogs(LogEnv& env, RequestContext& ctx,
                                     LateExchange const& exchange) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return server::ProblemResponse(p.status());
  auto task = p->String({"taskId", "task_id", "session_name", "sessionName"}, true);
  if (auto st = p->Check(); !st.ok()) return server::ProblemResponse(st);
  server::PathParams params = ctx.params;
  params["id"] = *task;
  auto session = env.sessions.SessionOfKernel(*task);
  if (session.ok() && *session) params["id"] = **session;
  server::HttpRequest request = ctx.request;
  request.query.clear();  // taskId is not one of the logs' own parameters
  RequestContext by_id{request, params, ctx.identity, ctx.store, ctx.response_headers};
  return GetLogs(env, by_id, exchange, /*plain=*/true);
}

}  // namespace

void RegisterLogRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  // /session/_/logs before /session/{id}/logs, which would match it too (the first route that
  // matches wins).
  AddRoutes<LogEnv>(api, std::make_shared<LogEnv>(LogEnv{sessions, agents}),
                    {
                        {"GET", "/session/_/logs", AuthLevel::kUser, TaskLogs},
                        {"GET", "/session/{id}/logs", AuthLevel::kUser, SessionLogs},
                    });
}

}  // namespace bai::manager
