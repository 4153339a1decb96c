# SPDX-License-Identifier: Apache-2.0
# Debian packages (`make deb`, issue 47) with CPack's DEB generator, one per install component
# (cmake/BaiPackaging.cmake, cmake/BaiInstall.cmake): the same install rules as
# `cmake --install`, so a package holds exactly what an install puts under /usr. Dependencies
# on shared libraries come from Debian's own dpkg-shlibdeps; the rest (runc for the agent, …)
# are declared here. Maintainer scripts (packaging/deb/) enable and start the services as
# Debian's dh_installsystemd does, and the configurations under /etc/bai are conffiles.
# Why not dpkg-buildpackage: a debian/ directory would restate every install rule in a second
# place; CPack reads them from here.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME bai)
set(CPACK_PACKAGE_VENDOR "bai")
set(CPACK_PACKAGE_CONTACT "bai developers <bai@localhost>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/deb")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES TRUE)  # the packages without the build's debug info
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
# The SDK's runtime package is named by its soname (Debian policy 8.1: libbai.so.0.1).
set(bai_soname "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
set(CPACK_COMPONENTS_ALL cli libbai dev manager agent storage webserver)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME bai)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_CLI_DESCRIPTION "Backend.AI-compatible command-line client\n bai starts and \
watches sessions, moves files to and from virtual folders and administers a\n Backend.AI or bai cluster.")
set(CPACK_DEBIAN_LIBBAI_PACKAGE_NAME "libbai${bai_soname}")
set(CPACK_DEBIAN_LIBBAI_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIBBAI_DESCRIPTION "Backend.AI client SDK (shared library)\n libbai signs and \
sends Backend.AI's REST, GraphQL, WebSocket and SSE requests.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libbai-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION "Backend.AI client SDK (headers, CMake package, pkg-config)")
set(CPACK_COMPONENT_DEV_DEPENDS libbai)
set(CPACK_DEBIAN_MANAGER_PACKAGE_NAME bai-manager)
set(CPACK_COMPONENT_MANAGER_DESCRIPTION "bai manager: the Backend.AI-compatible control plane\n \
Sessions, scheduling, users, folders and the GraphQL and REST APIs (SQLite or PostgreSQL).")
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME bai-agent)
set(CPACK_COMPONENT_AGENT_DESCRIPTION "bai agent: runs sessions' kernels in runc containers\n \
With cgroup limits, registry images and the fractional GPU shim.")
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "runc, iproute2, tar, ca-certificates")
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "nftables, python3, jupyter-notebook")
set(CPACK_DEBIAN_STORAGE_PACKAGE_NAME bai-storage)
set(CPACK_COMPONENT_STORAGE_DESCRIPTION "bai storage proxy: virtual folders on a file server")
set(CPACK_DEBIAN_WEBSERVER_PACKAGE_NAME bai-webserver)
set(CPACK_COMPONENT_WEBSERVER_DESCRIPTION "bai web console and session-mode login")
set(CPACK_DEBIAN_WEBSERVER_PACKAGE_RECOMMENDS bai-manager)

foreach(service manager agent storage webserver)
  string(TOUPPER ${service} up)
  set(control "${PROJECT_BINARY_DIR}/deb-control/${service}")
  file(MAKE_DIRECTORY "${control}")
  file(WRITE "${control}/conffiles" "/etc/bai/${service}.toml\n")
  foreach(script postinst prerm postrm)
    configure_file("${PROJECT_SOURCE_DIR}/packaging/deb/${script}.in" "${control}/${script}"
      @ONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
      WORLD_READ WORLD_EXECUTE)
  endforeach()
  set(CPACK_DEBIAN_${up}_PACKAGE_CONTROL_EXTRA
    "${control}/conffiles;${control}/postinst;${control}/prerm;${control}/postrm")
  set(CPACK_DEBIAN_${up}_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
endforeach()

include(CPack)
