// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/quota.h"

namespace bai::storage {

std::string WhyOverQuota(std::string const& what, Held used, std::int64_t max_bytes,
                         std::int64_t max_files, Held more) {
  if (max_bytes > 0 && used.bytes + more.bytes > max_bytes) {
    return "Over the quota of " + what + ": " + std::to_string(used.bytes) + " of " +
           std::to_string(max_bytes) + " bytes used, " + std::to_string(more.bytes) +
           " more asked for.";
  }
  if (max_files > 0 && used.files + more.files > max_files) {
    return "Over the quota of " + what + ": " + std::to_string(used.files) + " of " +
           std::to_string(max_files) + " files used.";
  }
  return "";
}

std::string WhyOverLimits(QuotaLimits const& limits, Held folder, Held scope, Held more) {
  if (limits.FolderLimited()) {
    auto why =
        WhyOverQuota(limits.folder, folder, limits.folder_max_bytes, limits.folder_max_files, more);
    if (!why.empty()) return why;
  }
  if (!limits.ScopeLimited()) return "";
  Held counted{scope.bytes + limits.reserved.bytes, scope.files + limits.reserved.files};
  return WhyOverQuota(limits.scope, counted, limits.scope_max_bytes, 0, more);
}

}  // namespace bai::storage
