// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether more data fits a folder's quotas: pure functions, no I/O. The proxy decides an upload
// with them in the one request that starts it (UploadQuota in storage_api.h); the manager
// decides a clone with them.

#include <cstdint>
#include <string>

namespace bai::storage {

/// What a folder and its owner's scope hold.
struct Held {
  std::int64_t bytes = 0;
  std::int64_t files = 0;
};

/// The quotas an upload (or a clone) must fit, and how a refusal names them; 0 = none.
struct QuotaLimits {
  std::string folder;  ///< "the folder data"
  std::int64_t folder_max_bytes = 0, folder_max_files = 0;
  std::string scope;  ///< "the user's folders (user:…, max_quota_scope_size of its policy)"
  std::int64_t scope_max_bytes = 0;
  /// Room the manager holds in the scope beyond what the proxy counts (clones under way).
  Held reserved;

  bool FolderLimited() const { return folder_max_bytes > 0 || folder_max_files > 0; }
  bool ScopeLimited() const { return scope_max_bytes > 0; }
};

/// Why `more_bytes` in `more_files` files do not fit in `what` (a folder or a quota scope) that
/// holds `used` with limits `max_bytes` and `max_files` (0: none), or "".
std::string WhyOverQuota(std::string const& what, Held used, std::int64_t max_bytes,
                         std::int64_t max_files, Held more);

/// Why `more` does not fit `limits`, given what the folder and its scope hold (each counted
/// only where the limits need it), or "".
std::string WhyOverLimits(QuotaLimits const& limits, Held folder, Held scope, Held more);

}  // namespace bai::storage
