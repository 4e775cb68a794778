# Install tree: headers, the shared library, tools, a pkg-config file and a
# CMake package config (find_package(bitmover) -> bitmover::bitmover).
include(CMakePackageConfigHelpers)
install(TARGETS bitmover EXPORT bitmoverTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/bitmover
    FILES_MATCHING PATTERN "*.h")
install(EXPORT bitmoverTargets NAMESPACE bitmover::
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/bitmover)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/bitmoverConfig.cmake.in
    ${CMAKE_BINARY_DIR}/bitmoverConfig.cmake
    INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/bitmover)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/bitmoverConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/bitmoverConfig.cmake
    ${CMAKE_BINARY_DIR}/bitmoverConfigVersion.cmake
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/bitmover)
# The .pc file finds the prefix relative to itself, so the tree can be moved
# or installed with cmake --install --prefix.
file(RELATIVE_PATH BM_PC_PREFIX_REL ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
    ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" BM_PC_PREFIX_REL "${BM_PC_PREFIX_REL}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/bitmover.pc.in ${CMAKE_BINARY_DIR}/bitmover.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/bitmover.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
