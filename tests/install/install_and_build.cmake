# ctest script: install the build tree into a prefix, then configure, build and run an outside
# project that finds it with find_package(fem). Variables: BUILD_DIR, SOURCE_DIR, WORK_DIR,
# GENERATOR, PROJECT (the outside project's folder), RUN (its executable) and SANITIZE (the
# build's FEM_SANITIZE: the outside project is instrumented the same way, as ASan wants its
# runtime first in the executable).
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
set(sanitizer_flags)
if(SANITIZE)
  set(sanitizer_flags "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${PROJECT}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
                        "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release ${sanitizer_flags}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the outside project failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the outside project failed: ${rc}")
endif()
execute_process(COMMAND "${WORK_DIR}/build/${RUN}" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "running the outside project failed: ${rc}")
endif()
