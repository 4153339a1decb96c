// SPDX-License-Identifier: Apache-2.0
#include "server-reference/agent/image_process.h"

#include "server-reference/agent/images.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>

namespace bai::agent {
namespace {

std::vector<std::string> Fields(std::string_view line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto colon = line.find(':', start);
    out.emplace_back(line.substr(start, colon - start));
    if (colon == std::string_view::npos) return out;
    start = colon + 1;
  }
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line.front() != '#') out.push_back(line);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return out;
}

std::optional<int> Number(std::string_view s) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string ShellQuote(std::string_view word) {
  bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool Identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

StatusOr<KernelUser> ResolveImageUser(std::string_view user, std::string_view passwd,
                                      std::string_view group) {
  auto colon = user.find(':');
  std::string_view who = user.substr(0, colon);
  std::optional<std::string_view> grp;
  if (colon != std::string_view::npos) grp = user.substr(colon + 1);
  if (who.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "the image's User \"" + std::string(user) + "\" names no user");
  }
  KernelUser out;
  bool found = false;
  for (auto line : Lines(passwd)) {
    auto f = Fields(line);
    if (f.size() < 4) continue;
    auto uid = Number(f[2]), gid = Number(f[3]);
    if (!uid || !gid) continue;
    if (f[0] == who || (Number(who) && *Number(who) == *uid)) {
      out = {*uid, *gid, f[0]};
      found = true;
      break;
    }
  }
  if (!found) {
    auto uid = Number(who);
    if (!uid) {
      return Status(StatusCode::kNotFound, "the image's User \"" + std::string(user) +
                                               "\": no user " + std::string(who) +
                                               " in the image's /etc/passwd");
    }
    out = {*uid, *uid, "work"};  // a bare uid runs with its own number as its group
  }
  if (grp) {
    if (auto gid = Number(*grp)) {
      out.gid = *gid;
    } else {
      bool named = false;
      for (auto line : Lines(group)) {
        auto f = Fields(line);
        if (f.size() >= 3 && f[0] == *grp && Number(f[2])) {
          out.gid = *Number(f[2]);
          named = true;
          break;
        }
      }
      if (!named) {
        return Status(StatusCode::kNotFound, "the image's User \"" + std::string(user) +
                                                 "\": no group " + std::string(*grp) +
                                                 " in the image's /etc/group");
      }
    }
  }
  return out;
}

std::string PasswdWithUser(std::string_view image_passwd, KernelUser const& user) {
  std::string out;
  bool root = false;
  for (auto line : Lines(image_passwd)) {
    auto f = Fields(line);
    if (f.size() >= 3 && (f[0] == user.name || Number(f[2]) == user.uid)) continue;
    if (!f.empty() && f[0] == "root") root = true;
    out.append(line) += '\n';
  }
  if (!root && user.uid != 0) out.insert(0, "root:x:0:0:root:/root:/bin/sh\n");
  out += user.name + ":x:" + std::to_string(user.uid) + ":" + std::to_string(user.gid) + ":" +
         user.name + ":/home/work:/bin/sh\n";
  return out;
}

std::string GroupWithUser(std::string_view image_group, KernelUser const& user) {
  std::string out;
  bool root = false;
  for (auto line : Lines(image_group)) {
    auto f = Fields(line);
    if (f.size() >= 3 && (f[0] == user.name || Number(f[2]) == user.gid)) continue;
    if (!f.empty() && f[0] == "root") root = true;
    out.append(line) += '\n';
  }
  if (!root && user.gid != 0) out.insert(0, "root:x:0:\n");
  out += user.name + ":x:" + std::to_string(user.gid) + ":" + user.name + "\n";
  return out;
}

std::string ImageCommandLine(Image const& image) {
  std::string words;
  for (auto const* part : {&image.entrypoint, &image.cmd}) {
    for (auto const& w : *part) words += (words.empty() ? "" : " ") + ShellQuote(w);
  }
  if (words.empty()) return "";
  std::string dir = image.working_dir.empty() ? "" : "cd " + ShellQuote(image.working_dir) + " && ";
  return dir + "exec " + words;
}

std::vector<std::string> CoreCountVariables(std::map<std::string, std::string> const& labels) {
  std::vector<std::string> out;
  auto it = labels.find("ai.backend.envs.corecount");
  if (it == labels.end()) return out;
  std::stringstream in(it->second);
  for (std::string name; std::getline(in, name, ',');) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (Identifier(name) && std::find(out.begin(), out.end(), name) == out.end()) {
      out.push_back(name);
    }
  }
  return out;
}

}  // namespace bai::agent
