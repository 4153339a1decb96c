// SPDX-License-Identifier: Apache-2.0
#pragma once
// The terminal stream `/stream/session/{id}/pty` (PROTOCOL.md §5.7): JSON text frames, bytes in
// Base64. The same frames travel client → manager → agent → kernel runner and back unchanged.
// bai's command stream `/stream/session/{id}/exec` (`bai exec` without a terminal: pipes, not a
// pty) uses the same frames and two more: `err` (the command's stderr; `out` is its stdout) and
// `eof` (the client's stdin has ended).

#include "bai/export.h"
#include "bai/status.h"

#include <string>
#include <string_view>

namespace bai::protocol {

struct PtyFrame {
  enum class Type {
    kStdin,    ///< client → kernel: `{"type":"stdin","chars":"<base64>"}`
    kResize,   ///< `{"type":"resize","rows":R,"cols":C}`
    kPing,     ///< `{"type":"ping"}`: keeps the session from idling out
    kRestart,  ///< `{"type":"restart"}`: a fresh shell on the same terminal (bai's meaning)
    kOut,      ///< kernel → client: `{"type":"out","data":"<base64>"}`
    kExit,     ///< bai's: `{"type":"exit","code":N}`, the shell ended with N; the stream closes
    kError,    ///< `{"type":"error","data":"<text>"}`
    kErr,      ///< exec stream, kernel → client: `{"type":"err","data":"<base64>"}` (stderr)
    kEof,      ///< exec stream, client → kernel: `{"type":"eof"}`, stdin ends
  };
  Type type = Type::kPing;
  std::string data;  ///< kStdin, kOut, kErr: the bytes; kError: the text
  int rows = 0;      ///< kResize
  int cols = 0;      ///< kResize
  int code = 0;      ///< kExit
};

BAI_EXPORT std::string EncodePtyFrame(PtyFrame const& frame);
/// Refuses frames that are not JSON objects, of an unknown type, with bad Base64, or a resize
/// outside 1..10000.
BAI_EXPORT StatusOr<PtyFrame> DecodePtyFrame(std::string_view text);

}  // namespace bai::protocol
