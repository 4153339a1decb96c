// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the PostgreSQL backend changes in the SQL the stores write (pure; unit-tested). The
// stores write one SQL for both databases (database.h); these are the few places where the two
// differ in what the same text means.

#include <string>
#include <string_view>

namespace bai::server::postgres {

/// `?` placeholders numbered `$1`, `$2`, … in order; a `?` inside a string literal, a quoted
/// identifier or a comment stays. Returns the count through `count` when it is given.
std::string NumberPlaceholders(std::string_view sql, int* count = nullptr);

/// A schema statement (CREATE TABLE, ALTER TABLE … ADD COLUMN) with SQLite's meanings made
/// explicit: INTEGER is 64-bit in SQLite (BIGINT here), and a table's `INTEGER PRIMARY KEY`
/// numbers its rows when an insert leaves it out (an identity column here). Other statements
/// come back unchanged.
std::string SchemaStatement(std::string_view sql);

}  // namespace bai::server::postgres
