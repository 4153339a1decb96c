// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/device_allocation.h"

#include <nlohmann/json.hpp>

namespace bai::server {

nlohmann::json DeviceAllocationsToJson(std::vector<DeviceAllocation> const& allocations) {
  auto out = nlohmann::json::array();
  for (auto const& a : allocations) {
    out.push_back({{"slot", a.slot}, {"uuid", a.uuid}, {"amount", a.amount.ToString()}});
  }
  return out;
}

StatusOr<std::vector<DeviceAllocation>> DeviceAllocationsFromJson(nlohmann::json const& j) {
  std::vector<DeviceAllocation> out;
  if (!j.is_array()) return Status(StatusCode::kInvalidArgument, "devices: expected a list");
  for (size_t i = 0; i < j.size(); ++i) {
    auto const& e = j[i];
    auto bad = [&](char const* what) {
      return Status(StatusCode::kInvalidArgument, "devices[" + std::to_string(i) + "]: " + what);
    };
    if (!e.is_object()) return bad("expected an object");
    auto slot = e.find("slot");
    auto uuid = e.find("uuid");
    auto amount = e.find("amount");
    if (slot == e.end() || !slot->is_string() || slot->get<std::string>().empty()) {
      return bad("slot must be a non-empty string");
    }
    if (uuid == e.end() || !uuid->is_string() || uuid->get<std::string>().empty()) {
      return bad("uuid must be a non-empty string");
    }
    if (amount == e.end() || !amount->is_string()) return bad("amount must be a decimal string");
    auto value = protocol::Decimal::Parse(amount->get<std::string>());
    if (!value.ok() || value->is_negative() || value->is_unlimited() || value->is_zero()) {
      return bad("amount must be a positive finite decimal");
    }
    out.push_back({slot->get<std::string>(), uuid->get<std::string>(), *value});
  }
  return out;
}

}  // namespace bai::server
