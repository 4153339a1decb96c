// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/oci/reference.h"

#include <vector>

namespace bai::server::oci {
namespace {

bool LowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component of a repository: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*.
bool ValidComponent(std::string_view c) {
  if (c.empty() || !LowerAlnum(c.front()) || !LowerAlnum(c.back())) return false;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (LowerAlnum(c[i])) continue;
    if (c[i] == '-') continue;  // any run of dashes
    if (c[i] == '.' && LowerAlnum(c[i + 1])) continue;
    if (c[i] == '_' && (LowerAlnum(c[i + 1]) || (c[i + 1] == '_' && LowerAlnum(c[i + 2])))) {
      if (c[i + 1] == '_') ++i;
      continue;
    }
    return false;
  }
  return true;
}

// [A-Za-z0-9_][A-Za-z0-9._-]{0,127}
bool ValidTag(std::string_view t) {
  if (t.empty() || t.size() > 128 || t.front() == '.' || t.front() == '-') return false;
  for (char c : t) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool LooksLikeRegistry(std::string_view first) {
  return first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos ||
         first == "localhost";
}

Status Refuse(std::string_view text, std::string const& why) {
  return Status(StatusCode::kInvalidArgument,
                "image reference '" + std::string(text) + "': " + why);
}

}  // namespace

bool ValidDigest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.size() != kPrefix.size() + 64 || digest.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  for (char c : digest.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string RegistryUrl(std::string const& registry, bool plain_http) {
  if (registry == kDefaultRegistry) return "https://registry-1.docker.io";
  std::string host = registry.substr(
      0, registry.rfind(':') == std::string::npos || registry.back() == ']' ? registry.size()
                                                                            : registry.rfind(':'));
  bool ipv4_loopback =
      host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
  bool loopback = host == "localhost" || ipv4_loopback || host == "[::1]";
  return (plain_http || loopback ? "http://" : "https://") + registry;
}

std::string ImageReference::Canonical() const {
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

StatusOr<ImageReference> ParseImageReference(std::string_view text) {
  ImageReference ref;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!ValidDigest(ref.digest)) {
      return Refuse(text, "the digest must be sha256: and 64 lower-case hex digits");
    }
  }
  std::size_t slash = rest.find('/');
  if (slash != std::string_view::npos && LooksLikeRegistry(rest.substr(0, slash))) {
    ref.registry = std::string(rest.substr(0, slash));
    // Docker Hub by its other names is the one Backend.AI names index.docker.io.
    if (ref.registry == "docker.io" || ref.registry == "registry-1.docker.io") {
      ref.registry = kDefaultRegistry;
    }
    rest = rest.substr(slash + 1);
  } else {
    ref.registry = kDefaultRegistry;
  }
  std::size_t last_slash = rest.rfind('/');
  std::size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || colon > last_slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!ValidTag(ref.tag)) {
      return Refuse(text,
                    "a tag is 1-128 letters, digits, '_', '.', '-', not starting with '.' "
                    "or '-'");
    }
  } else if (ref.digest.empty()) {
    ref.tag = "latest";
  }
  if (rest.empty()) return Refuse(text, "no repository name");
  std::size_t begin = 0;
  for (;;) {
    std::size_t end = rest.find('/', begin);
    auto component = rest.substr(begin, end == std::string_view::npos ? rest.npos : end - begin);
    if (!ValidComponent(component)) {
      return Refuse(text, "'" + std::string(component) +
                              "' is not a repository name (lower-case letters and digits, "
                              "separated by '.', '_', '__' or dashes)");
    }
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  ref.repository = std::string(rest);
  if (ref.registry == kDefaultRegistry && ref.repository.find('/') == std::string::npos) {
    ref.repository = "lablup/" + ref.repository;
  }
  if (ref.registry.size() + 1 + ref.repository.size() > 255) {
    return Refuse(text, "longer than 255 characters");
  }
  return ref;
}

}  // namespace bai::server::oci
