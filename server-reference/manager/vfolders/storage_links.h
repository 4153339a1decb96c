// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/storage/storage_api.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace bai::manager::vfolders {

/// The storage proxies the manager knows, by name: one in process (its StorageService called
/// directly) or remote `bai-storage`s reached over their manager-facing API with the shared
/// secret. Either way an operation is storage_api.h's op and JSON.
class StorageLinks {
 public:
  using Link = std::function<StatusOr<nlohmann::json>(std::string_view op, nlohmann::json const&)>;

  void Add(std::string proxy, Link call) { links_[std::move(proxy)] = std::move(call); }
  /// A remote proxy at `url` (its manager-facing API).
  void AddRemote(std::string proxy, std::string url, std::string secret);
  /// Operation `op` (storage_api.h) on the proxy of `host` ("PROXY:VOLUME"), for the folder
  /// with `scope` and `id` when given (folder operations): its arguments and its answer go
  /// through the contract's one codec. kNotFound for an unknown proxy; the proxy's errors as
  /// they came (kUnavailable when it does not answer).
  template <class Op>
  StatusOr<typename Op::Answer> Ask(std::string const& host, Op const& op,
                                    std::string const& scope = {},
                                    std::string const& id = {}) const {
    nlohmann::json args = storage::api::ToJson(op);
    if (!id.empty()) {
      args["scope"] = scope;
      args["id"] = id;
    }
    auto r = Call(host, Op::kOp, std::move(args));
    if (!r.ok()) return r.status();
    return storage::api::FromJson<typename Op::Answer>(*r);
  }
  /// Every volume of every proxy as "PROXY:VOLUME" → the proxy's description of it; proxies
  /// that do not answer are left out.
  std::map<std::string, storage::api::VolumeInfo> Volumes() const;

  std::string default_host;

 private:
  /// `op` with `args` (given `volume` here) on the proxy of `host`.
  StatusOr<nlohmann::json> Call(std::string const& host, std::string_view op,
                                nlohmann::json args) const;

  std::map<std::string, Link> links_;
};

}  // namespace bai::manager::vfolders
