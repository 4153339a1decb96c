// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/status.h"

#include "server-reference/common/http/http.h"

namespace bai::server {

/// A problem+json response for `status`. A Status made with protocol::MakeProblemStatus keeps
/// its type and HTTP status; any other is mapped from its StatusCode (the inverse of the SDK's
/// mapping): kInvalidArgument → 400 invalid-api-params, kNotFound → 404 object-not-found, …
HttpResponse ProblemResponse(Status const& status);

}  // namespace bai::server
