// SPDX-License-Identifier: Apache-2.0
// The start-up baseline: prints one line and exits, but is linked (--no-as-needed) against the
// same shared libraries as `bai`, so the dynamic loader does the same work.
#include <cstdio>

int main() {
  std::puts("hello");
  return 0;
}
