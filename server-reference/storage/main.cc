// SPDX-License-Identifier: Apache-2.0
// bai-storage: the reference storage proxy on its own (the manager also runs one in process).
//   bai-storage --volume NAME=DIR… [--name local] [--client-listen HOST:PORT]
//               [--manager-listen HOST:PORT] [--public-url URL] --secret-file FILE
// The secret file is made (mode 0600, 256 random bits) when it does not exist; give the manager
// the same file (`[[storage.proxies]] secret_file`).
#include "server-reference/common/daemon/daemon.h"
#include "server-reference/common/log/log_options.h"
#include "server-reference/common/wire/agent_protocol.h"
#include "server-reference/storage/proxy.h"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace {

bai::server::Daemon process("bai-storage");

int Fail(std::string const& message) { return process.Fail(message); }

bool SplitHostPort(std::string const& text, std::string& host, std::uint16_t& port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  host = text.substr(0, colon);
  try {
    int p = std::stoi(text.substr(colon + 1));
    if (p < 0 || p > 65535) return false;
    port = static_cast<std::uint16_t>(p);
  } catch (...) {
    return false;
  }
  return !host.empty();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bai-storage: the reference Backend.AI storage proxy", "bai-storage"};
  // /etc/bai/storage.toml (docs/operations.md): the options by their long names; flags win.
  app.set_config("--config", "", "TOML file of these options by their long names");
  app.allow_config_extras(false);  // a misspelt key is an error, not ignored
  std::string name = "local", client_listen = "127.0.0.1:6021", manager_listen = "127.0.0.1:6022";
  std::string public_url, secret_file;
  // Kernels run as 1000:1000 by default (bai-agent --uid/--gid); a proxy running as root gives
  // them the files so mounted folders are theirs to write.
  std::string file_owner = ::geteuid() == 0 ? "1000:1000" : "";
  std::vector<std::string> volumes;
  std::int64_t usage_cache_seconds = 10;
  app.add_option("--name", name, "Proxy name: hosts are NAME:VOLUME");
  app.add_option("--volume", volumes, "NAME=DIRECTORY, repeatable")->required();
  app.add_option("--client-listen", client_listen, "HOST:PORT of /upload and /download");
  app.add_option("--manager-listen", manager_listen, "HOST:PORT of the manager-facing API");
  app.add_option("--public-url", public_url, "URL clients are told (default http://CLIENT-LISTEN)");
  app.add_option("--secret-file", secret_file, "Shared secret with the manager")->required();
  app.add_option("--file-owner", file_owner,
                 "UID:GID owning folders and files (the kernels' work user; default 1000:1000 "
                 "as root, '' for this process)");
  app.add_option("--usage-cache-seconds", usage_cache_seconds,
                 "How long a folder's usage (a walk of its files) is kept; changes made "
                 "through the proxy show at once, a kernel's after at most this long (0: walk "
                 "every time)")
      ->check(CLI::Range(0, 86400));
  bai::server::log::Options log;
  bai::server::log::AddOptions(app, log);
  CLI11_PARSE(app, argc, argv);
  if (!process.InitLog(log).ok()) return 2;

  bai::storage::StorageOptions options;
  options.name = name;
  options.usage_cache_seconds = usage_cache_seconds;
  if (auto s = bai::storage::SetFileOwner(file_owner, options); !s.ok()) return Fail(s.message());
  for (auto const& v : volumes) {
    auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
      return Fail("--volume takes NAME=DIRECTORY, not '" + v + "'");
    }
    options.volumes[v.substr(0, eq)] = v.substr(eq + 1);
  }
  {
    std::ifstream in(secret_file);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      options.secret = text.str();
      while (!options.secret.empty() &&
             std::isspace(static_cast<unsigned char>(options.secret.back()))) {
        options.secret.pop_back();
      }
    } else {
      options.secret =
          bai::server::agent_protocol::MakeNonce() + bai::server::agent_protocol::MakeNonce();
      int fd = ::open(secret_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0 || ::write(fd, options.secret.data(), options.secret.size()) !=
                        static_cast<ssize_t>(options.secret.size())) {
        return Fail("cannot write " + secret_file);
      }
      ::close(fd);
    }
  }
  bai::storage::ProxyListen listen;
  std::string manager_host;
  std::uint16_t manager_port = 0;
  if (!SplitHostPort(client_listen, listen.address, listen.client_port) ||
      !SplitHostPort(manager_listen, manager_host, manager_port)) {
    return Fail("listen addresses are HOST:PORT");
  }
  listen.manager_port = manager_port;
  listen.public_url = public_url;

  process.BlockStopSignals();
  auto proxy = bai::storage::StorageProxy::Start(options, listen);
  if (!proxy.ok()) return Fail(proxy.status().message());
  std::cout << "bai-storage " << name << ": clients on " << listen.address << ":"
            << (*proxy)->client_port() << ", manager API on " << listen.address << ":"
            << (*proxy)->manager_port() << std::endl;
  bai::server::log::Info("listening", {{"name", name},
                                       {"address", listen.address},
                                       {"client_port", static_cast<int>((*proxy)->client_port())},
                                       {"manager_port", static_cast<int>((*proxy)->manager_port())},
                                       {"volumes", static_cast<int>(options.volumes.size())}});
  process.WaitForStop();
  (*proxy)->Stop();
  return 0;
}
