// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/dotfiles.h"

#include "server-reference/manager/state/store.h"

namespace bai::manager {

using server::SqlExecutor;
using server::SqlValue;

namespace {

char const* ScopeName(DotfileScope s) {
  switch (s) {
    case DotfileScope::kKeypair:
      return "keypair";
    case DotfileScope::kGroup:
      return "group";
    case DotfileScope::kDomain:
      return "domain";
  }
  return "keypair";
}

// "/home/work/.vimrc" and ".vimrc" are one file.
std::string Normal(std::string const& path) {
  constexpr std::string_view kHome = "/home/work/";
  return path.rfind(kHome, 0) == 0 ? path.substr(kHome.size()) : path;
}

}  // namespace

StatusOr<std::vector<protocol::Dotfile>> DotfileStore::List(DotfileScope scope,
                                                            std::string const& owner) {
  auto rows = db_.Query(
      "SELECT path, permission, data FROM dotfiles WHERE scope = ? AND owner = ? ORDER BY path",
      {ScopeName(scope), owner});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<protocol::Dotfile> out;
  for (auto& r : *rows) out.push_back({r.TakeText(0), r.TakeText(1), r.TakeText(2)});
  return out;
}

Status DotfileStore::Put(DotfileScope scope, std::string const& owner,
                         protocol::Dotfile const& given, bool replace) {
  if (auto s = protocol::CheckDotfile(given); !s.ok()) return s;
  protocol::Dotfile d = given;
  d.path = Normal(d.path);
  return db_.Transaction([&](SqlExecutor& tx) -> Status {
    // The contents, not a length in SQL: the byte length is spelled differently by each
    // database, and an owner's dotfiles are few and small (the limits below).
    auto rows = tx.Query("SELECT path, data FROM dotfiles WHERE scope = ? AND owner = ?",
                         {ScopeName(scope), owner});
    if (!rows.ok()) return rows.status();
    bool exists = false;
    std::size_t count = 0, bytes = d.data.size();
    for (auto const& r : *rows) {
      if (r.Text(0) == d.path) {
        exists = true;
        continue;
      }
      ++count;
      bytes += r.Text(1).size();
    }
    if (exists && !replace) return Status(StatusCode::kAlreadyExists, "Dotfile already exists.");
    if (!exists && replace) return Status(StatusCode::kNotFound, "No such dotfile: " + d.path);
    if (count + 1 > protocol::kMaxDotfiles) {
      return Status(StatusCode::kResourceExhausted, "Dotfile creation limit reached (100)");
    }
    if (bytes > protocol::kMaxDotfileBytes) {
      return Status(StatusCode::kResourceExhausted,
                    "No leftover space for dotfile storage (64 KiB in all)");
    }
    auto w = tx.Exec(
        "INSERT INTO dotfiles (scope, owner, path, permission, data, modified_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, owner, path) DO UPDATE SET "
        "permission = excluded.permission, data = excluded.data, "
        "modified_at = excluded.modified_at",
        {ScopeName(scope), owner, d.path, d.permission, d.data, NowIso()});
    return w.status();
  });
}

Status DotfileStore::Delete(DotfileScope scope, std::string const& owner, std::string const& path) {
  auto r = db_.Exec("DELETE FROM dotfiles WHERE scope = ? AND owner = ? AND path = ?",
                    {ScopeName(scope), owner, Normal(path)});
  if (!r.ok()) return r.status();
  if (*r == 0) return Status(StatusCode::kNotFound, "No such dotfile: " + path);
  return Status();
}

StatusOr<std::vector<protocol::Dotfile>> DotfileStore::ForKernel(std::string const& domain,
                                                                 std::string const& group_id,
                                                                 std::string const& access_key) {
  auto rows = db_.Query(
      "SELECT path, permission, data FROM dotfiles WHERE (scope = 'domain' AND owner = ?) OR "
      "(scope = 'group' AND owner = ?) OR (scope = 'keypair' AND owner = ?) "
      "ORDER BY CASE scope WHEN 'domain' THEN 0 WHEN 'group' THEN 1 ELSE 2 END, path",
      {domain, group_id, access_key});
  if (!rows.ok()) return std::move(rows).status();
  std::vector<protocol::Dotfile> out;
  for (auto& r : *rows) out.push_back({r.TakeText(0), r.TakeText(1), r.TakeText(2)});
  return out;
}

}  // namespace bai::manager
