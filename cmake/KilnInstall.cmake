# `cmake --install`: the runtime and compiler libraries with their headers,
# the tools, and a package configuration for find_package(Kiln).
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

install(TARGETS kiln_runtime kiln_compiler
        EXPORT KilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kiln-compile kiln-run kiln-opt
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# kiln/Config.h holds this build's paths and stays private.
install(FILES
          ${PROJECT_SOURCE_DIR}/include/kiln/abi.h
          ${PROJECT_SOURCE_DIR}/include/kiln/runtime.h
          ${PROJECT_SOURCE_DIR}/include/kiln/compiler.h
          ${PROJECT_SOURCE_DIR}/include/kiln/compiler.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)

install(EXPORT KilnTargets
        NAMESPACE Kiln::
        DESTINATION ${KILN_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/KilnConfig.cmake
  INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/KilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
          ${PROJECT_BINARY_DIR}/cmake/KilnConfig.cmake
          ${PROJECT_BINARY_DIR}/cmake/KilnConfigVersion.cmake
        DESTINATION ${KILN_INSTALL_CMAKEDIR})
