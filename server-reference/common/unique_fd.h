// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <unistd.h>

namespace bai::server {

/// A file descriptor closed when it goes out of scope (-1: none).
struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(UniqueFd const&) = delete;
  UniqueFd& operator=(UniqueFd const&) = delete;
  ~UniqueFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace bai::server
