# cmake --install: the daemon, the CLI, the C libraries (the client and the embedded engine)
# and their headers, the systemd units and their sysusers/tmpfiles entries, the default
# config, and the docs.
include(GNUInstallDirs)
set(LLMD_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE PATH "systemd unit directory (relative: under the prefix)")

install(TARGETS llmd llmctl llmd-mkmodel RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS llmd_c llmd_engine_c LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/llmd/client.h include/llmd/llmd.h include/llmd/llmd_engine.h include/llmd/result.h
        include/llmd/status.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/llmd)

# The unit names /usr/bin/llmd and /etc/llmd; point it at where this install puts them (the
# prefix is only known at install time: cmake --install --prefix).
install(FILES packaging/systemd/llmd.service packaging/systemd/llmd.socket DESTINATION ${LLMD_SYSTEMD_UNIT_DIR})
install(CODE "
  set(unit \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${LLMD_SYSTEMD_UNIT_DIR}/llmd.service\")
  if(IS_ABSOLUTE \"${LLMD_SYSTEMD_UNIT_DIR}\")
    set(unit \"\$ENV{DESTDIR}${LLMD_SYSTEMD_UNIT_DIR}/llmd.service\")
  endif()
  set(etc \"${CMAKE_INSTALL_SYSCONFDIR}\")
  if(NOT IS_ABSOLUTE \"\${etc}\")
    set(etc \"\${CMAKE_INSTALL_PREFIX}/\${etc}\")
  endif()
  file(READ \"\${unit}\" text)
  string(REPLACE \"/usr/bin/llmd\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/llmd\" text \"\${text}\")
  string(REPLACE \"/etc/llmd/\" \"\${etc}/llmd/\" text \"\${text}\")
  file(WRITE \"\${unit}\" \"\${text}\")
")
install(FILES packaging/systemd/llmd.sysusers DESTINATION lib/sysusers.d RENAME llmd.conf)
install(FILES packaging/systemd/llmd.tmpfiles DESTINATION lib/tmpfiles.d RENAME llmd.conf)
install(FILES packaging/systemd/llmd.toml DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/llmd)
install(FILES README.md docs/protocol.md docs/config.md docs/security.md docs/benchmarks.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
