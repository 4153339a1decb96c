// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/client.h"
#include "bai/config.h"
#include "bai/status.h"

#include <nlohmann/json_fwd.hpp>

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

namespace bai::cli {

/// Flags accepted by every command, in any position.
struct GlobalOptions {
  std::string output;    ///< "json" or "table"; empty = table
  bool debug = false;    ///< log requests and responses to stderr (secrets redacted)
  std::string profile;   ///< --profile
  std::string endpoint;  ///< --endpoint (overrides the profile and BACKEND_ENDPOINT)
};

/// What a command runs with: the streams, the global flags, and configuration and a client
/// built on first use (so `bai version` and `--help` never read files or touch the network).
class Context {
 public:
  Context(std::ostream& out, std::ostream& err, std::istream& in, bool stdout_tty, bool stdin_tty)
      : out_(out), err_(err), in_(in), stdout_tty_(stdout_tty), stdin_tty_(stdin_tty) {}

  GlobalOptions& globals() { return globals_; }
  bool json() const { return globals_.output == "json"; }
  /// `-o csv`: tables as CSV (RFC 4180 quoting; a header row, then one row per line).
  bool csv() const { return globals_.output == "csv"; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  std::istream& in() { return in_; }
  bool stdout_tty() const { return stdout_tty_; }
  bool stdin_tty() const { return stdin_tty_; }

  /// ConfigSources from the global flags.
  ConfigSources Sources() const;
  StatusOr<ResolvedConfig> Config();
  StatusOr<Client> MakeClient();
  /// Requests go through `transport` instead of libcurl (Options::transport): the seam CLI tests
  /// run commands in process with, against bai/mocks/mock_transport.h (ADR 25).
  void set_transport(std::shared_ptr<Transport> transport) { transport_ = std::move(transport); }

 private:
  std::ostream& out_;
  std::ostream& err_;
  std::istream& in_;
  bool stdout_tty_;
  bool stdin_tty_;
  GlobalOptions globals_;
  std::optional<ResolvedConfig> config_;
  std::shared_ptr<Transport> transport_;
};

/// The problem's per-field `data` as "  field: why" lines ("" when it has none).
std::string FieldErrors(ErrorInfo const& info);
/// Prints `status` as "error: …" (and the problem details with -o json) on stderr and returns
/// the exit code of a general command (DECISIONS.md "CLI").
/// The `error` object of `-o json` output: code, message, and the problem's HTTP status, type,
/// title, msg, data (field errors) and request id when it has them. One shape for every command.
nlohmann::json ErrorJson(Status const& status);
/// `explain_routes`: a route an older Backend.AI lacks (404 url-not-found) is reported as a
/// command this server does not serve (exit 1); `bai api`, which shows the server's own answer,
/// passes false.
int ReportError(Context& ctx, Status const& status, bool explain_routes = true);

/// One line read from the terminal without echo after `prompt` (on stderr), or from piped
/// stdin without one; trailing CR and spaces dropped; nullopt at the end of input.
std::optional<std::string> ReadSecret(Context& ctx, std::string const& prompt);

}  // namespace bai::cli
