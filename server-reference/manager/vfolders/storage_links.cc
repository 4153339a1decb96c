// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/vfolders/storage_links.h"

#include "bai/client.h"

#include "libbai/internal/curl_transport.h"
#include "libbai/util/url.h"
#include "server-reference/storage/storage_api.h"

#include <memory>

namespace bai::manager::vfolders {

void StorageLinks::AddRemote(std::string proxy, std::string url, std::string secret) {
  internal::CurlTransportOptions o;
  o.connect_timeout = std::chrono::seconds(5);
  o.read_timeout = std::chrono::seconds(600);  // a folder clone copies everything
  o.user_agent = "bai-manager";
  std::shared_ptr<Transport> transport = internal::MakeCurlTransport(o);
  Add(std::move(proxy),
      [transport, url, secret](std::string_view op,
                               nlohmann::json const& args) -> StatusOr<nlohmann::json> {
        auto endpoint = internal::ParseEndpoint(url);
        if (!endpoint.ok()) return endpoint.status();
        TransportRequest r;
        r.method = "POST";
        r.origin = endpoint->origin;
        r.host = endpoint->host;
        r.target = endpoint->base_path + "/" + std::string(op);
        r.sign = false;
        r.body = args.dump();
        r.headers = {{"Content-Type", "application/json"}, {storage::api::kAuthHeader, secret}};
        auto response = transport->Send(r);
        if (!response.ok()) {
          return Status(
              StatusCode::kUnavailable,
              "the storage proxy at " + url + " does not answer: " + response.status().message());
        }
        if (auto s = CheckResponse(*response); !s.ok()) return s;
        auto body = nlohmann::json::parse(response->body, nullptr, false);
        if (body.is_discarded()) {
          return Status(StatusCode::kInternal, "the storage proxy answered something not JSON");
        }
        return body;
      });
}

StatusOr<nlohmann::json> StorageLinks::Call(std::string const& host, std::string_view op,
                                            nlohmann::json args) const {
  auto colon = host.find(':');
  std::string proxy = host.substr(0, colon);
  auto it = links_.find(proxy);
  if (colon == std::string::npos || it == links_.end()) {
    return Status(StatusCode::kNotFound, "no storage host '" + host + "'");
  }
  args["volume"] = host.substr(colon + 1);
  return it->second(op, args);
}

std::map<std::string, storage::api::VolumeInfo> StorageLinks::Volumes() const {
  std::map<std::string, storage::api::VolumeInfo> out;
  for (auto const& [proxy, call] : links_) {
    auto v =
        call(storage::api::ListVolumes::kOp, storage::api::ToJson(storage::api::ListVolumes{}));
    if (!v.ok()) continue;
    auto list = storage::api::FromJson<storage::api::Volumes>(*v);
    if (!list.ok()) continue;
    for (auto& vol : list->volumes) out[proxy + ":" + vol.name] = std::move(vol);
  }
  return out;
}

}  // namespace bai::manager::vfolders
