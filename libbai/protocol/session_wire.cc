// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/session_wire.h"

#include "bai/protocol/errors.h"

#include "libbai/internal/json_codec.h"
#include "libbai/internal/json_fields.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace bai::protocol {
namespace {

using internal::FieldReader;
using nlohmann::json;

// The object in `text`, or the problem for a document that is not one.
StatusOr<json> ObjectOf(std::string_view text, char const* what) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) {
    return MakeProblemStatus(ProblemType::kInvalidApiParams,
                             std::string("Malformed ") + what + ": expected a JSON object");
  }
  return *std::move(j);
}

// 400 invalid-api-params naming every bad field, as the manager's own validation answers.
Status FieldProblem(FieldReader const& r) {
  json data = json::object();
  for (auto const& [field, why] : r.field_errors()) data[field] = why;
  return MakeProblemStatus(ProblemType::kInvalidApiParams, "Input validation error", data.dump());
}

json OptionalInt(std::optional<std::int64_t> v) { return v ? json(*v) : json(nullptr); }
json OptionalString(std::optional<std::string> const& v) { return v ? json(*v) : json(nullptr); }

// The first of `keys` present (not null) in `j`: the spellings of one field.
char const* Spelling(json const& j, std::initializer_list<char const*> keys) {
  for (char const* k : keys) {
    auto it = j.find(k);
    if (it != j.end() && !it->is_null()) return k;
  }
  return *keys.begin();
}

}  // namespace

std::string EncodeExecuteStep(ExecuteStep const& step) {
  json body = {{"mode", step.mode}, {"code", step.code}};
  if (!step.run_id.empty()) body["runId"] = step.run_id;
  if (!step.options.empty()) body["options"] = step.options;
  return body.dump();
}

StatusOr<ExecuteStep> DecodeExecuteStep(std::string_view text) {
  auto j = ObjectOf(text, "execute request");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  ExecuteStep step;
  step.mode = r.Required("mode");
  if (!step.mode.empty() && step.mode != "query" && step.mode != "batch" &&
      step.mode != "continue" && step.mode != "input" && step.mode != "complete") {
    r.Fail("mode", "query, batch, continue, input or complete");
  }
  step.run_id = r.String(Spelling(*j, {"runId", "run_id"}));
  step.code = r.String("code");
  if (auto const* o = r.Object("options")) {
    for (auto const& [k, v] : o->items()) {
      // Backend.AI clients send non-string options too; only strings mean something here.
      if (v.is_string()) step.options[k] = v.get<std::string>();
    }
  }
  if ((step.mode == "continue" || step.mode == "input") && step.run_id.empty()) {
    r.Fail("runId", "given for continue and input");
  }
  if (!r.ok()) return FieldProblem(r);
  return step;
}

std::string EncodeExecuteResult(ExecuteResult const& result) {
  json console = json::array();
  for (auto const& [stream, text] : result.console) console.push_back({stream, text});
  return json{{"runId", result.run_id},
              {"status", result.status},
              {"exitCode", OptionalInt(result.exit_code)},
              {"console", console},
              {"options", json::object()},
              {"files", json::array()}}
      .dump();
}

StatusOr<ExecuteResult> DecodeExecuteResult(std::string_view text) {
  auto j = ObjectOf(text, "execute result");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  ExecuteResult out;
  out.run_id = r.String("runId");
  out.status = r.Required("status");
  out.exit_code = r.OptInt("exitCode");
  if (auto const* c = r.Array("console")) {
    for (auto const& item : *c) {
      if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {
        out.console.emplace_back(item[0].get<std::string>(), item[1].get<std::string>());
      }
    }
  }
  // API v1 servers answer with stdout/stderr fields instead of a console list.
  for (char const* stream : {"stdout", "stderr"}) {
    if (auto t = r.OptString(stream); t && !t->empty()) out.console.emplace_back(stream, *t);
  }
  if (!r.ok()) return FieldProblem(r);
  out.raw_json = j->dump();
  return out;
}

std::string EncodeSessionEventData(SessionEventData const& data) {
  json j = {{"reason", OptionalString(data.reason)},
            {"sessionName", data.session_name},
            {"ownerAccessKey", data.owner_access_key},
            {"sessionId", data.session_id},
            {"exitCode", OptionalInt(data.exit_code)}};
  if (data.kernel_id) {
    j["kernelId"] = *data.kernel_id;
    j["clusterRole"] = "main";
  }
  return j.dump();
}

StatusOr<SessionEventData> DecodeSessionEventData(std::string_view text) {
  auto j = ObjectOf(text, "session event");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  SessionEventData out;
  out.session_id = r.String("sessionId");
  out.session_name = r.String("sessionName");
  out.owner_access_key = r.String("ownerAccessKey");
  out.kernel_id = r.OptString("kernelId");
  out.reason = r.OptString("reason");
  out.exit_code = r.OptInt("exitCode");
  if (!r.ok()) return FieldProblem(r);
  return out;
}

std::string EncodeTaskEventData(TaskEventData const& data) {
  json j = {{"task_id", data.task_id},
            {"message", data.message},
            {"current_progress", data.current_progress},
            {"total_progress", data.total_progress}};
  if (data.status) j["status"] = *data.status;
  return j.dump();
}

StatusOr<TaskEventData> DecodeTaskEventData(std::string_view text) {
  auto j = ObjectOf(text, "background task event");
  if (!j.ok()) return std::move(j).status();
  FieldReader r(*j);
  TaskEventData out;
  out.task_id = r.String("task_id");
  out.message = r.String("message");
  out.status = r.OptString("status");
  for (auto [key, field] : {std::pair{"current_progress", &out.current_progress},
                            std::pair{"total_progress", &out.total_progress}}) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) continue;
    if (it->is_number_integer()) {
      *field = it->get<std::int64_t>();
    } else if (it->is_string()) {  // 24.09 sends a finished task's numbers as strings
      char* end = nullptr;
      auto const& s = it->get_ref<std::string const&>();
      *field = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') r.Fail(key, "an integer");
    } else {
      r.Fail(key, "an integer");
    }
  }
  if (!r.ok()) return FieldProblem(r);
  return out;
}

}  // namespace bai::protocol
