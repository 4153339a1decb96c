#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then builds a separate C++17 consumer against
# it twice: with find_package(bai) and with pkg-config.
# Usage: run.sh BUILD_DIR WORK_DIR [SANITIZERS]   (sanitized trees need sanitized consumers)
set -euo pipefail
build=$1
work=$2
flags=""
[[ -n "${3:-}" ]] && flags="-fsanitize=$3"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$here/consumer" -B "$work/cmake-build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$work/cmake-build/consumer"

libdir=$(dirname "$(find "$prefix" -name bai.pc | head -1)")
export PKG_CONFIG_PATH="$libdir"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Werror $flags "$here/consumer/main.cc" -o "$work/consumer-pc" $(pkg-config --cflags --libs bai)
LD_LIBRARY_PATH="$libdir/.." "$work/consumer-pc"
echo "install test: find_package(bai) and pkg-config consumers built and ran"
