// SPDX-License-Identifier: Apache-2.0
// A running session's files (PROTOCOL.md §5.6): list, upload (multipart), download (tar
// archives in a multipart/mixed answer) and download_single, each relayed to the session's agent
// as `kernel_files` requests and from there to the kernel runner, which works beneath
// /home/work as the work user. Limits are protocol/session_files.h's; every path is checked here
// first (nothing is written when one part is bad) and again where the files are.
#include "bai/protocol/errors.h"
#include "bai/protocol/session_files.h"

#include "server-reference/common/fs/work_files.h"
#include "server-reference/common/http/problem.h"
#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/common/wire/runner_messages.h"
#include "server-reference/manager/agents/agents.h"
#include "server-reference/manager/api/handler_util.h"
#include "server-reference/manager/api/routes.h"

namespace bai::manager {
namespace {

namespace ap = server::agent_protocol;
namespace rp = server::runner_protocol;
namespace p = protocol;
using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::HttpResponse;
using server::ProblemResponse;

constexpr auto kFileTimeout = std::chrono::seconds(60);

// The problem for a file request the kernel refused.
Status FileProblem(Status const& s) {
  // kUnavailable: the agent is not connected here: 503 as made by the registry.
  if (s.code() == StatusCode::kUnavailable) return s;
  return server::ProblemFor(
      s,
      {{{StatusCode::kInvalidArgument, StatusCode::kFailedPrecondition,
         StatusCode::kResourceExhausted},
        ProblemType::kInvalidApiParams},
       {{StatusCode::kNotFound}, ProblemType::kObjectNotFound},
       {{StatusCode::kPermissionDenied}, ProblemType::kGenericForbidden}},
      server::ProblemRule{{}, ProblemType::kInternalServerError, "The kernel could not do it: "});
}

// Sends one file request to the session's agent; `done` gets the kernel's result (its status is
// the transport's error when the agent did not answer).
void Relay(AgentRegistry& agents, SessionRecord const& s, ap::KernelFiles request,
           std::function<void(rp::FileResult)> done) {
  request.session_id = s.id;
  agents.Request(*s.agent_id, std::move(request), kFileTimeout,
                 [done = std::move(done)](StatusOr<std::string> result) {
                   rp::FileResult r;
                   if (!result.ok()) {
                     r.status = result.status();
                   } else if (auto decoded = rp::DecodeFileResult(*result); decoded.ok()) {
                     r = std::move(*decoded);
                   } else {
                     r.status = Status(StatusCode::kInternal,
                                       "malformed agent reply: " + decoded.status().message());
                   }
                   done(std::move(r));
                 });
}

// The session (RUNNING, the caller's or one it may act for) and the parameters of a request
// whose body is JSON (or empty); either may fail.
struct Target {
  StatusOr<SessionRecord> session;
  StatusOr<Params> params;
};

Target Resolve(SessionStore& sessions, RequestContext& ctx) {
  return Target{ResolveRunning(sessions, ctx), Params::From(ctx.request, ParamSource::kBoth)};
}

// The session of a request whose body is not JSON (an upload): `owner_access_key` comes from
// the query alone.
StatusOr<SessionRecord> ResolveByQuery(SessionStore& sessions, RequestContext& ctx) {
  server::HttpRequest head;
  head.method = ctx.request.method;
  head.target = ctx.request.target;
  head.path = ctx.request.path;
  head.query = ctx.request.query;
  head.headers = ctx.request.headers;
  RequestContext bare{head, ctx.params, ctx.identity, ctx.store, ctx.response_headers};
  return ResolveRunning(sessions, bare);
}

// Runs `requests` one after another, stopping at the first failure; `done` gets every result
// (the failed one last).
void RelayAll(AgentRegistry& agents, SessionRecord s, std::vector<ap::KernelFiles> requests,
              std::size_t next, std::vector<rp::FileResult> results,
              std::function<void(std::vector<rp::FileResult>)> done) {
  if (next == requests.size()) return done(std::move(results));
  auto request = requests[next];
  Relay(agents, s, std::move(request),
        [&agents, s, requests = std::move(requests), next, results = std::move(results),
         done = std::move(done)](rp::FileResult r) mutable {
          bool ok = r.status.ok();
          results.push_back(std::move(r));
          if (!ok) return done(std::move(results));
          RelayAll(agents, s, std::move(requests), next + 1, std::move(results), std::move(done));
        });
}

std::string Basename(std::string const& rel) {
  auto slash = rel.rfind('/');
  std::string base = slash == std::string::npos ? rel : rel.substr(slash + 1);
  return base.empty() ? "work" : base;
}

}  // namespace

std::size_t SessionFileBodyLimit(std::string_view method, std::string_view path) {
  static std::string_view const kSuffix = "/upload";
  if (method != "POST" || path.rfind("/session/", 0) != 0 || path.size() < kSuffix.size() ||
      path.substr(path.size() - kSuffix.size()) != kSuffix) {
    return 0;
  }
  // Every part at its largest, with room for its headers.
  return static_cast<std::size_t>(p::kSessionUploadMaxFiles) *
             static_cast<std::size_t>(p::kSessionUploadMaxFileBytes + 8192) +
         8192;
}

void RegisterSessionFileRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  // The listing: the path from the JSON body even on GET (as 24.09 reads it) or the query.
  auto list =
      [&sessions, &agents](
          RequestContext& ctx,
          std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
    auto t = Resolve(sessions, ctx);
    if (!t.params.ok()) return ProblemResponse(t.params.status());
    auto path = t.params->String({"path"});
    if (auto st = t.params->Check(); !st.ok()) return ProblemResponse(st);
    auto rel = server::WorkRelative(path.value_or("."));
    if (!rel.ok()) return ProblemResponse(FileProblem(rel.status()));
    if (!t.session.ok()) return ProblemResponse(t.session.status());
    ap::KernelFiles request;
    request.action = rp::kFileList;
    request.path = *rel;
    auto headers = ctx.response_headers;
    Relay(agents, *t.session, std::move(request), [exchange, headers](rp::FileResult r) {
      if (!r.status.ok())
        return RespondLate(*exchange, headers, ProblemResponse(FileProblem(r.status)));
      RespondLate(*exchange, headers, HttpResponse::Json(200, r.files_json));
    });
    return std::nullopt;
  };
  api.AddAsync("GET", "/session/{id}/files", AuthLevel::kUser, list);
  api.AddAsync("POST", "/session/{id}/files", AuthLevel::kUser, list);

  // Upload: multipart/form-data, each part a file whose name is its path under /home/work.
  api.AddAsync(
      "POST", "/session/{id}/upload", AuthLevel::kUser,
      [&sessions, &agents](RequestContext& ctx, std::shared_ptr<server::Exchange> const& exchange)
          -> std::optional<HttpResponse> {
        auto session = ResolveByQuery(sessions, ctx);
        auto content_type = ctx.request.Header("content-type");
        auto parts = p::DecodeMultipart(content_type.value_or(""), ctx.request.body);
        if (!parts.ok()) return ProblemResponse(parts.status());
        std::vector<ap::KernelFiles> writes;
        for (auto& part : *parts) {
          if (part.filename.empty()) continue;  // a form field, not a file
          if (static_cast<int>(writes.size()) == p::kSessionUploadMaxFiles) {
            return ProblemResponse(MakeProblemStatus(ProblemType::kInvalidApiParams,
                                                     "Too many files: at most " +
                                                         std::to_string(p::kSessionUploadMaxFiles) +
                                                         " in one upload."));
          }
          if (static_cast<std::int64_t>(part.body.size()) > p::kSessionUploadMaxFileBytes) {
            return ProblemResponse(MakeProblemStatus(
                ProblemType::kInvalidApiParams,
                "Too large file: '" + part.filename + "' has " + std::to_string(part.body.size()) +
                    " bytes; each file must be smaller than 1 MiB (use a virtual folder)."));
          }
          auto rel = server::WorkRelative(part.filename);
          if (rel.ok() && rel->empty()) {
            rel = Status(StatusCode::kInvalidArgument, "a file needs a name");
          }
          if (!rel.ok()) {
            return ProblemResponse(FileProblem(
                Status(rel.status().code(), "'" + part.filename + "': " + rel.status().message())));
          }
          ap::KernelFiles w;
          w.action = rp::kFileWrite;
          w.path = *rel;
          w.data = std::move(part.body);
          writes.push_back(std::move(w));
        }
        if (writes.empty()) {
          return ProblemResponse(MakeProblemStatus(ProblemType::kInvalidApiParams,
                                                   "No file to upload (parts named 'src')."));
        }
        if (!session.ok()) return ProblemResponse(session.status());
        auto headers = ctx.response_headers;
        std::size_t count = writes.size();
        std::vector<std::string> names;
        for (auto const& w : writes) names.push_back(w.path);
        RelayAll(agents, *session, std::move(writes), 0, {},
                 [exchange, headers, count, names](std::vector<rp::FileResult> results) {
                   if (results.size() == count && results.back().status.ok()) {
                     return RespondLate(*exchange, headers, HttpResponse::NoContent());
                   }
                   // Say what is there and what is not: earlier files were written whole.
                   std::size_t failed = results.size() - 1;
                   Status s = results.back().status;
                   std::string written;
                   for (std::size_t i = 0; i < failed; ++i) written += (i ? ", " : "") + names[i];
                   std::string msg = "'" + names[failed] + "': " + s.message() +
                                     (written.empty() ? std::string(" (nothing was written)")
                                                      : " (written before it: " + written + ")");
                   RespondLate(*exchange, headers,
                               ProblemResponse(FileProblem(Status(s.code(), msg))));
                 });
        return std::nullopt;
      });

  // Download: one tar archive per path, as the parts of a multipart/mixed answer.
  auto download =
      [&sessions, &agents](
          RequestContext& ctx,
          std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
    auto t = Resolve(sessions, ctx);
    if (!t.params.ok()) return ProblemResponse(t.params.status());
    auto const* files = t.params->Raw({"files"});
    std::vector<std::string> paths;
    if (!files || !files->is_array() || files->empty()) {
      t.params->Fail("files", "a non-empty list of paths");
    } else if (static_cast<int>(files->size()) > p::kSessionDownloadMaxFiles) {
      t.params->Fail("files", "at most " + std::to_string(p::kSessionDownloadMaxFiles) + " paths");
    } else {
      for (auto const& f : *files) {
        if (!f.is_string()) {
          t.params->Fail("files", "a list of strings");
          break;
        }
        auto rel = server::WorkRelative(f.get<std::string>());
        if (!rel.ok()) {
          t.params->Fail("files", rel.status().message());
          break;
        }
        paths.push_back(*rel);
      }
    }
    if (auto st = t.params->Check(); !st.ok()) return ProblemResponse(st);
    if (!t.session.ok()) return ProblemResponse(t.session.status());
    auto headers = ctx.response_headers;
    // Each archive may use what the earlier ones left of the request's budget: asked one at a
    // time so the budget is known.
    struct State {
      std::vector<std::string> paths;
      std::vector<p::MultipartPart> parts;
      std::int64_t left = p::kSessionDownloadMaxBytes;
    };
    auto state = std::make_shared<State>();
    state->paths = std::move(paths);
    // The chain holds itself only while a request is out (a weak reference otherwise), so it
    // is freed once it answered.
    auto step = std::make_shared<std::function<void()>>();
    std::weak_ptr<std::function<void()>> weak = step;
    *step = [&agents, session = *t.session, exchange, headers, state, weak] {
      if (state->parts.size() == state->paths.size()) {
        std::string boundary = "bai-" + server::agent_protocol::MakeNonce();
        HttpResponse r;
        r.status = 200;
        r.content_type = "multipart/mixed; boundary=" + boundary;
        r.body = p::EncodeMultipart(state->parts, boundary);
        return RespondLate(*exchange, headers, std::move(r));
      }
      ap::KernelFiles request;
      request.action = rp::kFileArchive;
      request.path = state->paths[state->parts.size()];
      request.limit = state->left;
      Relay(agents, session, std::move(request),
            [exchange, headers, state, next = weak.lock()](rp::FileResult r) {
              if (!r.status.ok()) {
                Status s = r.status;
                if (s.code() == StatusCode::kResourceExhausted) {
                  s = Status(s.code(), "The files asked for are larger than " +
                                           std::to_string(p::kSessionDownloadMaxBytes) +
                                           " bytes together (" + s.message() + ")");
                }
                return RespondLate(*exchange, headers, ProblemResponse(FileProblem(s)));
              }
              p::MultipartPart part;
              part.content_type = "application/x-tar";
              part.headers = {{"Content-Disposition",
                               "attachment; filename=\"" +
                                   Basename(state->paths[state->parts.size()]) + ".tar\""},
                              {"Content-Encoding", "identity"}};
              state->left -= static_cast<std::int64_t>(r.data.size());
              part.body = std::move(r.data);
              state->parts.push_back(std::move(part));
              (*next)();
            });
    };
    (*step)();
    return std::nullopt;
  };
  api.AddAsync("POST", "/session/{id}/download", AuthLevel::kUser, download);
  api.AddAsync("GET", "/session/{id}/download", AuthLevel::kUser, download);

  // One file's bytes.
  auto single =
      [&sessions, &agents](
          RequestContext& ctx,
          std::shared_ptr<server::Exchange> const& exchange) -> std::optional<HttpResponse> {
    auto t = Resolve(sessions, ctx);
    if (!t.params.ok()) return ProblemResponse(t.params.status());
    auto file = t.params->String({"file"}, true);
    if (auto st = t.params->Check(); !st.ok()) return ProblemResponse(st);
    auto rel = server::WorkRelative(*file);
    if (!rel.ok()) return ProblemResponse(FileProblem(rel.status()));
    if (!t.session.ok()) return ProblemResponse(t.session.status());
    ap::KernelFiles request;
    request.action = rp::kFileRead;
    request.path = *rel;
    request.limit = p::kSessionDownloadMaxBytes;
    auto headers = ctx.response_headers;
    Relay(agents, *t.session, std::move(request), [exchange, headers](rp::FileResult r) {
      if (!r.status.ok())
        return RespondLate(*exchange, headers, ProblemResponse(FileProblem(r.status)));
      HttpResponse out;
      out.status = 200;
      out.content_type = "application/octet-stream";
      out.body = std::move(r.data);
      RespondLate(*exchange, headers, std::move(out));
    });
    return std::nullopt;
  };
  api.AddAsync("POST", "/session/{id}/download_single", AuthLevel::kUser, single);
  api.AddAsync("GET", "/session/{id}/download_single", AuthLevel::kUser, single);
}

}  // namespace bai::manager
