# Helpers that give every one of our targets the same flags, so a library's CMakeLists.txt
# only lists its sources and dependencies.
include(GNUInstallDirs)

# Installed libraries find each other next to themselves, executables in ../lib.
set(CMAKE_INSTALL_RPATH "$ORIGIN;$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

if(FEM_SANITIZE)
  set(_fem_san "${FEM_SANITIZE}")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=${_fem_san}>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-g>)
  if(FEM_SANITIZE STREQUAL "undefined")
    add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=all>)
  endif()
  add_link_options(-fsanitize=${_fem_san})
endif()

# The instruction set: assembly and the host hash table vectorise with AVX2/FMA.
if(FEM_ARCH AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-march=${FEM_ARCH}>)
  if(FEM_ENABLE_CUDA_RESOLVED)
    add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-march=${FEM_ARCH}>)
  endif()
endif()

# Warnings for our own code only (third-party headers come in as SYSTEM).
function(fem_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-psabi>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --expt-relaxed-constexpr>)
endfunction()

# fem_add_library(<name> SOURCES ... [PUBLIC deps...] [PRIVATE deps...]
#                 INCLUDE_DIR <build include root>
#                 HEADER_DIR <dir to install> HEADER_DESTINATION <path under include/>)
# makes libfem_<name>.so, the target fem_<name> and its alias fem::<name>.
function(fem_add_library name)
  cmake_parse_arguments(ARG "" "INCLUDE_DIR;HEADER_DIR;HEADER_DESTINATION" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  set(target fem_${name})
  add_library(${target} SHARED ${ARG_SOURCES})
  add_library(fem::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}
    CUDA_SEPARABLE_COMPILATION OFF)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${ARG_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE})
  # A library that secretly needs another fails at link time, not at load time.
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  fem_target_warnings(${target})
  install(TARGETS ${target} EXPORT femTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(ARG_HEADER_DIR)
    install(DIRECTORY ${ARG_HEADER_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${ARG_HEADER_DESTINATION}
            FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh")
  endif()
  set_property(GLOBAL APPEND PROPERTY FEM_LIBRARIES ${name})
endfunction()

# fem_add_test(<name> SOURCES ... LIBS ... [LABELS ...]): a GoogleTest executable whose
# tests are registered one by one with ctest.
function(fem_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  fem_target_warnings(${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
endfunction()
