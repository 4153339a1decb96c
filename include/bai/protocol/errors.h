// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"
#include "bai/status.h"

#include <optional>
#include <string>
#include <string_view>

namespace bai::protocol {

/// The problem+json `type` values of Backend.AI (PROTOCOL.md §4.2). One table serves both sides:
/// the server emits these, the SDK maps them back to a StatusCode.
enum class ProblemType {
  kGenericBadRequest,
  kInvalidApiParams,
  kInvalidAuthParams,
  kInvalidCredentials,
  kRejectedByHook,
  kGraphqlError,
  kSessionAlreadyExists,
  kVfolderCreationFailed,
  kVfolderAlreadyExists,
  kVfolderOperationFailed,
  kVfolderFilterStatusFailed,
  kVfolderFilterStatusNotAvailable,
  kVfolderPermissionError,
  kNotImplemented,
  kDeprecated,
  kAuthFailed,
  kPasswordExpired,
  kGenericForbidden,
  kInsufficientPrivilege,
  kUrlNotFound,
  kObjectNotFound,
  kTooManySessionsMatched,
  kTooManyKernels,
  kTooManyVfolders,
  kMethodNotAllowed,
  kQuotaExceeded,
  kRequestTooLarge,
  kRateLimitExceeded,
  kInternalServerError,
  kServerMisconfigured,
  kKernelCreationFailed,
  kKernelDestructionFailed,
  kKernelRestartFailed,
  kKernelExecutionFailed,
  kServiceUnavailable,
  kInstanceNotAvailable,
  kServerFrozen,
  kStorageProxyError,
};

/// One row of the table.
struct ProblemTypeInfo {
  ProblemType type;
  std::string_view suffix;  ///< e.g. "auth-failed"
  int http_status;          ///< the status the server answers with
  std::string_view title;   ///< the default human-readable title
  StatusCode code;          ///< what the SDK reports
};

/// Common prefix of every `type` URL.
inline constexpr std::string_view kProblemTypePrefix = "https://api.backend.ai/probs/";

/// The table row of `type`.
BAI_EXPORT ProblemTypeInfo const& GetProblemTypeInfo(ProblemType type);
/// The full `type` URL, e.g. "https://api.backend.ai/probs/auth-failed".
BAI_EXPORT std::string ProblemTypeUrl(ProblemType type);
/// The row whose URL (or bare suffix) is `url`; nullopt for types not in the table.
BAI_EXPORT std::optional<ProblemType> FindProblemType(std::string_view url);

/// The StatusCode for an HTTP status when the problem type is unknown or absent.
BAI_EXPORT StatusCode StatusCodeFromHttpStatus(int http_status);

/// A Status describing `type`: code, HTTP status, type URL and title from the table; `detail`
/// becomes the problem's `msg` and the Status message (the title when empty); `data_json` is the
/// problem's `data` as JSON text ("" for none).
BAI_EXPORT Status MakeProblemStatus(ProblemType type, std::string detail = {},
                                    std::string data_json = {});

}  // namespace bai::protocol
