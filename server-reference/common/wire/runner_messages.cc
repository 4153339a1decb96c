// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/runner_messages.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/base64.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <map>

using bai::internal::Base64Decode;
using bai::internal::Base64Encode;

namespace bai::server::runner_protocol {

using internal::FieldReader;
using nlohmann::json;

namespace {

// Message names, spelled here and nowhere else. Runner → agent lines carry `type`, agent →
// runner lines carry `op`.
constexpr char kHello[] = "hello";
constexpr char kStdout[] = "stdout";
constexpr char kStderr[] = "stderr";
constexpr char kWaitingInput[] = "waiting-input";
constexpr char kFinished[] = "finished";
constexpr char kStatus[] = "status";
constexpr char kError[] = "error";
constexpr char kQuery[] = "query";
constexpr char kBatch[] = "batch";
constexpr char kInput[] = "input";
constexpr char kInterrupt[] = "interrupt";
constexpr char kFile[] = "file";
constexpr char kFileResult[] = "file-result";

std::string Dump(json const& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json ToJson(Hello const& m) {
  return {{"type", kHello}, {"version", m.version}, {"runtime", m.runtime}, {"pid", m.pid}};
}
json ToJson(Output const& m) {
  return {
      {"type", m.stream == kStderr ? kStderr : kStdout}, {"run_id", m.run_id}, {"data", m.data}};
}
json ToJson(WaitingInput const& m) {
  return {{"type", kWaitingInput},
          {"run_id", m.run_id},
          {"options", {{"prompt", m.prompt}, {"is_password", m.is_password}}}};
}
json ToJson(Finished const& m) {
  return {{"type", kFinished}, {"run_id", m.run_id}, {"exitCode", m.exit_code}};
}
json ToJson(RunnerStatus const& m) {
  return {{"type", kStatus}, {"busy", m.busy}, {"queued", m.queued}, {"run_id", m.run_id}};
}
json ToJson(Error const& m) { return {{"type", kError}, {"msg", m.msg}}; }
json ToJson(FileResult const& m) {
  json j = {{"type", kFileResult}, {"request_id", m.request_id}, {"ok", m.status.ok()}};
  if (!m.status.ok()) {
    j["code"] = StatusCodeName(m.status.code());
    j["msg"] = m.status.message();
  }
  if (!m.data.empty()) j["data"] = Base64Encode(m.data);
  if (!m.files_json.empty()) j["files"] = m.files_json;
  return j;
}
json ToJson(FileRequest const& m) {
  json j = {{"op", kFile}, {"request_id", m.request_id}, {"action", m.action}, {"path", m.path}};
  if (!m.data.empty()) j["data"] = Base64Encode(m.data);
  if (m.limit) j["limit"] = m.limit;
  if (m.mode) j["mode"] = m.mode;
  return j;
}

StatusCode CodeNamed(std::string const& name) {
  for (int c = 1; c <= static_cast<int>(StatusCode::kDataLoss); ++c) {
    if (StatusCodeName(static_cast<StatusCode>(c)) == name) return static_cast<StatusCode>(c);
  }
  return StatusCode::kInternal;
}

// `data`, Base64 on the wire; a field that is not Base64 refuses the message.
std::string BytesField(FieldReader& r, char const* name) {
  std::string text = r.String(name);
  auto bytes = Base64Decode(text);
  if (!bytes) {
    r.Fail(name, "Base64");
    return {};
  }
  return *std::move(bytes);
}

FileResult ReadFileResult(FieldReader& r) {
  FileResult m;
  m.request_id = r.String("request_id");
  if (!r.Bool("ok", false)) {
    m.status = Status(CodeNamed(r.String("code")), r.String("msg"));
    if (m.status.ok()) m.status = Status(StatusCode::kInternal, "file request failed");
  }
  m.data = BytesField(r, "data");
  m.files_json = r.String("files");
  return m;
}

json ToJson(Query const& m) { return {{"op", kQuery}, {"run_id", m.run_id}, {"code", m.code}}; }
json ToJson(Batch const& m) {
  json j = {{"op", kBatch}, {"run_id", m.run_id}, {"exec", m.exec}};
  if (!m.clean.empty()) j["clean"] = m.clean;
  if (!m.build.empty()) j["build"] = m.build;
  return j;
}
json ToJson(Input const& m) { return {{"op", kInput}, {"run_id", m.run_id}, {"text", m.text}}; }
json ToJson(Interrupt const& m) {
  json j = {{"op", kInterrupt}};
  if (!m.run_id.empty()) j["run_id"] = m.run_id;
  return j;
}
json ToJson(StatusRequest const&) { return {{"op", kStatus}}; }

// Parses one line as an object whose `tag` names the message, read by `read(name, fields)`;
// the reader returns nullopt for a name it does not know.
template <class Variant, class Read>
StatusOr<Variant> Decode(std::string_view line, char const* tag, Read read) {
  auto j = internal::ParseJson(line).value_or(json(json::value_t::discarded));
  if (!j.is_object()) return Status(StatusCode::kInvalidArgument, "not a JSON object");
  FieldReader r(j);
  std::string name = r.Required(tag);
  if (!r.ok()) return Status(StatusCode::kInvalidArgument, r.error());
  std::optional<Variant> v = read(name, r);
  if (!v) return Status(StatusCode::kInvalidArgument, "unknown " + std::string(tag) + " " + name);
  if (!r.ok()) return Status(StatusCode::kInvalidArgument, name + ": " + r.error());
  return *std::move(v);
}

}  // namespace

std::string Encode(ToAgent const& message) {
  if (auto const* out = std::get_if<Output>(&message)) {
    json header = {{"type", out->stream == kStderr ? kStderr : kStdout},
                   {"run_id", out->run_id},
                   {"size", out->data.size()}};
    return Dump(header) + "\n" + out->data;
  }
  return Dump(std::visit([](auto const& m) { return ToJson(m); }, message));
}

std::optional<StatusOr<ToAgent>> TakeToAgent(std::string_view buffer, std::size_t& used) {
  std::size_t eol = buffer.find('\n');
  if (eol == std::string_view::npos) return std::nullopt;
  std::string_view line = buffer.substr(0, eol);
  used = eol + 1;
  auto message = DecodeToAgent(line);
  auto* out = message.ok() ? std::get_if<Output>(&*message) : nullptr;
  if (out == nullptr) return message;
  auto header = internal::ParseJson(line);
  if (!header || !header->contains("size")) return message;  // an unframed output line
  json const& size = (*header)["size"];
  if (!size.is_number_unsigned() || size.get<std::uint64_t>() > (16u << 20)) {
    return StatusOr<ToAgent>(Status(StatusCode::kInvalidArgument, "output: a bad size"));
  }
  auto n = static_cast<std::size_t>(size.get<std::uint64_t>());
  if (buffer.size() < used + n + 1) return std::nullopt;
  if (buffer[used + n] != '\n') {
    return StatusOr<ToAgent>(
        Status(StatusCode::kInvalidArgument, "output: its bytes do not end where its size says"));
  }
  out->data.assign(buffer.substr(used, n));
  used += n + 1;
  return message;
}

std::string Encode(ToRunner const& message) {
  return Dump(std::visit([](auto const& m) { return ToJson(m); }, message));
}

StatusOr<ToAgent> DecodeToAgent(std::string_view line) {
  return Decode<ToAgent>(
      line, "type", [](std::string const& type, FieldReader& r) -> std::optional<ToAgent> {
        if (type == kHello) {
          return Hello{r.Int("version", 0), r.String("runtime"), r.Int("pid", 0)};
        }
        if (type == kStdout || type == kStderr) {
          return Output{type, r.String("run_id"), r.String("data")};
        }
        if (type == kWaitingInput) {
          WaitingInput m{r.String("run_id"), "", false};
          if (auto const* o = r.Object("options")) {
            FieldReader opts(*o);
            m.prompt = opts.String("prompt");
            m.is_password = opts.Bool("is_password", false);
            if (!opts.ok()) r.Fail("options", "well-formed (" + opts.error() + ")");
          }
          return m;
        }
        if (type == kFinished) {
          return Finished{r.String("run_id"), r.Int("exitCode", 0)};
        }
        if (type == kStatus) {
          return RunnerStatus{r.Bool("busy", false), r.Int("queued", 0), r.String("run_id")};
        }
        if (type == kFileResult) return ReadFileResult(r);
        if (type == kError) return Error{r.String("msg")};
        return std::nullopt;
      });
}

StatusOr<ToRunner> DecodeToRunner(std::string_view line) {
  return Decode<ToRunner>(
      line, "op", [](std::string const& op, FieldReader& r) -> std::optional<ToRunner> {
        if (op == kQuery) return Query{r.String("run_id"), r.String("code")};
        if (op == kBatch) {
          return Batch{r.String("run_id"), r.String("clean"), r.String("build"), r.String("exec")};
        }
        if (op == kInput) return Input{r.String("run_id"), r.String("text")};
        if (op == kInterrupt) return Interrupt{r.String("run_id")};
        if (op == kStatus) return StatusRequest{};
        if (op == kFile) {
          return FileRequest{r.String("request_id"), r.String("action"), r.String("path"),
                             BytesField(r, "data"),  r.Int("limit", 0),  r.Int("mode", 0) & 0777};
        }
        return std::nullopt;
      });
}

std::string EncodeFileResult(FileResult const& result) { return Dump(ToJson(result)); }

std::string EncodeStreamOpen(StreamOpen const& m) {
  json j = {{"kind", m.kind}};
  if (m.kind == "pty" || m.kind == "exec") {
    j["rows"] = m.rows;
    j["cols"] = m.cols;
    if (!m.command.empty()) j["command"] = m.command;
  } else {
    j["port"] = m.port;
  }
  if (m.kind == "tcp" && m.pass_socket) j["pass_socket"] = true;
  if (m.kind == "service-stop") j["name"] = m.name;
  if (m.kind == "service") {
    j["name"] = m.name;
    j["arguments"] = m.arguments;
    j["envs"] = m.envs;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<StreamOpen> DecodeStreamOpen(std::string_view line) {
  auto j = internal::ParseJson(line);
  if (!j || !j->is_object()) return Status(StatusCode::kInvalidArgument, "not a JSON object");
  FieldReader r(*j);
  StreamOpen m;
  m.kind = r.Required("kind");
  if (m.kind == "pty" || m.kind == "exec") {
    m.rows = static_cast<int>(r.Int("rows", 24));
    m.cols = static_cast<int>(r.Int("cols", 80));
    if (m.rows < 1 || m.rows > 10000) r.Fail("rows", "1 to 10000");
    if (m.cols < 1 || m.cols > 10000) r.Fail("cols", "1 to 10000");
    if (auto const* c = r.Array("command")) {
      for (auto const& a : *c) {
        if (!a.is_string()) {
          r.Fail("command", "a list of strings");
          break;
        }
        m.command.push_back(a.get<std::string>());
      }
    }
    if (m.kind == "exec" && m.command.empty()) r.Fail("command", "required for exec");
  } else if (m.kind == "tcp" || m.kind == "service") {
    m.port = static_cast<int>(r.Int("port", 0));
    if (m.port < 1 || m.port > 65535) r.Fail("port", "1 to 65535");
    if (m.kind == "tcp") m.pass_socket = r.Bool("pass_socket", false);
    if (m.kind == "service") {
      m.name = r.Required("name");
      for (auto [key, field] : {std::pair{"arguments", &m.arguments}, std::pair{"envs", &m.envs}}) {
        if (auto const* o = r.Object(key)) {
          for (auto const& [k, v] : o->items()) {
            if (!v.is_string()) {
              r.Fail(key, "an object of strings");
              break;
            }
            (*field)[k] = v.get<std::string>();
          }
        }
      }
    }
  } else if (m.kind == "service-stop") {
    m.name = r.Required("name");
  } else if (!m.kind.empty()) {
    r.Fail("kind", "pty, exec, tcp, service or service-stop");
  }
  if (!r.ok()) return Status(StatusCode::kInvalidArgument, r.error());
  return m;
}

std::string EncodeStreamReady(StreamReady const& m) {
  json j = {{"ok", m.ok}};
  if (!m.status.empty()) j["status"] = m.status;
  if (m.passed) j["passed"] = true;
  if (!m.ok) {
    j["code"] = m.code;
    j["msg"] = m.msg;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<StreamReady> DecodeStreamReady(std::string_view line) {
  auto j = internal::ParseJson(line);
  if (!j || !j->is_object()) return Status(StatusCode::kInvalidArgument, "not a JSON object");
  FieldReader r(*j);
  StreamReady m;
  m.ok = r.Bool("ok", false);
  m.code = static_cast<int>(r.Int("code", 1011));
  m.msg = r.String("msg");
  m.status = r.String("status");
  m.passed = r.Bool("passed", false);
  if (!r.ok()) return Status(StatusCode::kInvalidArgument, r.error());
  return m;
}

StatusOr<FileResult> DecodeFileResult(std::string_view text) {
  auto m = DecodeToAgent(text);
  if (!m.ok()) return std::move(m).status();
  if (auto* r = std::get_if<FileResult>(&*m)) return std::move(*r);
  return Status(StatusCode::kInvalidArgument, "not a file result");
}

}  // namespace bai::server::runner_protocol
