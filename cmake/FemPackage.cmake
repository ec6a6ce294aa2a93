# The installed package: find_package(fem REQUIRED) then link fem::shared, fem::solve, ...
include(CMakePackageConfigHelpers)
set(FEM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/fem)

get_property(FEM_INSTALLED_LIBRARIES GLOBAL PROPERTY FEM_LIBRARIES)
install(EXPORT femTargets NAMESPACE fem:: DESTINATION ${FEM_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/femConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/femConfig.cmake INSTALL_DESTINATION ${FEM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/femConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/femConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/femConfigVersion.cmake
        DESTINATION ${FEM_INSTALL_CMAKEDIR})
