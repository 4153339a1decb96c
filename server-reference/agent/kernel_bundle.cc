// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/kernel_bundle.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/util/json_parse.h"
#include "server-reference/agent/node_stats.h"
#include "server-reference/agent/oci_config.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace bai::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool WriteText(fs::path const& p, std::string const& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

bool ChownToWorkUser(std::string const& path, RuncOptions const& o) {
  return chown(path.c_str(), static_cast<uid_t>(o.uid), static_cast<gid_t>(o.gid)) == 0;
}

}  // namespace

std::string KernelRecord::ToJson() const {
  json held = json::object();
  for (auto const& [uuid, q] : gpu_quanta) held[uuid] = gpushim::FormatQuanta(q);
  json saved = {{"session_id", session_id},     {"session_name", session_name},
                {"session_type", session_type}, {"image", image},
                {"cgroups_path", cgroups_path}, {"container_id", container_id},
                {"gpu_quanta", held},           {"cpus", cpus}};
  if (network) {
    saved["network"] = {{"mode", network_mode},        {"bridge", network->bridge},
                        {"host_if", network->host_if}, {"address", FormatIpv4(network->address)},
                        {"prefix", network->prefix},   {"gateway", FormatIpv4(network->gateway)}};
  }
  return saved.dump();
}

KernelRecord KernelRecord::FromJson(std::string const& text, std::string container_id) {
  KernelRecord r;
  r.container_id = std::move(container_id);
  auto saved = internal::ParseJson(text);
  if (!saved || !saved->is_object()) return r;
  internal::FieldReader f(*saved);
  r.container_id = f.String("container_id", r.container_id);
  r.session_id = f.String("session_id");
  r.session_name = f.String("session_name");
  r.session_type = f.String("session_type", "interactive");
  r.image = f.String("image");
  r.cgroups_path = f.String("cgroups_path");
  if (auto cpus = saved->find("cpus"); cpus != saved->end() && cpus->is_array()) {
    for (auto const& c : *cpus) {
      if (c.is_number_integer()) r.cpus.push_back(c.get<int>());
    }
  }
  if (auto net = saved->find("network"); net != saved->end() && net->is_object()) {
    auto address = ParseIpv4(net->value("address", ""));
    auto gateway = ParseIpv4(net->value("gateway", ""));
    if (address.ok() && gateway.ok()) {
      r.network_mode = net->value("mode", "");
      r.network = KernelNetwork{net->value("bridge", ""), net->value("host_if", ""), *address,
                                net->value("prefix", 0), *gateway};
    }
  }
  if (auto held = saved->find("gpu_quanta"); held != saved->end() && held->is_object()) {
    for (auto it = held->begin(); it != held->end(); ++it) {
      Quanta q;
      if (it->is_string() && gpushim::ParseQuanta(it->get<std::string>(), &q)) {
        r.gpu_quanta[it.key()] = q;
      }
    }
  }
  return r;
}

Status PrepareRunDir(std::string const& dir, RuncOptions const& options) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "run", ec);
  if (ec) return Status(StatusCode::kInternal, "cannot create " + dir + ": " + ec.message());
  if (!ChownToWorkUser(dir + "/run", options)) {
    return Status(StatusCode::kInternal, "cannot chown the kernel's run directory");
  }
  return Status();
}

StatusOr<std::vector<std::string>> PrepareGpuShim(std::string const& dir,
                                                  std::string const& session_id,
                                                  GpuPlan const& plan, RuncOptions const& options) {
  std::vector<std::string> stamps;
  if (plan.limits.empty()) return stamps;
  auto fail = [](std::string why) { return Status(StatusCode::kFailedPrecondition, why); };
  if (options.gpu_files.shim.empty()) {
    return fail("libbai-gpushim.so was not found beside bai-agent: no fractional GPUs");
  }
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "gpushim", ec);
  if (ec || !ChownToWorkUser(dir + "/gpushim", options)) {
    return fail("cannot create the kernel's GPU ledger directory");
  }
  if (auto err =
          gpushim::Ledger::Create(dir + "/gpushim/ledger", plan.ledger, options.uid, options.gid);
      !err.empty()) {
    return fail(err);
  }
  // The stamps are on the agent's boards, outside the kernel's directory: removed here when
  // the kernel cannot start after all.
  auto undo = [&stamps, &fail](std::string why) {
    std::error_code ignored;
    for (auto const& stamp : stamps) fs::remove(stamp, ignored);
    return fail(std::move(why));
  };
  for (auto const& [n, uuid] : plan.activity) {
    // A stamp of zero: not active yet. The board is the agent's; each kernel owns its file.
    std::string board = ActivityBoardDir(options, uuid);
    fs::create_directories(board, ec);
    std::string stamp = board + "/" + session_id;
    if (ec || !WriteText(stamp, std::string(8, '\0'))) {
      return undo("cannot create the GPU activity stamp " + stamp);
    }
    stamps.push_back(stamp);
    if (!ChownToWorkUser(stamp, options)) {
      return undo("cannot create the GPU activity stamp " + stamp);
    }
  }
  if (!WriteText(fs::path(dir) / "gpushim.conf", plan.limits) ||
      !WriteText(fs::path(dir) / "ld.so.preload", std::string(kShimLibInKernel) + "\n")) {
    return undo("cannot write the GPU shim's files in " + dir);
  }
  return stamps;
}

Status WriteResolvConf(std::string const& dir) {
  if (!WriteText(fs::path(dir) / "resolv.conf",
                 KernelResolvConf(ReadWholeFile("/etc/resolv.conf")))) {
    return Status(StatusCode::kInternal, "cannot write " + dir + "/resolv.conf");
  }
  return Status();
}

StatusOr<std::string> WriteKernelEtc(std::string const& dir, std::string const& passwd,
                                     std::string const& group) {
  fs::path etc = fs::path(dir) / "etc";
  std::error_code ec;
  fs::create_directories(etc, ec);
  if (ec || !WriteText(etc / "passwd", passwd) || !WriteText(etc / "group", group)) {
    return Status(StatusCode::kInternal, "cannot write " + etc.string() + "/passwd and group");
  }
  return etc.string();
}

Status WriteBundle(std::string const& dir, KernelRecord const& record,
                   std::string const& oci_config) {
  if (!WriteText(fs::path(dir) / "kernel.json", record.ToJson()) ||
      !WriteText(fs::path(dir) / "config.json", oci_config)) {
    return Status(StatusCode::kInternal, "cannot write the bundle in " + dir);
  }
  return Status();
}

}  // namespace bai::agent
