// SPDX-License-Identifier: Apache-2.0
// The wire types' codecs on JSON already parsed (nlohmann), for code that holds a parsed document
// (the manager merges query and body parameters first; list pages decode items in place). The
// text codecs are in the public headers (bai/protocol/*_wire.h).
#pragma once

#include "bai/protocol/admin_wire.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/session_wire.h"
#include "bai/protocol/usage_wire.h"
#include "bai/protocol/vfolder_wire.h"
#include "bai/status.h"

#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

namespace bai::internal {

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

/// DecodeVFolderCreateRequest / DecodeVFolderCloneRequest on parameters already parsed (the
/// manager reads the body, or the query when the body is empty; query values are strings).
StatusOr<protocol::VFolderCreateRequest> VFolderCreateRequestFromJson(nlohmann::json const& object);
StatusOr<protocol::VFolderCloneRequest> VFolderCloneRequestFromJson(nlohmann::json const& object);

/// EncodeVFolderRequest / DecodeVFolderRequest on JSON already parsed (the SDK sends some of
/// them as a DELETE's parameters; the manager decodes its merged parameters).
template <class Request>
nlohmann::json VFolderRequestToJson(Request const& request);
template <class Request>
StatusOr<Request> VFolderRequestFromJson(nlohmann::json const& object);

/// The administration objects as JSON (Encode* in bai/protocol/admin_wire.h dumps these): the
/// manager builds GraphQL answers from them without a text round trip per row.
nlohmann::json UserToJson(protocol::User const& user);
/// DecodeUser on an item of a parsed list (no text round trip per item).
StatusOr<protocol::User> UserFromJson(nlohmann::json const& object);
nlohmann::json KeyPairToJson(protocol::KeyPair const& keypair);
nlohmann::json KeypairResourcePolicyToJson(protocol::KeypairResourcePolicy const& policy);
nlohmann::json ScopeResourcePolicyToJson(protocol::ScopeResourcePolicy const& policy, bool user);

/// 24.09's ResourceUsage object (nfs, cpu_allocated … gpu_allocated): usage reports' totals,
/// and the manager's usage/month rows, which carry the same fields.
nlohmann::json ResourceUsageJson(protocol::ResourceUsage const& usage);

}  // namespace bai::internal
