# SPDX-License-Identifier: Apache-2.0
# Install rules: headers, libbai.so, CMake package (find_package(bai)) and bai.pc.
include(CMakePackageConfigHelpers)

# Components: libbai (the shared library), dev (headers, the CMake package, bai.pc, the .so link);
# the CLI's and the daemons' in cli/CMakeLists.txt and cmake/BaiInstall.cmake.
install(TARGETS libbai EXPORT baiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT libbai NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT libbai)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/bai" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(FILES "${PROJECT_BINARY_DIR}/include/bai/version.h"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/bai COMPONENT dev)

set(BAI_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/bai)
install(EXPORT baiTargets NAMESPACE bai:: DESTINATION ${BAI_CMAKE_DIR} COMPONENT dev)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/baiConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/baiConfig.cmake" INSTALL_DESTINATION ${BAI_CMAKE_DIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/baiConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/baiConfig.cmake" "${PROJECT_BINARY_DIR}/baiConfigVersion.cmake"
  DESTINATION ${BAI_CMAKE_DIR} COMPONENT dev)

# bai.pc finds its prefix relative to itself, so `cmake --install --prefix X` works anywhere.
file(RELATIVE_PATH BAI_PC_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
configure_file("${PROJECT_SOURCE_DIR}/cmake/bai.pc.in" "${PROJECT_BINARY_DIR}/bai.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/bai.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT dev)

if(BAI_BUILD_SERVER AND BAI_BUILD_CLI)
  include(BaiInstall)
  include(BaiDeb)
endif()
