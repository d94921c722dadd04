# Install layout and the Debian package (cpack -G DEB in the build tree,
# or `cmake --build build --target package`): the binary, the systemd
# units and the cascade user (sysusers), an example config, the alert
# rules and the dashboard, and the operator's docs.
include(GNUInstallDirs)
install(TARGETS cascade RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES deploy/systemd/cascade-correlate.service
              deploy/systemd/cascade-act.service
              deploy/systemd/cascade-ingest-webhook.service
              deploy/systemd/cascade-ingest-log.service
              deploy/systemd/cascade-ingest-journal.service
              deploy/systemd/cascade-ingest-slurm.service
              deploy/systemd/cascade-ingest-k8s.service
              deploy/systemd/cascade-ingest-remote-write.service
              deploy/systemd/cascade-console.service
        DESTINATION lib/systemd/system)
install(FILES deploy/systemd/cascade.sysusers DESTINATION lib/sysusers.d
        RENAME cascade.conf)
install(FILES deploy/cascade.example.yaml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES deploy/prometheus/cascade.rules.yml
              deploy/prometheus/cascade.rules.test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cascade/prometheus)
install(FILES deploy/grafana/cascade.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cascade/grafana)
install(FILES README.md CHANGELOG.md docs/OPERATIONS.md docs/CONFIG.md docs/DEPLOY.md
              docs/ACTIONS.md docs/COLLECTORS.md docs/SECURITY.md docs/FORMATS.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cascade)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "cascade maintainers <cascade@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "incident correlation for GPU fleets: correlator, collectors, executor")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_LICENSE "Apache-2.0")
# the shared libraries the binary links, found by dpkg-shlibdeps
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
