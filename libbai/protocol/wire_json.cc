// SPDX-License-Identifier: Apache-2.0
#include "libbai/protocol/wire_json.h"

namespace bai::internal {

using nlohmann::json;

json SlotsToJson(protocol::ResourceSlots const& slots) {
  json j = json::object();
  for (auto const& [name, amount] : slots) j[name] = amount.ToString();
  return j;
}

StatusOr<protocol::ResourceSlots> SlotsFromJson(
    json const& j,
    std::function<std::optional<protocol::SlotType>(std::string const&)> const& slot_type) {
  if (!j.is_object()) {
    return Status(StatusCode::kInvalidArgument, "resource slots must be a JSON object");
  }
  protocol::ResourceSlots out;
  for (auto const& [name, value] : j.items()) {
    auto type = slot_type ? slot_type(name) : protocol::KnownSlotType(name);
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number()) {
      text = value.dump();
    } else {
      return Status(StatusCode::kInvalidArgument,
                    "slot \"" + name + "\": amount must be a string or a number");
    }
    auto amount = protocol::ParseSlotAmount(type.value_or(protocol::SlotType::kCount), text);
    if (!amount.ok()) {
      return Status(StatusCode::kInvalidArgument,
                    "slot \"" + name + "\": " + amount.status().message());
    }
    out[name] = *amount;
  }
  return out;
}

}  // namespace bai::internal
