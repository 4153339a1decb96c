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

namespace {

// What the file routes share.
struct FileEnv {
  SessionStore& sessions;
  AgentRegistry& agents;
};

// GET|POST /session/{id}/files: the listing, the path from the JSON body even on GET (as 24.09
// reads it) or the query.
std::optional<HttpResponse> ListFiles(FileEnv& env, RequestContext& ctx,
                                      LateExchange const& exchange) {
  auto t = Resolve(env.sessions, ctx);
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
  Relay(env.agents, *t.session, std::move(request), [exchange, headers](rp::FileResult r) {
    if (!r.status.ok()) {
      return RespondLate(*exchange, headers, ProblemResponse(FileProblem(r.status)));
    }
    RespondLate(*exchange, headers, HttpResponse::Json(200, r.files_json));
  });
  return std::nullopt;
}

// The writes an upload's multipart body asks for, each file checked (count, size, path) before
// any is written.
StatusOr<std::vector<ap::KernelFiles>> UploadWrites(RequestContext& ctx) {
  auto content_type = ctx.request.Header("content-type");
  auto parts = p::DecodeMultipart(content_type.value_or(""), ctx.request.body);
  if (!parts.ok()) return parts.status();
  std::vector<ap::KernelFiles> writes;
  for (auto& part : *parts) {
    if (part.filename.empty()) continue;  // a form field, not a file
    if (static_cast<int>(writes.size()) == p::kSessionUploadMaxFiles) {
      return MakeProblemStatus(ProblemType::kInvalidApiParams,
                               "Too many files: at most " +
                                   std::to_string(p::kSessionUploadMaxFiles) + " in one upload.");
    }
    if (static_cast<std::int64_t>(part.body.size()) > p::kSessionUploadMaxFileBytes) {
      return MakeProblemStatus(
          ProblemType::kInvalidApiParams,
          "Too large file: '" + part.filename + "' has " + std::to_string(part.body.size()) +
              " bytes; each file must be smaller than 1 MiB (use a virtual folder).");
    }
    auto rel = server::WorkRelative(part.filename);
    if (rel.ok() && rel->empty()) rel = Status(StatusCode::kInvalidArgument, "a file needs a name");
    if (!rel.ok()) {
      return FileProblem(
          Status(rel.status().code(), "'" + part.filename + "': " + rel.status().message()));
    }
    ap::KernelFiles w;
    w.action = rp::kFileWrite;
    w.path = *rel;
    w.data = std::move(part.body);
    writes.push_back(std::move(w));
  }
  if (writes.empty()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             "No file to upload (parts named 'src').");
  }
  return writes;
}

// POST /session/{id}/upload: multipart/form-data, each part a file whose name is its path under
// /home/work.
std::optional<HttpResponse> Upload(FileEnv& env, RequestContext& ctx,
                                   LateExchange const& exchange) {
  auto session = ResolveByQuery(env.sessions, ctx);
  auto writes = UploadWrites(ctx);
  if (!writes.ok()) return ProblemResponse(writes.status());
  if (!session.ok()) return ProblemResponse(session.status());
  auto headers = ctx.response_headers;
  std::size_t count = writes->size();
  std::vector<std::string> names;
  for (auto const& w : *writes) names.push_back(w.path);
  RelayAll(env.agents, *session, *std::move(writes), 0, {},
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
             RespondLate(*exchange, headers, ProblemResponse(FileProblem(Status(s.code(), msg))));
           });
  return std::nullopt;
}

// The paths a download's `files` names (each beneath /home/work), or a failure noted on `p`.
std::vector<std::string> DownloadPaths(Params& p) {
  auto const* files = p.Raw({"files"});
  std::vector<std::string> paths;
  if (!files || !files->is_array() || files->empty()) {
    p.Fail("files", "a non-empty list of paths");
    return paths;
  }
  if (static_cast<int>(files->size()) > p::kSessionDownloadMaxFiles) {
    p.Fail("files", "at most " + std::to_string(p::kSessionDownloadMaxFiles) + " paths");
    return paths;
  }
  for (auto const& f : *files) {
    if (!f.is_string()) {
      p.Fail("files", "a list of strings");
      break;
    }
    auto rel = server::WorkRelative(f.get<std::string>());
    if (!rel.ok()) {
      p.Fail("files", rel.status().message());
      break;
    }
    paths.push_back(*rel);
  }
  return paths;
}

// A download's archives, asked one at a time: each may use what the earlier ones left of the
// request's budget. Holds itself only while a request is out.
struct DownloadChain : std::enable_shared_from_this<DownloadChain> {
  AgentRegistry& agents;
  SessionRecord session;
  LateExchange exchange;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> paths;
  std::vector<p::MultipartPart> parts;
  std::int64_t left = p::kSessionDownloadMaxBytes;

  DownloadChain(AgentRegistry& a, SessionRecord s, LateExchange e,
                std::vector<std::pair<std::string, std::string>> h, std::vector<std::string> ps)
      : agents(a),
        session(std::move(s)),
        exchange(std::move(e)),
        headers(std::move(h)),
        paths(std::move(ps)) {}

  void Next() {
    if (parts.size() == paths.size()) {
      std::string boundary = "bai-" + server::agent_protocol::MakeNonce();
      HttpResponse r;
      r.status = 200;
      r.content_type = "multipart/mixed; boundary=" + boundary;
      r.body = p::EncodeMultipart(parts, boundary);
      return RespondLate(*exchange, headers, std::move(r));
    }
    ap::KernelFiles request;
    request.action = rp::kFileArchive;
    request.path = paths[parts.size()];
    request.limit = left;
    Relay(agents, session, std::move(request),
          [self = shared_from_this()](rp::FileResult r) { self->Took(std::move(r)); });
  }

  void Took(rp::FileResult r) {
    if (!r.status.ok()) {
      Status s = r.status;
      if (s.code() == StatusCode::kResourceExhausted) {
        s = Status(s.code(), "The files asked for are larger than " +
                                 std::to_string(p::kSessionDownloadMaxBytes) + " bytes together (" +
                                 s.message() + ")");
      }
      return RespondLate(*exchange, headers, ProblemResponse(FileProblem(s)));
    }
    p::MultipartPart part;
    part.content_type = "application/x-tar";
    part.headers = {{"Content-Disposition",
                     "attachment; filename=\"" + Basename(paths[parts.size()]) + ".tar\""},
                    {"Content-Encoding", "identity"}};
    left -= static_cast<std::int64_t>(r.data.size());
    part.body = std::move(r.data);
    parts.push_back(std::move(part));
    Next();
  }
};

// GET|POST /session/{id}/download: one tar archive per path, as the parts of a multipart/mixed
// answer.
std::optional<HttpResponse> Download(FileEnv& env, RequestContext& ctx,
                                     LateExchange const& exchange) {
  auto t = Resolve(env.sessions, ctx);
  if (!t.params.ok()) return ProblemResponse(t.params.status());
  auto paths = DownloadPaths(*t.params);
  if (auto st = t.params->Check(); !st.ok()) return ProblemResponse(st);
  if (!t.session.ok()) return ProblemResponse(t.session.status());
  std::make_shared<DownloadChain>(env.agents, *t.session, exchange, ctx.response_headers,
                                  std::move(paths))
      ->Next();
  return std::nullopt;
}

// GET|POST /session/{id}/download_single: one file's bytes.
std::optional<HttpResponse> DownloadSingle(FileEnv& env, RequestContext& ctx,
                                           LateExchange const& exchange) {
  auto t = Resolve(env.sessions, ctx);
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
  Relay(env.agents, *t.session, std::move(request), [exchange, headers](rp::FileResult r) {
    if (!r.status.ok()) {
      return RespondLate(*exchange, headers, ProblemResponse(FileProblem(r.status)));
    }
    HttpResponse out;
    out.status = 200;
    out.content_type = "application/octet-stream";
    out.body = std::move(r.data);
    RespondLate(*exchange, headers, std::move(out));
  });
  return std::nullopt;
}

}  // namespace

void RegisterSessionFileRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents) {
  using L = AuthLevel;
  AddRoutes<FileEnv>(api, std::make_shared<FileEnv>(FileEnv{sessions, agents}),
                     {
                         {"GET", "/session/{id}/files", L::kUser, ListFiles},
                         {"POST", "/session/{id}/files", L::kUser, ListFiles},
                         {"POST", "/session/{id}/upload", L::kUser, Upload},
                         {"POST", "/session/{id}/download", L::kUser, Download},
                         {"GET", "/session/{id}/download", L::kUser, Download},
                         {"POST", "/session/{id}/download_single", L::kUser, DownloadSingle},
                         {"GET", "/session/{id}/download_single", L::kUser, DownloadSingle},
                     });
}

}  // namespace bai::manager
