// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server-reference/common/db/database.h"

#include <vector>

namespace bai::manager {

/// The manager's schema, one migration per step. SQL shared by SQLite and PostgreSQL: TEXT,
/// INTEGER (booleans 0/1), JSON documents and decimal slot maps as TEXT, times as ISO 8601 TEXT
/// written by the manager.
std::vector<server::Migration> const& Migrations();

}  // namespace bai::manager
