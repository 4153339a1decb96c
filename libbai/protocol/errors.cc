// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/errors.h"

#include <array>

namespace bai::protocol {
namespace {

using P = ProblemType;
using C = StatusCode;

// The order follows the enum; a static_assert below keeps them in step.
constexpr std::array<ProblemTypeInfo, 38> kTable{{
    {P::kGenericBadRequest, "generic-bad-request", 400, "Bad request.", C::kInvalidArgument},
    {P::kInvalidApiParams, "invalid-api-params", 400, "Missing or invalid API parameters.",
     C::kInvalidArgument},
    {P::kInvalidAuthParams, "invalid-auth-params", 400,
     "Missing or invalid authorization parameters.", C::kUnauthenticated},
    {P::kInvalidCredentials, "invalid-credentials", 400, "Invalid credentials.",
     C::kUnauthenticated},
    {P::kRejectedByHook, "rejected-by-hook", 400, "Operation rejected by a hook plugin.",
     C::kFailedPrecondition},
    {P::kGraphqlError, "graphql-error", 400, "GraphQL-generated error.", C::kInvalidArgument},
    {P::kSessionAlreadyExists, "session-already-exists", 400, "The session already exists.",
     C::kAlreadyExists},
    {P::kVfolderCreationFailed, "vfolder-creation-failed", 400,
     "Virtual folder creation has failed.", C::kFailedPrecondition},
    {P::kVfolderAlreadyExists, "vfolder-already-exists", 400,
     "The virtual folder already exists with the same name.", C::kAlreadyExists},
    {P::kVfolderOperationFailed, "vfolder-operation-failed", 400,
     "Virtual folder operation has failed.", C::kFailedPrecondition},
    {P::kVfolderFilterStatusFailed, "vfolder-filter-status-failed", 400,
     "Virtual folder status filtering has failed.", C::kFailedPrecondition},
    {P::kVfolderFilterStatusNotAvailable, "vfolder-filter-status-not-available", 400,
     "Virtual folder is not in an available status.", C::kFailedPrecondition},
    {P::kVfolderPermissionError, "vfolder-permission-error", 400,
     "The virtual folder does not permit the specified permission.", C::kPermissionDenied},
    {P::kNotImplemented, "not-implemented", 400, "This API is not implemented.", C::kUnimplemented},
    {P::kDeprecated, "deprecated", 400, "This API is deprecated.", C::kUnimplemented},
    {P::kAuthFailed, "auth-failed", 401, "Credential/signature mismatch.", C::kUnauthenticated},
    {P::kPasswordExpired, "password-expired", 401, "Password has expired.", C::kUnauthenticated},
    {P::kGenericForbidden, "generic-forbidden", 403, "Forbidden operation.", C::kPermissionDenied},
    {P::kInsufficientPrivilege, "insufficient-privilege", 403, "Insufficient privilege.",
     C::kPermissionDenied},
    {P::kUrlNotFound, "url-not-found", 404, "Unknown URL path.", C::kNotFound},
    {P::kObjectNotFound, "object-not-found", 404, "No such resource.", C::kNotFound},
    {P::kTooManySessionsMatched, "too-many-sessions-matched", 404, "Too many sessions matched.",
     C::kInvalidArgument},
    {P::kTooManyKernels, "too-many-kernels", 404, "Too many kernels matched.", C::kInvalidArgument},
    {P::kTooManyVfolders, "too-many-vfolders", 404, "Too many virtual folders matched.",
     C::kInvalidArgument},
    {P::kMethodNotAllowed, "method-not-allowed", 405, "HTTP method not allowed.",
     C::kInvalidArgument},
    {P::kQuotaExceeded, "quota-exceeded", 412, "You have reached your resource limit.",
     C::kResourceExhausted},
    {P::kRequestTooLarge, "request-entity-too-large", 413, "The request body is too large.",
     C::kInvalidArgument},
    {P::kRateLimitExceeded, "rate-limit-exceeded", 429, "Rate limit exceeded.",
     C::kResourceExhausted},
    {P::kInternalServerError, "internal-server-error", 500, "Internal server error.", C::kInternal},
    {P::kServerMisconfigured, "server-misconfigured", 500,
     "Service misconfigured. Please contact the system administrator.", C::kInternal},
    {P::kKernelCreationFailed, "kernel-creation-failed", 500, "Kernel creation has failed.",
     C::kInternal},
    {P::kKernelDestructionFailed, "kernel-destruction-failed", 500,
     "Kernel destruction has failed.", C::kInternal},
    {P::kKernelRestartFailed, "kernel-restart-failed", 500, "Kernel restart has failed.",
     C::kInternal},
    {P::kKernelExecutionFailed, "kernel-execution-failed", 500,
     "Executing user code in the kernel has failed.", C::kInternal},
    {P::kServiceUnavailable, "service-unavailable", 503,
     "Service unavailable. Please try again later.", C::kUnavailable},
    {P::kInstanceNotAvailable, "instance-not-available", 503, "There is no available instance.",
     C::kUnavailable},
    {P::kServerFrozen, "server-frozen", 503,
     "The server is frozen due to maintenance. Please try again later.", C::kUnavailable},
    {P::kStorageProxyError, "storage-proxy-error", 500, "The storage proxy returned an error.",
     C::kInternal},
}};

constexpr bool TableInEnumOrder() {
  for (std::size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<std::size_t>(kTable[i].type) != i) return false;
  }
  return static_cast<std::size_t>(P::kStorageProxyError) + 1 == kTable.size();
}
static_assert(TableInEnumOrder(), "kTable must list every ProblemType in enum order");

}  // namespace

ProblemTypeInfo const& GetProblemTypeInfo(ProblemType type) {
  return kTable[static_cast<std::size_t>(type)];
}

std::string ProblemTypeUrl(ProblemType type) {
  return std::string(kProblemTypePrefix) + std::string(GetProblemTypeInfo(type).suffix);
}

std::optional<ProblemType> FindProblemType(std::string_view url) {
  if (url.substr(0, kProblemTypePrefix.size()) == kProblemTypePrefix) {
    url.remove_prefix(kProblemTypePrefix.size());
  }
  for (auto const& row : kTable) {
    if (row.suffix == url) return row.type;
  }
  return std::nullopt;
}

StatusCode StatusCodeFromHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
    case 405:
    case 413:
    case 414:
    case 422:
      return C::kInvalidArgument;
    case 401:
      return C::kUnauthenticated;
    case 403:
      return C::kPermissionDenied;
    case 404:
    case 410:
      return C::kNotFound;
    case 408:
    case 504:
      return C::kDeadlineExceeded;
    case 409:
      return C::kAlreadyExists;
    case 412:
      return C::kFailedPrecondition;
    case 429:
      return C::kResourceExhausted;
    case 499:
      return C::kCancelled;
    case 501:
      return C::kUnimplemented;
    case 502:
    case 503:
      return C::kUnavailable;
    default:
      break;
  }
  if (http_status >= 200 && http_status < 300) return C::kOk;
  if (http_status >= 500) return C::kInternal;
  if (http_status >= 400) return C::kInvalidArgument;
  return C::kUnknown;
}

Status MakeProblemStatus(ProblemType type, std::string detail, std::string data_json) {
  auto const& row = GetProblemTypeInfo(type);
  ErrorInfo info;
  info.http_status = row.http_status;
  info.type = ProblemTypeUrl(type);
  info.title = std::string(row.title);
  info.detail = detail;
  info.data_json = std::move(data_json);
  std::string message = detail.empty() ? std::string(row.title) : std::move(detail);
  return Status(row.code, std::move(message), std::move(info));
}

}  // namespace bai::protocol
