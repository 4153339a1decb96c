// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/errors.h"
#include "bai/status.h"

#include "server-reference/common/http/http.h"

#include <initializer_list>
#include <optional>
#include <string>

namespace bai::server {

/// A problem+json response for `status`. A Status made with protocol::MakeProblemStatus keeps
/// its type and HTTP status; any other is mapped from its StatusCode (the inverse of the SDK's
/// mapping): kInvalidArgument → 400 invalid-api-params, kNotFound → 404 object-not-found, …
HttpResponse ProblemResponse(Status const& status);

/// One row of an area's table from status codes to the API's problems: the codes it covers,
/// the problem type, and the detail (the status's message after `prefix`, or `fixed` instead).
struct ProblemRule {
  std::initializer_list<StatusCode> codes;
  protocol::ProblemType type;
  char const* prefix = "";
  char const* fixed = nullptr;
};

/// `s` as the problem of the first rule covering its code; else `otherwise`'s problem (a rule
/// whose codes do not matter), or `s` as it is when there is none. How each area (mounts,
/// storage, kernel files, dotfiles) says its refusals in the API's words, one table each.
Status ProblemFor(Status const& s, std::initializer_list<ProblemRule> rules,
                  std::optional<ProblemRule> otherwise = std::nullopt);

}  // namespace bai::server
