#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The SDK's layers include only downwards (libbai/README.md):
#   libbai/util/      → bai/status.h only
#   libbai/protocol/, include/bai/protocol/ → util/ and the protocol headers, never internal/
# Prints each include that breaks the rule and exits 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
report() {
  echo "layer violation: $1" >&2
  bad=1
}
while IFS= read -r line; do
  report "$line (util/ includes only bai/status.h)"
done < <(git grep -n -E '#include "(libbai/|bai/)' -- 'libbai/util/' | grep -v '"bai/status.h"' |
  grep -v -E '#include "libbai/util/' || true)
while IFS= read -r line; do
  report "$line (protocol must not include internal/)"
done < <(git grep -n '#include "libbai/internal/' -- 'libbai/protocol/' 'include/bai/protocol/' || true)
exit "$bad"
