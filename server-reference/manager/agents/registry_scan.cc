// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/agents/registry_scan.h"

#include "server-reference/common/oci/registry_client.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

namespace bai::manager {

namespace oci = server::oci;

std::string BackendAiArchitecture(std::string_view oci_architecture) {
  if (oci_architecture == "amd64") return "x86_64";
  if (oci_architecture == "arm64") return "aarch64";
  return std::string(oci_architecture);
}

bool InProject(std::string const& repository, std::string const& project) {
  return project.empty() || repository.rfind(project + "/", 0) == 0;
}

RegistryImage ScannedImage(ContainerRegistry const& registry, std::string const& repository,
                           std::string const& tag, std::string const& manifest_digest,
                           oci::Manifest const& manifest, oci::ImageConfig const& config) {
  RegistryImage i;
  i.registry = registry.registry_name;
  i.canonical = registry.registry_name + "/" + repository + ":" + tag;
  i.tag = tag;
  auto slash = repository.find('/');
  if (!registry.project.empty() && InProject(repository, registry.project)) {
    i.project = registry.project;
    i.name = repository.substr(registry.project.size() + 1);
  } else if (slash != std::string::npos) {
    i.project = repository.substr(0, slash);
    i.name = repository.substr(slash + 1);
  } else {
    i.name = repository;
  }
  i.architecture =
      BackendAiArchitecture(config.architecture.empty() ? "amd64" : config.architecture);
  i.manifest_digest = manifest_digest;
  i.config_digest = manifest.config.digest;
  i.size_bytes = manifest.LayerBytes() + manifest.config.size;
  i.labels = config.labels;
  return i;
}

namespace {

// One tag's images (an index: each platform's, attestations skipped) into `store`.
Status ScanTag(oci::RegistryClient& client, ContainerRegistry const& registry,
               std::string const& repository, std::string const& tag, RegistryStore& store,
               std::size_t& kept) {
  auto got = client.GetManifest(repository, tag);
  if (!got.ok()) return got.status();
  std::vector<oci::FetchedManifest> manifests;
  if (got->document.index) {
    for (auto const& entry : got->document.index->manifests) {
      if (oci::IsAttestation(entry) || (entry.platform && entry.platform->os != "linux")) continue;
      auto child = client.GetManifest(repository, entry.digest);
      if (!child.ok()) return child.status();
      if (child->document.manifest) manifests.push_back(*std::move(child));
    }
  } else if (got->document.manifest) {
    manifests.push_back(*std::move(got));
  }
  for (auto const& m : manifests) {
    auto text = client.GetBlob(repository, m.document.manifest->config);
    if (!text.ok()) return text.status();
    auto config = oci::ParseImageConfig(*text);
    if (!config.ok()) return config.status();
    auto image = ScannedImage(registry, repository, tag, m.digest, *m.document.manifest, *config);
    if (auto s = store.PutImage(image); !s.ok()) return s;
    ++kept;
  }
  return Status();
}

oci::RegistryEndpoint EndpointOf(ContainerRegistry const& registry) {
  oci::RegistryEndpoint e;
  e.url = registry.url;
  e.username = registry.username.value_or("");
  e.password = registry.password.value_or("");
  e.ssl_verify = registry.ssl_verify;
  e.stall_timeout = std::chrono::seconds(60);
  return e;
}

}  // namespace

StatusOr<RegistryScan> ScanImage(ContainerRegistry const& registry, std::string const& repository,
                                 std::string const& tag, RegistryStore& store) {
  oci::RegistryClient client(EndpointOf(registry));
  RegistryScan scan;
  if (auto s = ScanTag(client, registry, repository, tag, store, scan.images); !s.ok()) return s;
  return scan;
}

StatusOr<RegistryScan> ScanRegistry(ContainerRegistry const& registry, RegistryStore& store,
                                    std::function<void(std::string const&)> const& progress) {
  oci::RegistryClient client(EndpointOf(registry));
  auto repositories = registry.type == "harbor2" ? client.HarborRepositories(registry.project)
                                                 : client.Repositories();
  if (!repositories.ok()) return repositories.status();
  // Every (repository, tag), then four workers over them, as 24.09's semaphore of four.
  std::vector<std::pair<std::string, std::string>> work;
  RegistryScan scan;
  for (auto const& repo : *repositories) {
    if (!InProject(repo, registry.project)) continue;
    auto tags = client.Tags(repo);
    if (!tags.ok()) {
      scan.problems.push_back(repo + ": " + tags.status().message());
      continue;
    }
    for (auto const& t : *tags) work.emplace_back(repo, t);
  }
  std::mutex mu;
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < work.size(); i = next++) {
      auto const& [repo, tag] = work[i];
      std::size_t kept = 0;
      Status s = ScanTag(client, registry, repo, tag, store, kept);
      std::lock_guard<std::mutex> lock(mu);
      scan.images += kept;
      std::string name = registry.registry_name + "/" + repo + ":" + tag;
      if (!s.ok()) {
        scan.problems.push_back(name + ": " + s.message());
      } else if (progress) {
        progress(name);
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < std::min<std::size_t>(4, work.size()); ++w) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return scan;
}

}  // namespace bai::manager
