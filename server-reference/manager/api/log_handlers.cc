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
                   std::int64_t next = offset + DataBytes(reply->chunks);
                   if (next == offset || next >= reply->size) return done(Status());
                   ReadPages(agents, agent_id, session_id, next, std::move(page), std::move(done));
                 });
}

// One follower: the backlog first, live output after it, the end last.
struct Follower : std::enable_shared_from_this<Follower> {
  std::shared_ptr<server::Exchange> exchange;
  SessionStore& sessions;
  OutputHub& hub;
  std::string session_id;
  std::mutex mu;
  std::int64_t next = 0;  // the offset of the next byte to send
  bool backlog_done = false;
  bool notice_sent = false;
  bool ended = false;
  bool finished = false;
  std::uint64_t token = 0;
  std::vector<std::pair<std::int64_t, std::vector<ap::OutputChunk>>> waiting;  // live, early

  Follower(std::shared_ptr<server::Exchange> e, SessionStore& s, OutputHub& h, std::string id,
           std::int64_t from)
      : exchange(std::move(e)), sessions(s), hub(h), session_id(std::move(id)), next(from) {}

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
    hub.Unsubscribe(session_id, token);
  }

  void OnLive(std::int64_t offset, std::vector<ap::OutputChunk> const& chunks, bool end) {
    std::lock_guard<std::mutex> lock(mu);
    if (finished) return;
    if (end) {
      ended = true;
      if (backlog_done) Finish();
      return;
    }
    if (!backlog_done) {
      waiting.emplace_back(offset, chunks);
      return;
    }
    Send(offset, chunks);
  }

  // The backlog is sent (or could not be read): what came live meanwhile, then maybe the end.
  void BacklogDone(bool session_over) {
    std::lock_guard<std::mutex> lock(mu);
    backlog_done = true;
    for (auto const& [offset, chunks] : waiting) Send(offset, chunks);
    waiting.clear();
    if (ended || session_over) Finish();
  }
};

HttpResponse LogsResponse(std::string const& text) {
  return JsonResponse({{"result", {{"logs", text}}}});
}

std::optional<HttpResponse> GetLogs(SessionStore& sessions, AgentRegistry& agents,
                                    RequestContext& ctx,
                                    std::shared_ptr<server::Exchange> const& exchange) {
  auto p = Params::From(ctx.request);
  if (!p.ok()) return server::ProblemResponse(p.status());
  bool follow = p->Bool({"follow"}).value_or(false);
  std::int64_t from = p->Int({"offset"}, 0, std::int64_t{1} << 50).value_or(0);
  if (auto st = p->Check(); !st.ok()) return server::ProblemResponse(st);
  auto s = ResolveSession(sessions, ctx, true);
  if (!s.ok()) return server::ProblemResponse(s.status());
  bool over = Ended(s->status);
  bool reachable = s->agent_id && agents.Connected().count(*s->agent_id);
  auto headers = ctx.response_headers;

  if (!follow) {
    auto stored = sessions.MainKernelLogs(s->id);
    if (!stored.ok()) return server::ProblemResponse(stored.status());
    if (!reachable) return LogsResponse(*stored);
    // The agent's whole log; the stored tail when it cannot be read.
    auto text = std::make_shared<std::string>();
    ReadPages(
        agents, *s->agent_id, s->id, 0,
        [text](ap::LogsReply const& r) {
          for (auto const& c : r.chunks) *text += c.data;
          return true;
        },
        [exchange, headers, text, fallback = *stored](Status st) {
          RespondLate(*exchange, headers, LogsResponse(st.ok() ? *text : fallback));
        });
    return std::nullopt;
  }

  if (!s->agent_id) {
    return server::ProblemResponse(MakeProblemStatus(
        ProblemType::kInvalidApiParams,
        "The session has not started yet; wait for it to run (bai session wait --for running)."));
  }
  auto f = std::make_shared<Follower>(exchange, sessions, agents.output(), s->id, from);
  f->token = agents.output().Subscribe(
      s->id, [f](std::int64_t offset, std::vector<ap::OutputChunk> const& chunks, bool end) {
        f->OnLive(offset, chunks, end);
      });
  exchange->OnClose([f] { f->hub.Unsubscribe(f->session_id, f->token); });
  exchange->StartEventStream(headers);
  if (!reachable) {
    // The agent is elsewhere (or gone): what the manager stored, then the end if there is one;
    // else the stream just closes (no `end`), and the client falls back to waiting.
    auto stored = sessions.MainKernelLogs(s->id);
    std::lock_guard<std::mutex> lock(f->mu);
    if (stored.ok() && from == 0) f->Send(0, {{"stdout", *stored}});
    if (over) {
      f->Finish();
    } else {
      f->finished = true;
      exchange->EndEventStream();
      agents.output().Unsubscribe(f->session_id, f->token);
    }
    return std::nullopt;
  }
  ReadPages(
      agents, *s->agent_id, s->id, from,
      [f](ap::LogsReply const& r) {
        std::lock_guard<std::mutex> lock(f->mu);
        f->Send(r.offset, r.chunks);
        return !f->finished;
      },
      [f, &sessions, id = s->id](Status) {
        auto now = sessions.Get(id);
        f->BacklogDone(now.ok() && *now && Ended((*now)->status));
      });
  return std::nullopt;
}

}  // namespace

void RegisterLogRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  api.AddAsync(
      "GET", "/session/{id}/logs", AuthLevel::kUser,
      [&sessions, &agents](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange) {
        return GetLogs(sessions, agents, ctx, exchange);
      });
}

}  // namespace bai::manager
