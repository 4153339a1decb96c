# SPDX-License-Identifier: Apache-2.0
# What an operator installs beside the SDK (issue 47): every daemon, the kernel runner, the GPU
# shim, the web console, the services' systemd units and a configuration each that starts on one
# host, in one component per Debian package (cmake/BaiDeb.cmake):
#   cli        bin/bai, the docs
#   manager    bin/bai-manager              etc/bai/manager.toml    bai-manager.service
#   agent      bin/bai-agent, bin/bai-kernel-runner, lib/bai/libbai-gpushim.so
#                                           etc/bai/agent.toml      bai-agent.service
#   storage    bin/bai-storage              etc/bai/storage.toml    bai-storage.service
#   webserver  bin/bai-webserver, share/bai/console
#                                           etc/bai/webserver.toml  bai-webserver.service
# The units and configurations name paths under the prefix, so they are written at install time
# (cmake/BaiInstallService.cmake): `cmake --install build --prefix X` gets units that start X's
# binaries with X's configuration. The configuration directory is /etc for the prefix /usr and
# PREFIX/etc otherwise (GNUInstallDirs' rule); units go to PREFIX/lib/systemd/system (systemd
# reads /usr/lib and /usr/local/lib). A configuration already there is never overwritten.

install(TARGETS bai_manager RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT manager)
install(TARGETS bai_agent bai_kernel_runner RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT agent)
install(TARGETS bai_gpushim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/bai COMPONENT agent)
install(TARGETS bai_storage RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT storage)
install(TARGETS bai_webserver RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT webserver)
if(TARGET console)
  install(DIRECTORY "${PROJECT_BINARY_DIR}/console/" DESTINATION ${CMAKE_INSTALL_DATADIR}/bai/console
    COMPONENT webserver)
endif()
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/docs/operations.md"
  "${PROJECT_SOURCE_DIR}/docs/console.md" "${PROJECT_SOURCE_DIR}/docs/gpu-sharing.md"
  "${PROJECT_SOURCE_DIR}/docs/conformance.md"
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT cli)

foreach(service manager agent storage webserver)
  # A lab's several hosts: the examples (packaging/etc/bai), beside the docs.
  install(FILES "${PROJECT_SOURCE_DIR}/packaging/etc/bai/${service}.toml"
    DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT ${service})
  install(CODE "
    set(BAI_SERVICE ${service})
    set(BAI_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
    set(BAI_BINDIR_REL \"${CMAKE_INSTALL_BINDIR}\")
    set(BAI_LIBDIR_REL \"${CMAKE_INSTALL_LIBDIR}\")
    set(BAI_DATADIR_REL \"${CMAKE_INSTALL_DATADIR}\")
    set(BAI_DOCDIR_REL \"${CMAKE_INSTALL_DOCDIR}\")
    include(\"${PROJECT_SOURCE_DIR}/cmake/BaiInstallService.cmake\")"
    COMPONENT ${service})
endforeach()
