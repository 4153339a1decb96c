// SPDX-License-Identifier: Apache-2.0
#pragma once
// The wire formats of a running session's files (PROTOCOL.md §5.6): the listing of
// `GET /session/{id}/files`, the multipart bodies of `/upload` (form-data) and `/download`
// (mixed, one tar archive per path), the tar archives themselves, and the limits. One codec:
// the SDK encodes uploads and decodes listings and archives; the manager, the agent and the
// kernel runner (which writes the archives inside the container) use the same functions. The
// implementation needs only nlohmann-json, so the static runner links it.

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::protocol {

/// Where a kernel's files live; paths in these requests are relative to it (or absolute under it).
inline constexpr char kSessionWorkDir[] = "/home/work";
/// `POST /session/{id}/upload`: at most this many parts, each smaller than 1 MiB (24.09's limits).
inline constexpr int kSessionUploadMaxFiles = 20;
inline constexpr std::int64_t kSessionUploadMaxFileBytes = (1 << 20) - 1;
/// `POST /session/{id}/download`: at most this many paths, all archives together at most this
/// many bytes; `download_single`: one file of at most this many bytes. (Larger data belongs in a
/// virtual folder.)
inline constexpr int kSessionDownloadMaxFiles = 5;
inline constexpr std::int64_t kSessionDownloadMaxBytes = 8 << 20;

/// One entry of a listing, as Backend.AI's kernel runner reports it.
struct SessionFile {
  std::string filename;
  std::string mode;  ///< as `ls -l` (Python's stat.filemode): "-rw-r--r--", "drwxr-xr-x"
  std::int64_t size = 0;
  double ctime = 0, mtime = 0, atime = 0;  ///< seconds since the epoch
};

/// The answer of `GET /session/{id}/files`: `files` travels as a JSON-encoded *string*.
struct SessionFileList {
  std::vector<SessionFile> files;
  std::string errors;   ///< what could not be read ("" when nothing)
  std::string abspath;  ///< the listed directory inside the kernel
};
/// The entries as a JSON array (text).
BAI_EXPORT std::string EncodeSessionFiles(std::vector<SessionFile> const& files);
BAI_EXPORT StatusOr<std::vector<SessionFile>> DecodeSessionFiles(std::string_view json_array);
BAI_EXPORT std::string EncodeSessionFileList(SessionFileList const& list);
BAI_EXPORT StatusOr<SessionFileList> DecodeSessionFileList(std::string_view body);

/// `st_mode` as `ls -l` writes it ("drwxr-xr-x", "-rwsr-x---", "lrwxrwxrwx").
BAI_EXPORT std::string FileModeString(std::uint32_t st_mode);

// --- tar (POSIX ustar, with pax records for long names) ----------------------------------------

enum class TarType { kFile, kDirectory, kSymlink };

struct TarMember {
  std::string name;  ///< relative, '/'-separated, no trailing '/'
  TarType type = TarType::kFile;
  std::uint32_t mode = 0644;  ///< permission bits
  std::int64_t mtime = 0;
  std::string link;  ///< a symlink's target
  std::string data;  ///< a file's contents (ReadTar fills it; TarHeader takes the size instead)
};

/// The header block(s) of `member` with `size` bytes of data to follow (a pax record first when
/// the name or link exceeds ustar's fields or the size its 8 GiB).
BAI_EXPORT std::string TarHeader(TarMember const& member, std::int64_t size);
/// The zeros that fill a member of `size` bytes to its 512-byte boundary.
BAI_EXPORT std::string TarPadding(std::int64_t size);
/// The end of an archive (two zero blocks).
BAI_EXPORT std::string TarEnd();
/// Every member of an archive (pax, GNU long names and ustar; hard links and devices are
/// skipped). An error for a damaged archive (bad checksum, cut short).
BAI_EXPORT StatusOr<std::vector<TarMember>> ReadTar(std::string_view archive);

// --- multipart bodies --------------------------------------------------------------------------

struct MultipartPart {
  std::string name;      ///< form-data field name ("src")
  std::string filename;  ///< form-data file name (here: the destination path)
  std::string content_type = "application/octet-stream";
  std::vector<std::pair<std::string, std::string>> headers;  ///< others, names lowercased
  std::string body;
};

/// A multipart body: form-data parts get a Content-Disposition from `name`/`filename` (with a
/// `filename*` for non-ASCII names); parts without a name get `headers` as given.
BAI_EXPORT std::string EncodeMultipart(std::vector<MultipartPart> const& parts,
                                       std::string const& boundary);
/// The parts of a multipart body; `content_type` is the request's header (its boundary). A
/// `filename*` (RFC 5987) wins over `filename`. 400 invalid-api-params when malformed.
BAI_EXPORT StatusOr<std::vector<MultipartPart>> DecodeMultipart(std::string_view content_type,
                                                                std::string_view body);

}  // namespace bai::protocol
