// SPDX-License-Identifier: Apache-2.0
#include "bai/session_client.h"

#include "bai/protocol/errors.h"
#include "bai/protocol/pty_wire.h"

#include "libbai/internal/server_request.h"
#include "libbai/protocol/server_dialect.h"
#include "libbai/util/json_parse.h"
#include "libbai/util/sse.h"
#include "libbai/util/url.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <thread>
#include <vector>

namespace bai {

using nlohmann::json;

namespace {

// Path segment for a session reference.
std::string Segment(std::string const& text) { return internal::EncodeSegment(text); }

// The body of a successful answer; a non-2xx answer is its error.
StatusOr<std::string> CallBody(Client const& client, ApiRequest const& request) {
  auto response = client.Send(request);
  if (!response.ok()) return std::move(response).status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  return std::move(response->body);
}

Status Malformed(std::string_view body) {
  return Status(StatusCode::kInternal,
                "malformed response from the server: " + std::string(body.substr(0, 200)));
}

StatusOr<json> Call(Client const& client, ApiRequest const& request) {
  auto body = CallBody(client, request);
  if (!body.ok()) return std::move(body).status();
  if (body->empty()) return json(nullptr);
  auto j = internal::ParseJson(*body);
  if (!j) return Malformed(*body);
  return *j;
}

std::optional<std::string> OptString(json const& j, char const* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// Opens a Server-Sent Event stream at `path` and feeds it to `on_event` until that returns false
// or the stream ends; `on_open` runs once the stream is open. A non-2xx answer is its error.
// `keep_going` is asked while the stream is quiet (the transport's empty chunks).
Status StreamEvents(Client const& client, std::string path, internal::SseParser::Handler on_event,
                    std::function<void()> const& on_open = {},
                    std::function<bool()> const& keep_going = {},
                    std::shared_ptr<StreamCancel> cancel = nullptr) {
  internal::SseParser parser(std::move(on_event));
  ApiRequest request{"GET", std::move(path)};
  request.cancel = std::move(cancel);
  request.headers.emplace_back("Accept", "text/event-stream");
  bool opened = false;
  auto response = client.SendStreaming(request, [&](std::string_view chunk) {
    if (chunk.empty()) {
      if (!opened && on_open) on_open();
      opened = true;
      return !keep_going || keep_going();
    }
    return parser.Feed(chunk);
  });
  if (!response.ok()) return response.status();
  return CheckResponse(*response);
}

}  // namespace

std::string ShellJoin(std::vector<std::string> const& argv) {
  std::string out;
  for (auto const& arg : argv) {
    if (!out.empty()) out.push_back(' ');
    bool plain = !arg.empty();
    for (char c : arg) {
      bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
      plain = plain && safe;
    }
    if (plain) {
      out += arg;
      continue;
    }
    out.push_back('\'');
    for (char c : arg) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out.push_back(c);
      }
    }
    out.push_back('\'');
  }
  return out;
}

StatusOr<ExecuteResult> SessionClient::Execute(std::string const& session,
                                               ExecuteStep const& step) const {
  ApiRequest req;
  req.method = "POST";
  req.path = "/session/" + Segment(session);
  req.body = protocol::EncodeExecuteStep(step);
  auto j = Call(client_, req);
  if (!j.ok()) return std::move(j).status();
  json r = j->is_object() ? j->value("result", json::object()) : json::object();
  auto out = protocol::DecodeExecuteResult(r.is_object() ? r.dump() : "{}");
  if (!out.ok()) {
    return Status(StatusCode::kInternal, "malformed execute result: " + out.status().message() +
                                             ": " + r.dump().substr(0, 200));
  }
  if (out->run_id.empty()) out->run_id = step.run_id;
  return out;
}

StatusOr<int> SessionClient::ExecuteStream(std::string const& session, std::string const& code,
                                           StreamExecuteOptions const& options) const {
  auto ws =
      client_.OpenWebSocket(ApiRequest("GET", "/stream/session/" + Segment(session) + "/execute"));
  if (!ws.ok()) return std::move(ws).status();
  auto& socket = **ws;
  struct Detach {
    std::shared_ptr<StreamCancel> const& cancel;
    ~Detach() {
      if (cancel) cancel->Detach();
    }
  } detach{options.cancel};
  if (options.cancel) {
    auto* raw = &socket;
    options.cancel->Attach([raw] { raw->Cancel(); });
    if (options.cancel->cancelled()) socket.Cancel();
  }
  ExecuteStep first;
  first.mode = options.mode;
  first.code = code;
  first.options = options.options;
  if (auto st = socket.Send({protocol::EncodeExecuteStep(first), false}); !st.ok()) return st;
  while (true) {
    auto e = socket.Receive(std::chrono::seconds(1));
    if (e.kind == WebSocketEvent::Kind::kTimeout) continue;
    if (e.kind == WebSocketEvent::Kind::kClosed) {
      auto st = socket.CloseStatus();
      if (!st.ok()) return st;
      return Status(StatusCode::kUnavailable, "the execute stream closed before the run finished");
    }
    if (e.message.binary) continue;  // no part of the protocol
    auto frame = protocol::DecodeExecuteResult(e.message.data);
    if (!frame.ok()) {
      return Status(StatusCode::kInternal, "malformed execute frame: " + frame.status().message());
    }
    if (options.on_output) {
      for (auto const& [stream, text] : frame->console) options.on_output(stream, text);
    }
    if (frame->status == "finished") return static_cast<int>(frame->exit_code.value_or(0));
    if (frame->status == "error" || frame->status == "server-restarting") {
      return Status(frame->status == "error" ? StatusCode::kInternal : StatusCode::kUnavailable,
                    frame->msg.empty() ? "the server ended the run" : frame->msg);
    }
    if (frame->status == "waiting-input") {
      if (!options.on_input) {
        socket.Cancel();
        return Status(StatusCode::kFailedPrecondition,
                      "the code waits for input and no input callback was given");
      }
      auto line = options.on_input(frame->prompt, frame->is_password);
      if (!line.ok()) {
        socket.Cancel();
        return std::move(line).status();
      }
      if (auto st = socket.Send({*line, false}); !st.ok()) return st;
    }
  }
}

StatusOr<int> SessionClient::ExecPiped(
    std::string const& session, std::vector<std::string> const& command,
    std::function<void(std::string const&, std::string const&)> const& on_output, int stdin_fd,
    std::function<bool()> const& cancelled) const {
  if (command.empty()) return Status(StatusCode::kInvalidArgument, "no command to run");
  auto info = client_.GetServerInfo();
  if (!info.ok()) return std::move(info).status();
  if (info->manager.rfind("bai-manager", 0) != 0) {
    return Status(StatusCode::kUnimplemented,
                  "the server (" + info->manager + ") has no command stream");
  }
  std::string path = "/stream/session/" + Segment(session) +
                     "/exec?command=" + internal::EncodeSegment(json(command).dump());
  auto ws = client_.OpenWebSocket(ApiRequest("GET", path));
  if (!ws.ok()) return std::move(ws).status();
  auto& socket = **ws;
  using Frame = protocol::PtyFrame;
  // Stdin → the command, on a thread of its own: each read waits for the socket to take the
  // one before (Send pushes back), so a command that does not read holds the reader back.
  int stop[2] = {-1, -1};
  if (pipe2(stop, O_CLOEXEC) != 0) return Status(StatusCode::kInternal, "pipe failed");
  std::thread input([&socket, stdin_fd, stop_fd = stop[0]] {
    std::vector<char> buf(64 << 10);
    while (stdin_fd >= 0) {
      pollfd p[2] = {{stdin_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (p[1].revents) return;
      ssize_t n = ::read(stdin_fd, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;
      Frame f{Frame::Type::kStdin, std::string(buf.data(), static_cast<std::size_t>(n))};
      if (!socket.Send({protocol::EncodePtyFrame(f), false}).ok()) return;
    }
    (void)socket.Send({protocol::EncodePtyFrame({Frame::Type::kEof, ""}), false});
  });
  // However this ends, the reader stops: woken from its poll, or from a Send the socket's
  // cancellation fails.
  struct Join {
    std::thread& t;
    int* stop;
    WebSocketConnection& socket;
    ~Join() {
      (void)!::write(stop[1], "x", 1);
      socket.Cancel();
      t.join();
      ::close(stop[0]);
      ::close(stop[1]);
    }
  } join{input, stop, socket};
  while (true) {
    if (cancelled && cancelled()) {
      socket.Close(1000, "cancelled");
      return Status(StatusCode::kCancelled, "interrupted");
    }
    auto e = socket.Receive(std::chrono::milliseconds(200));
    if (e.kind == WebSocketEvent::Kind::kTimeout) continue;
    if (e.kind == WebSocketEvent::Kind::kClosed) {
      auto st = socket.CloseStatus();
      if (!st.ok()) return st;
      return Status(StatusCode::kAborted, "the command's stream closed without an exit code");
    }
    auto frame = protocol::DecodePtyFrame(e.message.data);
    if (!frame.ok()) return frame.status();
    switch (frame->type) {
      case Frame::Type::kOut:
      case Frame::Type::kErr:
        if (on_output)
          on_output(frame->type == Frame::Type::kOut ? "stdout" : "stderr", frame->data);
        break;
      case Frame::Type::kExit:
        socket.Close(1000, "");
        return frame->code;
      case Frame::Type::kError:
        return Status(StatusCode::kInternal, "the command's stream says: " + frame->data);
      default:
        break;
    }
  }
}

StatusOr<std::unique_ptr<Terminal>> SessionClient::OpenTerminal(
    std::string const& session, int rows, int cols, std::vector<std::string> const& command) const {
  std::string path = "/stream/session/" + Segment(session) + "/pty?rows=" + std::to_string(rows) +
                     "&cols=" + std::to_string(cols);
  if (!command.empty()) path += "&command=" + internal::EncodeSegment(json(command).dump());
  auto ws = client_.OpenWebSocket(ApiRequest("GET", path));
  if (!ws.ok()) return std::move(ws).status();
  return std::make_unique<Terminal>(std::move(*ws));
}

Status Terminal::Write(std::string_view bytes) {
  return socket_->Send(
      {protocol::EncodePtyFrame({protocol::PtyFrame::Type::kStdin, std::string(bytes)}), false});
}

Status Terminal::Resize(int rows, int cols) {
  protocol::PtyFrame f;
  f.type = protocol::PtyFrame::Type::kResize;
  f.rows = rows;
  f.cols = cols;
  return socket_->Send({protocol::EncodePtyFrame(f), false});
}

Status Terminal::Restart() {
  protocol::PtyFrame f;
  f.type = protocol::PtyFrame::Type::kRestart;
  return socket_->Send({protocol::EncodePtyFrame(f), false});
}

StatusOr<Terminal::Output> Terminal::Read(std::chrono::milliseconds timeout) {
  Output out;
  auto e = socket_->Receive(timeout);
  if (e.kind == WebSocketEvent::Kind::kTimeout) return out;
  if (e.kind == WebSocketEvent::Kind::kClosed) {
    auto st = socket_->CloseStatus();
    if (!st.ok()) return st;
    return Status(StatusCode::kAborted, "the terminal closed without an exit code");
  }
  auto frame = protocol::DecodePtyFrame(e.message.data);
  if (!frame.ok()) return frame.status();
  switch (frame->type) {
    case protocol::PtyFrame::Type::kOut:
      out.data = std::move(frame->data);
      break;
    case protocol::PtyFrame::Type::kExit:
      out.exit_code = frame->code;
      break;
    case protocol::PtyFrame::Type::kError:
      return Status(StatusCode::kInternal, "the terminal says: " + frame->data);
    default:
      break;
  }
  return out;
}

StatusOr<std::vector<protocol::ServicePort>> SessionClient::ListApps(
    std::string const& session) const {
  auto r = client_.Send(ApiRequest("GET", "/stream/session/" + Segment(session) + "/apps"));
  if (!r.ok()) return std::move(r).status();
  if (auto st = CheckResponse(*r); !st.ok()) return st;
  return protocol::DecodeApps(r->body);
}

Status SessionClient::StopApp(std::string const& session, std::string const& app) const {
  ApiRequest call("POST", "/session/" + Segment(session) + "/shutdown-service");
  call.body = json{{"service_name", app}}.dump();
  auto r = client_.Send(call);
  if (!r.ok()) return std::move(r).status();
  return CheckResponse(*r);
}

StatusOr<FitCheck> SessionClient::CheckFit(SessionCreateRequest const& request) const {
  ApiRequest call("POST", "/resource/check-presets");
  json body = {{"group", request.group.empty() ? "default" : request.group}};
  if (request.scaling_group) body["scaling_group"] = *request.scaling_group;
  call.body = body.dump();
  call.idempotent = true;
  auto j = Call(client_, call);
  if (!j.ok()) return std::move(j).status();
  // A slot's amount left in `within`: "Infinity" and slots the map does not name are unlimited
  // for the keypair (no limit declared); for the resource group a slot it does not name is one
  // no agent of it offers.
  auto left = [](json const& within, std::string const& slot, bool unnamed_unlimited) {
    auto it = within.is_object() ? within.find(slot) : within.end();
    if (it == within.end()) {
      return unnamed_unlimited || !within.is_object() || within.empty()
                 ? protocol::Decimal::Unlimited()
                 : protocol::Decimal();
    }
    if (!it->is_string()) return protocol::Decimal::Unlimited();
    auto d = protocol::Decimal::Parse(it->get<std::string>());
    return d.ok() ? *d : protocol::Decimal::Unlimited();
  };
  json const& keypair = (*j)["keypair_remaining"];
  json const& group = request.scaling_group && j->contains("scaling_groups")
                          ? (*j)["scaling_groups"][*request.scaling_group]["remaining"]
                          : (*j)["scaling_group_remaining"];
  // What the session would get: the request over the server's defaults.
  protocol::ResourceSlots wanted = protocol::DefaultSessionSlots();
  for (auto const& [slot, amount] : request.resources) wanted[slot] = amount;
  FitCheck out{true, ""};
  auto say = [&out](std::string const& words) {
    out.fits = false;
    out.reason += (out.reason.empty() ? "" : "; ") + words;
  };
  for (auto const& [slot, amount] : wanted) {
    if (amount.is_zero()) continue;
    auto mine = left(keypair, slot, true);
    if (amount > mine) {
      say(slot + "=" + amount.ToString() + " exceeds the keypair's remaining " + mine.ToString());
    }
    bool offered = !group.is_object() || group.empty() || group.contains(slot);
    auto free = left(group, slot, false);
    if (!offered) {
      say("no agent of the resource group offers " + slot);
    } else if (amount > free) {
      say(slot + "=" + amount.ToString() + " exceeds the resource group's free " + free.ToString());
    }
  }
  if (out.fits) {
    out.reason =
        std::string(request.resources.empty() ? "the server's defaults (cpu=1, mem=1g) " : "") +
        "within the keypair's remaining and the resource group's free capacity";
  }
  return out;
}

Status SessionClient::Rename(std::string const& session, std::string const& new_name) const {
  ApiRequest request("POST", "/session/" + Segment(session) + "/rename");
  request.body = json{{"name", new_name}}.dump();
  auto body = CallBody(client_, request);
  return body.ok() ? Status() : body.status();
}

Status SessionClient::Restart(std::string const& session) const {
  auto body = CallBody(client_, ApiRequest("PATCH", "/session/" + Segment(session)));
  return body.ok() ? Status() : body.status();
}

StatusOr<int> SessionClient::Exec(
    std::string const& session, std::string const& command,
    std::function<void(std::string const&, std::string const&)> const& on_output,
    std::function<bool()> const& cancelled) const {
  ExecuteStep step;
  step.mode = "batch";
  step.options["exec"] = command;
  while (true) {
    auto r = Execute(session, step);
    if (!r.ok()) return std::move(r).status();
    for (auto const& [stream, text] : r->console) {
      if (on_output && (stream == "stdout" || stream == "stderr")) on_output(stream, text);
    }
    if (r->status == "finished") {
      return r->exit_code ? static_cast<int>(*r->exit_code) : 0;
    }
    if (r->status != "continued" && r->status != "waiting-input") {
      return Status(StatusCode::kAborted,
                    "the command ended without an exit code (" + r->status + ")");
    }
    if (cancelled && cancelled()) {
      // This command only: a batch session's job keeps running.
      (void)CallBody(client_, ApiRequest("POST", "/session/" + Segment(session) +
                                                     "/interrupt?run_id=" + Segment(r->run_id)));
      return Status(StatusCode::kCancelled, "interrupted");
    }
    step = ExecuteStep{};
    step.mode = r->status == "waiting-input" ? "input" : "continue";
    step.run_id = r->run_id;
  }
}

namespace {

// Whether the user named the session by its UUID (else by its name).
bool IsSessionUuid(std::string const& session) {
  return session.size() == 36 && session[8] == '-' && session[13] == '-';
}

// The list filter that finds one session by what the user gave: its UUID or its name.
std::string FilterForSession(std::string const& session) {
  return std::string(IsSessionUuid(session) ? "id" : "name") + " == \"" + session + "\"";
}

}  // namespace

StatusOr<SessionCreateResult> SessionClient::Create(SessionCreateRequest const& r) const {
  auto const& options = client_.options();
  SessionCreateRequest body = r;
  if (body.group.empty()) body.group = options.group;
  if (body.domain.empty()) body.domain = options.domain;
  auto caps = client_.server();
  // Backend.AI (22.03 to 26.x) requires a name, and checks it: one is made, as the official
  // client makes one, and a given one is checked here with the server's own rule.
  bool backend_ai = caps.ok() && caps->kind == ServerCapabilities::Kind::kBackendAi;
  if (body.name.empty() && !(caps.ok() && caps->has("session-name-optional"))) {
    std::random_device random;
    body.name = protocol::GeneratedSessionName((std::uint64_t{random()} << 32) | random());
  } else if (backend_ai) {
    if (auto why = protocol::CheckSessionName(body.name); !why.empty()) {
      return protocol::MakeProblemStatus(protocol::ProblemType::kInvalidApiParams, why);
    }
  }
  // A key newer than 24.09 is sent only when the server can take it, else left out with a
  // warning (DECISIONS.md "Protocol"): batch_timeout, kept by Backend.AI 24.12 and later.
  if (body.batch_timeout_seconds && !(caps.ok() && caps->has("batch-timeout"))) {
    body.batch_timeout_seconds.reset();
    if (options.warning_log) {
      options.warning_log(
          "this server does not keep a batch timeout (Backend.AI " +
          protocol::FirstReleaseWith("batch-timeout") +
          " or later, or bai's manager, does); not sent: the session runs without one");
    }
  }
  // A priority a server cannot keep is refused here, with the release that can (24.09), rather
  // than dropped or sent to be refused as an unknown key.
  if (body.priority && caps.ok() && !caps->has("session-priority")) {
    return internal::Needs(*caps, "session priorities",
                           protocol::FirstReleaseWith("session-priority"));
  }
  ApiRequest request{"POST", "/session"};
  request.body = protocol::EncodeSessionCreateRequest(body);
  auto answer = CallBody(client_, request);
  if (!answer.ok()) return std::move(answer).status();
  auto out = protocol::DecodeSessionCreateResult(*answer);
  if (!out.ok()) return Malformed(*answer);
  if (out->name.empty()) out->name = r.name;
  return out;
}

StatusOr<SessionInfo> SessionClient::Info(std::string const& session) const {
  auto answer = CallBody(client_, {"GET", "/session/" + Segment(session)});
  if (!answer.ok()) return std::move(answer).status();
  auto out = protocol::DecodeSessionInfo(*answer);
  if (!out.ok()) return Malformed(*answer);
  if (out->id.empty()) {
    // 23.09's answer names the session neither way, nor says its type or resource group:
    // those come from the session list (one more request, only for such servers).
    SessionListOptions find;
    find.filter = FilterForSession(session);
    find.limit = 2;
    if (auto items = ListAll(find); items.ok() && items->size() == 1) {
      auto const& item = items->front();
      out->id = item.id;
      out->name = item.name;
      if (out->type.empty()) out->type = item.type;
      if (out->scaling_group.empty()) out->scaling_group = item.scaling_group;
    } else if (IsSessionUuid(session)) {
      out->id = session;  // at least what was asked for, when it is the id
    } else {
      out->name = session;
    }
  }
  return out;
}

Status SessionClient::Destroy(std::string const& session, bool forced) const {
  auto j =
      Call(client_, {"DELETE", "/session/" + Segment(session) + (forced ? "?forced=true" : "")});
  return j.ok() ? Status() : j.status();
}

StatusOr<std::string> SessionClient::Logs(std::string const& session) const {
  auto j = Call(client_, {"GET", "/session/" + Segment(session) + "/logs"});
  if (!j.ok()) return std::move(j).status();
  auto logs = j->find("result");
  if (logs == j->end() || !logs->is_object() || !logs->contains("logs")) return std::string();
  auto const& text = (*logs)["logs"];
  return text.is_string() ? text.get<std::string>() : text.dump();
}

StatusOr<protocol::SessionOutput> SessionClient::Output(std::string const& session) const {
  if (auto caps = client_.server(); caps.ok() && !caps->has("bai-extensions")) {
    // Backend.AI keeps the container's log as one text (it refuses `streams`): one chunk.
    auto text = Logs(session);
    if (!text.ok()) return std::move(text).status();
    protocol::SessionOutput out;
    if (!text->empty()) out.chunks.emplace_back("stdout", *text);
    out.next_offset = static_cast<std::int64_t>(text->size());
    return out;
  }
  auto body = CallBody(client_, {"GET", "/session/" + Segment(session) + "/logs?streams=true"});
  if (!body.ok()) return std::move(body).status();
  return protocol::DecodeSessionOutput(*body);
}

StatusOr<SessionEnd> SessionClient::FollowLogs(
    std::string const& session, std::function<void(protocol::LogEvent const&)> const& on_output,
    std::int64_t offset, std::function<bool()> const& keep_going) const {
  std::optional<SessionEnd> end;
  Status bad;
  bool stopped = false;
  auto st = StreamEvents(
      client_,
      "/session/" + Segment(session) + "/logs?follow=true&offset=" + std::to_string(offset),
      [&](std::string const& event, std::string const& data) {
        auto e = protocol::DecodeLogEvent(event, data);
        if (!e.ok()) {
          bad = e.status();
          return false;
        }
        if (e->kind == "end") {
          end = SessionEnd{e->status, e->exit_code, e->status_info};
          return false;
        }
        if (on_output) on_output(*e);
        return true;
      },
      {},
      [&] {
        stopped = keep_going && !keep_going();
        return !stopped;
      });
  if (!st.ok()) return st;
  if (!bad.ok()) return bad;
  if (end) return *end;
  if (stopped) return Status(StatusCode::kCancelled, "stopped following " + session);
  return Status(StatusCode::kUnavailable, "the log stream of " + session + " ended early");
}

StatusOr<std::map<std::string, std::string>> SessionClient::StatusHistory(
    std::string const& session) const {
  if (auto caps = client_.server(); caps.ok() && !caps->has("bai-extensions")) {
    // Backend.AI has no route for it: its GraphQL has the field (a JSON object as text).
    protocol::GraphqlRequest q;
    q.query =
        "query($f: String) { compute_session_list(limit: 2, offset: 0, filter: $f) { items { id "
        "status_history } } }";
    q.variables_json = json{{"f", FilterForSession(session)}}.dump();
    auto data = RunGraphql(client_, q);
    if (!data.ok()) return std::move(data).status();
    auto j = internal::ParseJson(*data);
    json items = j ? (*j)["compute_session_list"]["items"] : json();
    if (!items.is_array() || items.empty()) {
      return protocol::MakeProblemStatus(protocol::ProblemType::kObjectNotFound,
                                         "No such session: " + session);
    }
    if (!items[0].contains("status_history")) {
      return internal::Needs(*caps, "session status history", "22.09");
    }
    auto history = items[0]["status_history"];
    if (history.is_string())
      history = internal::ParseJson(history.get<std::string>()).value_or(json());
    std::map<std::string, std::string> out;
    if (history.is_object()) {
      for (auto const& [k, v] : history.items())
        out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
    return out;
  }
  auto j = Call(client_, {"GET", "/session/" + Segment(session) + "/status-history"});
  if (!j.ok()) return std::move(j).status();
  json const& result = j->contains("result") ? (*j)["result"] : *j;
  std::map<std::string, std::string> out;
  if (result.is_object()) {
    for (auto const& [k, v] : result.items())
      out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out;
}

Status SessionClient::WatchEvents(SessionEventFilter const& filter,
                                  std::function<bool(SessionEvent const&)> const& on_event,
                                  std::function<void()> const& on_open,
                                  std::function<bool()> const& keep_going,
                                  std::shared_ptr<StreamCancel> cancel) const {
  std::string query;
  auto add = [&query](char const* key, std::optional<std::string> const& value) {
    if (!value) return;
    query += (query.empty() ? "?" : "&") + std::string(key) + "=" + Segment(*value);
  };
  add("sessionId", filter.session_id);
  add("sessionName", filter.session_name);
  add("ownerAccessKey", filter.owner_access_key);
  add("groupName", filter.group);
  bool stopped = false;
  auto s = StreamEvents(
      client_, "/events/session" + query,
      [&](std::string const& name, std::string const& data) {
        SessionEvent e;
        e.name = name;
        e.raw_json = data;
        if (auto d = protocol::DecodeSessionEventData(data); d.ok()) {
          e.session_id = d->session_id;
          e.session_name = d->session_name;
          e.reason = d->reason;
          e.exit_code = d->exit_code;
        }
        if (!on_event(e)) stopped = true;
        return !stopped;
      },
      on_open,
      [&] {
        if (keep_going && !keep_going()) stopped = true;
        return !stopped;
      },
      cancel);
  if (!s.ok()) return s;
  if (stopped || (cancel && cancel->cancelled())) return {};
  return Status(StatusCode::kUnavailable, "the event stream ended");
}

StatusOr<CommitResult> SessionClient::Commit(std::string const& session,
                                             std::string const& filename,
                                             std::string const& folder) const {
  ApiRequest req;
  req.method = "POST";
  req.path = "/session/" + Segment(session) + "/commit";
  json body = json::object();
  if (!filename.empty()) body["filename"] = filename;
  if (!folder.empty()) body["folder"] = folder;
  req.body = body.dump();
  auto j = Call(client_, req);
  if (!j.ok()) return std::move(j).status();
  CommitResult out;
  if (j->is_object()) {
    out.task_id = OptString(*j, "bgtask_id").value_or("");
    out.kernel_id = OptString(*j, "kernel").value_or("");
    out.path = OptString(*j, "path").value_or("");
  }
  if (out.task_id.empty()) {
    return Status(StatusCode::kInternal, "malformed commit answer: " + j->dump().substr(0, 200));
  }
  return out;
}

StatusOr<TaskProgress> SessionClient::FollowTask(
    std::string const& task_id, std::function<void(TaskProgress const&)> const& on_update) const {
  std::optional<TaskProgress> last;
  auto s = StreamEvents(client_, "/events/background-task?taskId=" + Segment(task_id),
                        [&](std::string const& name, std::string const& data) {
                          TaskProgress p;
                          p.event = name;
                          p.task_id = task_id;
                          if (auto d = protocol::DecodeTaskEventData(data); d.ok()) {
                            p.message = d->message;
                            p.current_progress = d->current_progress;
                            p.total_progress = d->total_progress;
                          }
                          // server_close ends the stream; it is the result only when no final
                          // bgtask_* event came before it.
                          if (name == "server_close") {
                            if (!last || !last->Finished()) last = p;
                            return false;
                          }
                          if (on_update) on_update(p);
                          last = p;
                          return true;
                        });
  if (!s.ok()) return s;
  if (!last) return Status(StatusCode::kNotFound, "no such background task: " + task_id);
  if (!last->Finished()) {
    return Status(StatusCode::kUnavailable, "the task's event stream ended before the task");
  }
  return *last;
}

StatusOr<protocol::SessionFileList> SessionClient::ListFiles(std::string const& session,
                                                             std::string const& path) const {
  // A GET with a JSON body, as 24.09 reads it.
  ApiRequest req("GET", "/session/" + Segment(session) + "/files");
  req.body = json({{"path", path}}).dump();
  auto body = CallBody(client_, req);
  if (!body.ok()) return std::move(body).status();
  return protocol::DecodeSessionFileList(*body);
}

Status SessionClient::Upload(std::string const& session,
                             std::vector<std::pair<std::string, std::string>> const& files) const {
  std::vector<protocol::MultipartPart> parts;
  for (auto const& [path, data] : files) {
    protocol::MultipartPart part;
    part.name = "src";
    part.filename = path;
    part.body = data;
    parts.push_back(std::move(part));
  }
  std::random_device rd;
  std::string boundary = "bai-" + std::to_string(rd()) + "-" + std::to_string(rd());
  ApiRequest req("POST", "/session/" + Segment(session) + "/upload");
  req.body = protocol::EncodeMultipart(parts, boundary);
  req.content_type = "multipart/form-data; boundary=" + boundary;
  req.idempotent = true;  // writing the same files again gives the same result
  auto body = CallBody(client_, req);
  return body.ok() ? Status() : body.status();
}

StatusOr<std::vector<std::string>> SessionClient::Download(
    std::string const& session, std::vector<std::string> const& paths) const {
  auto req =
      internal::RequestWithParams(client_, "GET", "/session/" + Segment(session) + "/download",
                                  {{"files", paths}}, "download files from a session");
  if (!req.ok()) return std::move(req).status();
  req->idempotent = true;
  auto response = client_.Send(*req);
  if (!response.ok()) return std::move(response).status();
  if (auto s = CheckResponse(*response); !s.ok()) return s;
  auto parts =
      protocol::DecodeMultipart(response->Header("content-type").value_or(""), response->body);
  if (!parts.ok()) return Malformed(response->body);
  std::vector<std::string> out;
  for (auto& part : *parts) out.push_back(std::move(part.body));
  if (out.size() != paths.size()) return Malformed("one archive per path expected");
  return out;
}

StatusOr<std::string> SessionClient::DownloadSingle(std::string const& session,
                                                    std::string const& path) const {
  auto req = internal::RequestWithParams(client_, "GET",
                                         "/session/" + Segment(session) + "/download_single",
                                         {{"file", path}}, "download a file from a session");
  if (!req.ok()) return std::move(req).status();
  req->idempotent = true;
  return CallBody(client_, *req);
}

}  // namespace bai
