# Find SuiteSparse components (Debian's 5.x ships no CMake package) and make imported
# targets SuiteSparse::<component>, e.g. SuiteSparse::cholmod.
find_path(SuiteSparse_INCLUDE_DIR NAMES cholmod.h SuiteSparse_config.h
          PATH_SUFFIXES suitesparse)
find_library(SuiteSparse_config_LIBRARY NAMES suitesparseconfig)

set(_ss_vars SuiteSparse_INCLUDE_DIR SuiteSparse_config_LIBRARY)
foreach(comp IN LISTS SuiteSparse_FIND_COMPONENTS)
  find_library(SuiteSparse_${comp}_LIBRARY NAMES ${comp})
  if(SuiteSparse_${comp}_LIBRARY)
    set(SuiteSparse_${comp}_FOUND TRUE)
  endif()
  if(SuiteSparse_FIND_REQUIRED_${comp})
    list(APPEND _ss_vars SuiteSparse_${comp}_LIBRARY)
  endif()
endforeach()

if(SuiteSparse_INCLUDE_DIR AND EXISTS "${SuiteSparse_INCLUDE_DIR}/SuiteSparse_config.h")
  file(STRINGS "${SuiteSparse_INCLUDE_DIR}/SuiteSparse_config.h" _ss_ver
       REGEX "#define SUITESPARSE_(MAIN|SUB)_VERSION +[0-9]+")
  string(REGEX REPLACE ".*MAIN_VERSION +([0-9]+).*SUB_VERSION +([0-9]+).*" "\\1.\\2"
         SuiteSparse_VERSION "${_ss_ver}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SuiteSparse REQUIRED_VARS ${_ss_vars}
  VERSION_VAR SuiteSparse_VERSION HANDLE_COMPONENTS)

if(SuiteSparse_FOUND AND NOT TARGET SuiteSparse::config)
  add_library(SuiteSparse::config UNKNOWN IMPORTED)
  set_target_properties(SuiteSparse::config PROPERTIES
    IMPORTED_LOCATION "${SuiteSparse_config_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SuiteSparse_INCLUDE_DIR}")
  foreach(comp IN LISTS SuiteSparse_FIND_COMPONENTS)
    if(SuiteSparse_${comp}_FOUND)
      add_library(SuiteSparse::${comp} UNKNOWN IMPORTED)
      set_target_properties(SuiteSparse::${comp} PROPERTIES
        IMPORTED_LOCATION "${SuiteSparse_${comp}_LIBRARY}"
        INTERFACE_LINK_LIBRARIES SuiteSparse::config)
    endif()
  endforeach()
endif()
mark_as_advanced(SuiteSparse_INCLUDE_DIR SuiteSparse_config_LIBRARY)
