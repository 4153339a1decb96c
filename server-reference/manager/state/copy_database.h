// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/db/database.h"

#include <string>

namespace bai::manager {

/// `bai-manager migrate --from … --to …`: brings both databases to this manager's schema, then
/// copies every table's rows from `from` into `to` in one transaction on each side (the source
/// read under its write lock, so the copy is one consistent moment even while a manager runs
/// on it), parents before children, and moves PostgreSQL's identity counters past the copied
/// rows. Refuses a target that already holds rows (two installations are never mixed). Returns
/// a summary: "copied N rows of T tables".
StatusOr<std::string> CopyDatabase(server::Database& from, server::Database& to);

}  // namespace bai::manager
