// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/session_wire.h"
#include "bai/status.h"

#include "libbai/internal/json_parse.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace bai::internal {

/// Fills type/title/detail/data_json from a problem+json body; false when the body is not one.
bool ParseProblem(std::string_view body, ErrorInfo& info);

/// Serialises a problem document (server side and tests): {"type","title","msg"?,"data"?}.
std::string ProblemJson(ErrorInfo const& info);

/// `GET /` answer; is_backend_ai is false when `version` is missing or not vX.YYYYMMDD.
ServerInfo ParseServerInfo(std::string_view body);

/// {"cpu": "2", "mem": "4294967296"}: amounts as strings, as on the wire.
nlohmann::json SlotsToJson(protocol::ResourceSlots const& slots);

/// Accepts strings and numbers; `slot_type` gives each slot's type (KnownSlotType when null).
/// Errors name the slot.
StatusOr<protocol::ResourceSlots> SlotsFromJson(
    nlohmann::json const& json,
    std::function<std::optional<protocol::SlotType>(std::string const&)> const& slot_type = {});

/// DecodeSessionCreateRequest on an object already parsed (the manager merges query and body
/// parameters first).
StatusOr<protocol::SessionCreateRequest> SessionCreateRequestFromJson(
    nlohmann::json const& object, protocol::SlotTypeLookup const& slot_types);

/// DecodeSessionListItem on an item of a parsed list (no text round trip per item).
protocol::SessionListItem SessionListItemFromJson(nlohmann::json const& object);

}  // namespace bai::internal
