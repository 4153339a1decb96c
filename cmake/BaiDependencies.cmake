# SPDX-License-Identifier: Apache-2.0
# Every third-party package is found here, and only here; the rest of the tree links the stable
# imported names below. All of them come from Debian packages (scripts/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(CURL 7.88 REQUIRED)
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
pkg_check_modules(sodium REQUIRED IMPORTED_TARGET libsodium)
# The SDK's WebSocket client (libbai/internal/lws_websocket.cc only).
pkg_check_modules(libwebsockets REQUIRED IMPORTED_TARGET libwebsockets>=4.1)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(tomlplusplus 3.3 REQUIRED)
# toml++ as headers (its implementation compiled into the two config readers): bai then loads no
# C++ library but libstdc++, which the CLI links statically (cli/CMakeLists.txt): its start-up
# is mostly the dynamic loader resolving libstdc++'s symbols (issue 43, item 14).
add_library(bai_toml INTERFACE)
target_include_directories(bai_toml SYSTEM INTERFACE
  $<TARGET_PROPERTY:tomlplusplus::tomlplusplus,INTERFACE_INCLUDE_DIRECTORIES>)
target_compile_definitions(bai_toml INTERFACE TOML_HEADER_ONLY=1)

if(BAI_BUILD_CLI OR BAI_BUILD_SERVER)
  find_package(CLI11 2.1 REQUIRED)
endif()

if(BAI_BUILD_SERVER OR BAI_BUILD_TESTS)
  # Debian's 1.81 headers, never the default 1.74 (DECISIONS.md); Beast and Asio are header-only
  # (the test HTTP server takes Beast's reason phrases).
  find_package(Boost 1.81.0 EXACT REQUIRED CONFIG)
endif()

if(BAI_BUILD_SERVER)
  find_package(SQLite3 3.40 REQUIRED)
  # The manager's PostgreSQL backend (bai-manager --database postgresql://…).
  pkg_check_modules(libpq REQUIRED IMPORTED_TARGET libpq>=15)
  pkg_check_modules(uuid REQUIRED IMPORTED_TARGET uuid)
  # The storage proxy's directory downloads (zip).
  pkg_check_modules(libarchive REQUIRED IMPORTED_TARGET libarchive)
  # Session templates are written in YAML or JSON (libyaml reads them).
  pkg_check_modules(yaml REQUIRED IMPORTED_TARGET yaml-0.1)
  # The daemons' logs: sinks and size rotation (common/log).
  find_package(spdlog 1.10 REQUIRED)
  # bai-manager's allocator (ADR 6): not under sanitizers, which bring their own.
  if(NOT BAI_SANITIZERS)
    pkg_check_modules(jemalloc IMPORTED_TARGET jemalloc)
    if(NOT jemalloc_FOUND)
      message(STATUS "jemalloc not found (Debian: libjemalloc-dev): bai-manager uses glibc malloc")
    endif()
  endif()
endif()

if(BAI_BUILD_TESTS)
  find_package(GTest 1.12 REQUIRED)
endif()

if(BAI_BUILD_BENCH)
  find_package(benchmark 1.7 REQUIRED)
endif()
