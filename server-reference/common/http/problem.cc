// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/http/problem.h"

#include "bai/protocol/errors.h"

#include "libbai/internal/json_codec.h"

namespace bai::server {

using protocol::ProblemType;

namespace {

ProblemType TypeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return ProblemType::kInvalidApiParams;
    case StatusCode::kNotFound:
      return ProblemType::kObjectNotFound;
    case StatusCode::kAlreadyExists:
      return ProblemType::kGenericBadRequest;
    case StatusCode::kUnauthenticated:
      return ProblemType::kAuthFailed;
    case StatusCode::kPermissionDenied:
      return ProblemType::kInsufficientPrivilege;
    case StatusCode::kResourceExhausted:
      return ProblemType::kQuotaExceeded;
    case StatusCode::kFailedPrecondition:
      return ProblemType::kGenericBadRequest;
    case StatusCode::kUnimplemented:
      return ProblemType::kNotImplemented;
    case StatusCode::kUnavailable:
      return ProblemType::kServiceUnavailable;
    default:
      return ProblemType::kInternalServerError;
  }
}

}  // namespace

HttpResponse ProblemResponse(Status const& status) {
  ErrorInfo info = status.error_info();
  if (info.type.empty() || info.http_status == 0) {
    auto typed =
        protocol::MakeProblemStatus(TypeFor(status.code()), status.message(), info.data_json);
    info = typed.error_info();
  }
  HttpResponse r;
  r.status = info.http_status;
  r.content_type = "application/problem+json";
  r.body = internal::ProblemJson(info);
  return r;
}

namespace {

Status Made(ProblemRule const& rule, Status const& s) {
  return protocol::MakeProblemStatus(
      rule.type, rule.fixed ? std::string(rule.fixed) : rule.prefix + s.message());
}

}  // namespace

Status ProblemFor(Status const& s, std::initializer_list<ProblemRule> rules,
                  std::optional<ProblemRule> otherwise) {
  for (auto const& rule : rules) {
    for (auto code : rule.codes) {
      if (code == s.code()) return Made(rule, s);
    }
  }
  return otherwise ? Made(*otherwise, s) : s;
}

}  // namespace bai::server
