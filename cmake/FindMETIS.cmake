# Find METIS and make the imported target METIS::metis.
find_path(METIS_INCLUDE_DIR NAMES metis.h)
find_library(METIS_LIBRARY NAMES metis)
if(METIS_INCLUDE_DIR AND EXISTS "${METIS_INCLUDE_DIR}/metis.h")
  file(STRINGS "${METIS_INCLUDE_DIR}/metis.h" _metis_ver REGEX "#define METIS_VER_(MAJOR|MINOR|SUBMINOR) +[0-9]+")
  string(REGEX REPLACE ".*MAJOR +([0-9]+).*MINOR +([0-9]+).*SUBMINOR +([0-9]+).*" "\\1.\\2.\\3"
         METIS_VERSION "${_metis_ver}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(METIS REQUIRED_VARS METIS_LIBRARY METIS_INCLUDE_DIR
                                  VERSION_VAR METIS_VERSION)
if(METIS_FOUND AND NOT TARGET METIS::metis)
  add_library(METIS::metis UNKNOWN IMPORTED)
  set_target_properties(METIS::metis PROPERTIES IMPORTED_LOCATION "${METIS_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${METIS_INCLUDE_DIR}")
endif()
mark_as_advanced(METIS_INCLUDE_DIR METIS_LIBRARY)
