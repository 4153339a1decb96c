// SPDX-License-Identifier: Apache-2.0
#pragma once
// One page of a paginated list (GraphQL's *_list queries): what every store's List takes and
// answers.

#include "server-reference/common/db/database.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bai::manager {

/// One page of a list: conditions over the list query's tables with their bound values, an
/// ORDER BY list, and the window.
struct ListQuery {
  std::vector<std::string> where;
  std::vector<server::SqlValue> params;
  std::string order;  ///< "" = the list's default order
  std::int64_t limit = 100;
  std::int64_t offset = 0;
};

template <class Row>
struct Page {
  std::vector<Row> rows;
  std::int64_t total = 0;  ///< rows matching, over all pages
};

}  // namespace bai::manager
