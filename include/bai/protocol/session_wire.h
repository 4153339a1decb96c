// SPDX-License-Identifier: Apache-2.0
#pragma once
// Session wire types with their one JSON codec, shared by the SDK (which encodes requests and
// decodes answers) and the reference manager and agents (which decode requests and encode
// answers). Decoders ignore unknown fields, accept the spellings Backend.AI's own clients and
// servers use, and refuse a malformed document with a 400 invalid-api-params problem whose
// data names each bad field.

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::protocol {

/// `POST /session/{id}` (PROTOCOL.md §5.5): one execute step. `query` runs code, `batch` runs
/// options.exec, `continue` and `input` go on with a run, `complete` asks for completions.
struct ExecuteStep {
  std::string mode = "query";
  std::string run_id;  ///< empty on the first step: the server assigns one
  std::string code;
  std::map<std::string, std::string> options;  ///< e.g. {"exec": "make test"} for batch
};
BAI_EXPORT std::string EncodeExecuteStep(ExecuteStep const& step);
BAI_EXPORT StatusOr<ExecuteStep> DecodeExecuteStep(std::string_view json);

/// What one step returned (the `result` object of the answer). Keep calling with mode
/// `continue` (or `input` for `waiting-input`) and the same run id until `status` is `finished`.
struct ExecuteResult {
  std::string run_id;
  std::string status;  ///< continued, waiting-input, finished, exec-timeout, …
  std::optional<std::int64_t> exit_code;
  std::vector<std::pair<std::string, std::string>> console;  ///< [stream, text], in order
  std::string raw_json;                                      ///< as decoded (empty when encoding)
};
BAI_EXPORT std::string EncodeExecuteResult(ExecuteResult const& result);
/// Also reads API v1 answers (stdout/stderr fields instead of a console list). A result
/// without a status is refused.
BAI_EXPORT StatusOr<ExecuteResult> DecodeExecuteResult(std::string_view json);

/// The data of one `/events/session` event (PROTOCOL.md §5.6); the event's name travels as
/// the SSE event name.
struct SessionEventData {
  std::string session_id;
  std::string session_name;
  std::string owner_access_key;
  std::optional<std::string> kernel_id;  ///< kernel events (with clusterRole "main")
  std::optional<std::string> reason;
  std::optional<std::int64_t> exit_code;
};
BAI_EXPORT std::string EncodeSessionEventData(SessionEventData const& data);
BAI_EXPORT StatusOr<SessionEventData> DecodeSessionEventData(std::string_view json);

/// The data of one `/events/background-task` event.
struct TaskEventData {
  std::string task_id;
  std::string message;
  std::int64_t current_progress = 0;
  std::int64_t total_progress = 0;
  std::optional<std::string> status;  ///< on the last event: done, failed or cancelled
};
BAI_EXPORT std::string EncodeTaskEventData(TaskEventData const& data);
/// Also reads the progress numbers as strings, as Backend.AI 24.09 sends them at the end.
BAI_EXPORT StatusOr<TaskEventData> DecodeTaskEventData(std::string_view json);

}  // namespace bai::protocol
