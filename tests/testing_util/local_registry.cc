// SPDX-License-Identifier: Apache-2.0
#include "tests/testing_util/local_registry.h"

#include "tests/testing_util/raw_http.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace bai::testing_util {
namespace {

bool Accepts(int port) {
  int fd = RawConnect(port);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

}  // namespace

LocalRegistry::LocalRegistry(Options options) : options_(std::move(options)) {
  for (char const* tool : {"/usr/bin/docker-registry", "/usr/bin/skopeo"}) {
    if (::access(tool, X_OK) != 0) {
      error_ = std::string(tool) + " is missing (scripts/install-deps.sh installs it)";
      return;
    }
  }
  int port = UnusedLoopbackPort();
  if (port == 0) {
    error_ = "no free port";
    return;
  }
  host_ = "127.0.0.1:" + std::to_string(port);
  url_ = "http://" + host_;
  std::string config =
      "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
      "    rootdirectory: " +
      dir_.path() + "/data\n  delete:\n    enabled: true\nhttp:\n  addr: " + host_ + "\n";
  if (!options_.token_realm.empty()) {
    config += "auth:\n  token:\n    realm: " + options_.token_realm +
              "\n    service: bai-test\n    issuer: bai-test-issuer\n    rootcertbundle: " +
              options_.token_cert + "\n";
  } else if (!options_.username.empty()) {
    auto hash = RunProcess({"/usr/bin/htpasswd", "-Bbn", options_.username, options_.password});
    if (hash.exit_code != 0) {
      error_ = "htpasswd: " + hash.err;
      return;
    }
    WriteFileBytes(dir_.path() + "/htpasswd", hash.out);
    config += "auth:\n  htpasswd:\n    realm: bai-test\n    path: " + dir_.path() + "/htpasswd\n";
  }
  WriteFileBytes(dir_.path() + "/config.yml", config);
  // Its output (an access log line per request) goes to a file: a pipe nobody reads would stop
  // the registry once 64 KiB of log were waiting.
  process_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
      "/bin/sh", "-c", "exec /usr/bin/docker-registry serve \"$0\" >\"$1\" 2>&1",
      dir_.path() + "/config.yml", dir_.path() + "/registry.log"});
  for (int i = 0; i < 200 && !Accepts(port); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (!Accepts(port)) error_ = "docker-registry did not start: " + Log();
}

LocalRegistry::~LocalRegistry() {
  if (process_) process_->Stop(15, 5000);
}

std::string LocalRegistry::Push(std::string const& layout, std::string const& tag,
                                std::string const& repository_tag) {
  std::vector<std::string> argv = {"/usr/bin/skopeo", "copy", "--quiet", "--dest-tls-verify=false"};
  if (!options_.username.empty()) {
    argv.push_back("--dest-creds=" + options_.username + ":" + options_.password);
  }
  argv.push_back("oci:" + layout + ":" + tag);
  argv.push_back("docker://" + host_ + "/" + repository_tag);
  // skopeo keeps nothing of ours: its policy and auth files come from this temporary home.
  auto r = RunProcess(argv, {{"HOME", dir_.path()}, {"XDG_RUNTIME_DIR", dir_.path()}});
  return r.exit_code == 0 ? "" : "skopeo: " + r.err + r.out;
}

std::string LocalRegistry::Log() const {
  std::ifstream in(dir_.path() + "/registry.log", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int LocalRegistry::Requests(std::string const& method, std::string const& path) const {
  std::string log = Log(), needle = "\"" + method + " " + path + " HTTP/";
  int n = 0;
  for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::string LocalRegistry::BlobFile(std::string const& digest) const {
  std::string hex = digest.substr(digest.find(':') + 1);
  return dir_.path() + "/data/docker/registry/v2/blobs/sha256/" + hex.substr(0, 2) + "/" + hex +
         "/data";
}

}  // namespace bai::testing_util
