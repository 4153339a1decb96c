// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/export.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace bai {

/// The canonical error categories. Every failure libbai reports maps onto one of these.
enum class StatusCode {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kUnauthenticated,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
};

/// Returns the name of a status code, e.g. "NOT_FOUND".
BAI_EXPORT std::string_view StatusCodeName(StatusCode code);

/// Details carried by an error: what the server said (an RFC 7807 problem document) and where.
struct ErrorInfo {
  int http_status = 0;     ///< 0 when no HTTP response was received.
  std::string type;        ///< problem `type` URL, e.g. https://api.backend.ai/probs/auth-failed
  std::string title;       ///< problem `title`
  std::string detail;      ///< problem `msg` (Backend.AI's name for the detail text)
  std::string data_json;   ///< problem `data`, as JSON text ("" when absent)
  std::string request_id;  ///< X-BackendAI-RequestID of the response, if any
  std::optional<double> retry_after_seconds;  ///< Retry-After of the response, if any
};

/// The result of an operation: ok, or a code with a message and details.
///
/// @par Example
/// @code
/// bai::Status s = sessions.Destroy("my-session");
/// if (!s.ok()) std::cerr << s.message() << "\n";
/// @endcode
class BAI_EXPORT Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, ErrorInfo info = {});

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  std::string const& message() const { return message_; }
  ErrorInfo const& error_info() const { return info_; }

  /// "CODE: message" for logs.
  std::string ToString() const;

  friend bool operator==(Status const& a, Status const& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }
  friend bool operator!=(Status const& a, Status const& b) { return !(a == b); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  ErrorInfo info_;
};

/// The only exception libbai throws: from StatusOr<T>::value() on an error.
class BAI_EXPORT RuntimeStatusError : public std::runtime_error {
 public:
  explicit RuntimeStatusError(Status status);
  Status const& status() const { return status_; }

 private:
  Status status_;
};

/// A value of type T, or the Status that explains why there is none.
template <typename T>
class StatusOr {
 public:
  /// Holds an error; `status` must not be ok (an ok status becomes kInternal).
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr built from an ok Status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  Status const& status() const& { return status_; }
  Status&& status() && { return std::move(status_); }

  T& value() & {
    Check();
    return *value_;
  }
  T const& value() const& {
    Check();
    return *value_;
  }
  T&& value() && {
    Check();
    return std::move(*value_);
  }
  T& operator*() & { return *value_; }
  T const& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  T const* operator->() const { return &*value_; }

 private:
  void Check() const {
    if (!value_) throw RuntimeStatusError(status_);
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace bai
