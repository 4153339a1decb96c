// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/oci_hooks.h"

#include "bai/protocol/resource.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"
#include "server-reference/agent/kernel_bundle.h"
#include "server-reference/agent/kernel_usage.h"
#include "server-reference/agent/network_host.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/common/exec/process.h"
#include "server-reference/common/log/log.h"
#include "server-reference/common/wire/runner_messages.h"

#include <fcntl.h>
#include <net/if.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace bai::agent {

std::optional<long long> StatePid(std::string const& state_json) {
  auto state = internal::ParseJson(state_json);
  if (!state || !state->contains("pid") || !(*state)["pid"].is_number_integer()) {
    return std::nullopt;
  }
  return (*state)["pid"].get<long long>();
}

Status RunHook(std::string const& name, std::string const& state_json,
               std::vector<std::string> const& args) {
  if (name != "loopback-up" && name != "network-up") {
    return Status(StatusCode::kInvalidArgument, "unknown hook " + name);
  }
  auto pid = StatePid(state_json);
  if (!pid) return Status(StatusCode::kInvalidArgument, "no container pid in the hook's state");
  if (name == "network-up") return RunNetworkHook(static_cast<long>(*pid), args);
  std::string ns = "/proc/" + std::to_string(*pid) + "/ns/net";
  int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    if (fd >= 0) close(fd);
    return Status(StatusCode::kInternal, "cannot enter " + ns + ": " + std::strerror(errno));
  }
  close(fd);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    ok = ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  }
  int err = errno;
  if (s >= 0) close(s);
  if (!ok)
    return Status(StatusCode::kInternal, std::string("cannot raise lo: ") + std::strerror(err));
  return Status();
}

// ---------------------------------------------------------------------------------------------

}  // namespace bai::agent
