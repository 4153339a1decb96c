# SPDX-License-Identifier: Apache-2.0
# Runs at install time (cmake/BaiInstall.cmake), once per service BAI_SERVICE: writes its systemd
# unit and, unless one is there already, its configuration, with the paths of the prefix being
# installed to (CMAKE_INSTALL_PREFIX here is `cmake --install --prefix`'s; DESTDIR is honoured).
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(BAI_SYSCONFDIR "/etc")
else()
  set(BAI_SYSCONFDIR "${prefix}/etc")
endif()
set(BAI_BINDIR "${prefix}/${BAI_BINDIR_REL}")
set(BAI_LIBDIR "${prefix}/${BAI_LIBDIR_REL}")
set(BAI_DATADIR "${prefix}/${BAI_DATADIR_REL}")
set(BAI_DOCDIR "${prefix}/${BAI_DOCDIR_REL}")

set(unit "$ENV{DESTDIR}${prefix}/lib/systemd/system/bai-${BAI_SERVICE}.service")
message(STATUS "Installing: ${unit}")
configure_file("${BAI_SOURCE_DIR}/packaging/systemd/bai-${BAI_SERVICE}.service.in" "${unit}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${unit}")

set(config "$ENV{DESTDIR}${BAI_SYSCONFDIR}/bai/${BAI_SERVICE}.toml")
if(EXISTS "${config}")
  message(STATUS "Up-to-date: ${config} (kept: an operator's configuration is never replaced)")
else()
  message(STATUS "Installing: ${config}")
  configure_file("${BAI_SOURCE_DIR}/packaging/defaults/${BAI_SERVICE}.toml.in" "${config}" @ONLY)
endif()
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${config}")
