// SPDX-License-Identifier: Apache-2.0
#pragma once
// Dotfiles in the database: a user's (by keypair, as 24.09), a project's and a domain's; the
// shell under /user-config, /group-config and /domain-config, and what a new kernel gets.

#include "bai/protocol/admin_wire.h"
#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <string>
#include <vector>

namespace bai::manager {

/// Whose dotfiles: a keypair's (owner = access key), a project's (group id), a domain's (name).
enum class DotfileScope { kKeypair, kGroup, kDomain };

class DotfileStore {
 public:
  explicit DotfileStore(server::Database& db) : db_(db) {}

  /// The owner's dotfiles, by path.
  StatusOr<std::vector<protocol::Dotfile>> List(DotfileScope scope, std::string const& owner);
  /// Adds one (checked with CheckDotfile → kInvalidArgument); kAlreadyExists for its path;
  /// kResourceExhausted past kMaxDotfiles or kMaxDotfileBytes. With `replace`, an existing
  /// one is replaced instead, and a missing one is kNotFound (update).
  Status Put(DotfileScope scope, std::string const& owner, protocol::Dotfile const& dotfile,
             bool replace);
  /// kNotFound when there is none at that path.
  Status Delete(DotfileScope scope, std::string const& owner, std::string const& path);
  /// What a new kernel gets, in writing order: the domain's, the project's, the keypair's.
  StatusOr<std::vector<protocol::Dotfile>> ForKernel(std::string const& domain,
                                                     std::string const& group_id,
                                                     std::string const& access_key);

 private:
  server::Database& db_;
};

}  // namespace bai::manager
