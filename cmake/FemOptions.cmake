# Options and third-party dependencies, found once here so every folder sees the same targets.
#
# Optional dependencies follow "use if found, required if asked for": AUTO (the default) uses
# the dependency when it is found, ON makes it required, OFF disables it.

include(CheckLanguage)
include(FeatureSummary)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

set(FEM_ENABLE_CUDA AUTO CACHE STRING "Build the CUDA kernels of libfem_gpu (AUTO: when nvcc is found)")
set(FEM_ENABLE_SUITESPARSE AUTO CACHE STRING "CHOLMOD, UMFPACK and KLU backends (AUTO|ON|OFF)")
set(FEM_ENABLE_METIS AUTO CACHE STRING "METIS nested-dissection ordering (AUTO|ON|OFF)")
set(FEM_ENABLE_PETSC AUTO CACHE STRING "libfem_dist: distributed assembly and solves on MPI + PETSc (AUTO|ON|OFF)")
set(FEM_ENABLE_PYTHON AUTO CACHE STRING "The Python module (import fem): pybind11, NumPy (AUTO|ON|OFF)")
set(FEM_SANITIZE "" CACHE STRING "Sanitizer for our targets: address, undefined or thread")
set(FEM_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures (Ampere sm_80, Hopper sm_90)")
set(FEM_ARCH "x86-64-v3" CACHE STRING
    "Instruction set for our targets (-march=...): x86-64-v3 = AVX2 + FMA, native, or empty for the compiler's default")
option(FEM_BUILD_TESTS "Build the GoogleTest suites" ON)
option(FEM_BUILD_BENCHMARKS "Build the Google Benchmark programs" ON)
option(FEM_BUILD_APPS "Build the fem driver executable" ON)
option(FEM_ENABLE_FUZZING "Build libFuzzer targets (needs clang)" OFF)
set_property(CACHE FEM_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE FEM_ENABLE_SUITESPARSE PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE FEM_ENABLE_METIS PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE FEM_ENABLE_PETSC PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE FEM_ENABLE_PYTHON PROPERTY STRINGS AUTO ON OFF)
set_property(CACHE FEM_SANITIZE PROPERTY STRINGS "" address undefined thread)

if(FEM_SANITIZE AND NOT FEM_SANITIZE MATCHES "^(address|undefined|thread)$")
  message(FATAL_ERROR "FEM_SANITIZE must be address, undefined or thread, not '${FEM_SANITIZE}'")
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
# Benchmarks and Release builds are -O3 -DNDEBUG (STYLE.md).
set(CMAKE_CXX_FLAGS_RELEASE "-O3 -DNDEBUG")

# Resolve an AUTO|ON|OFF option against whether the dependency was found.
function(fem_resolve_option option found what)
  if(${option} STREQUAL "OFF")
    set(${option}_RESOLVED OFF PARENT_SCOPE)
  elseif(found)
    set(${option}_RESOLVED ON PARENT_SCOPE)
  elseif(${option} STREQUAL "ON")
    message(FATAL_ERROR "${option}=ON but ${what} was not found "
                        "(Debian: apt-get install ${ARGN}); or configure with -D${option}=OFF")
  else()
    set(${option}_RESOLVED OFF PARENT_SCOPE)
  endif()
endfunction()

# --- always required ----------------------------------------------------------------------
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
# Spectra (header-only, on Eigen): the Lanczos of fem/eigen. Only its headers, privately: the
# installed package needs nothing of it.
find_path(FEM_SPECTRA_INCLUDE_DIR Spectra/SymGEigsShiftSolver.h)
if(NOT FEM_SPECTRA_INCLUDE_DIR)
  message(FATAL_ERROR "Spectra not found: scripts/install-deps.sh installs it (Debian libspectra-dev)")
endif()
find_package(OpenMP REQUIRED COMPONENTS CXX)
set_package_properties(fmt PROPERTIES TYPE REQUIRED PURPOSE "error messages and formatting")
set_package_properties(Eigen3 PROPERTIES TYPE REQUIRED PURPOSE "Eigen solvers (always available)")
set_package_properties(OpenMP PROPERTIES TYPE REQUIRED PURPOSE "threaded assembly and host hash table")

# --- optional -----------------------------------------------------------------------------
if(NOT FEM_ENABLE_SUITESPARSE STREQUAL "OFF")
  find_package(SuiteSparse COMPONENTS cholmod umfpack klu amd colamd camd ccolamd btf)
endif()
fem_resolve_option(FEM_ENABLE_SUITESPARSE "${SuiteSparse_FOUND}" "SuiteSparse" libsuitesparse-dev)

if(NOT FEM_ENABLE_METIS STREQUAL "OFF")
  find_package(METIS)
endif()
fem_resolve_option(FEM_ENABLE_METIS "${METIS_FOUND}" "METIS" libmetis-dev)

# The distributed path needs MPI (C bindings only: the C++ ones are deprecated), PETSc (its
# pkg-config file does not list MPI, so both are linked) and METIS for the partition.
set(_fem_petsc_found OFF)
if(NOT FEM_ENABLE_PETSC STREQUAL "OFF")
  find_package(MPI COMPONENTS C)
  find_package(PkgConfig)
  if(PkgConfig_FOUND)
    pkg_check_modules(PETSc IMPORTED_TARGET PETSc>=3.18)
    pkg_check_modules(SLEPc IMPORTED_TARGET slepc>=3.18)
  endif()
  if(MPI_C_FOUND AND PETSc_FOUND AND FEM_ENABLE_METIS_RESOLVED)
    set(_fem_petsc_found ON)
  endif()
endif()
fem_resolve_option(FEM_ENABLE_PETSC "${_fem_petsc_found}" "MPI, PETSc (≥ 3.18) and METIS"
                   libpetsc-real-dev openmpi-bin libopenmpi-dev libmetis-dev)

# The Python module is built for Debian's interpreter, whose NumPy and pybind11 come from the
# archive; the python3 first on a developer's PATH may be another one (without NumPy).
# Under a sanitizer the module would need the sanitizer's runtime preloaded into the interpreter:
# AUTO leaves it out of sanitizer builds.
set(_fem_python_found OFF)
if(FEM_SANITIZE AND FEM_ENABLE_PYTHON STREQUAL "AUTO")
  message(STATUS "FEM_SANITIZE=${FEM_SANITIZE}: the Python module is not built (FEM_ENABLE_PYTHON=AUTO)")
elseif(NOT FEM_ENABLE_PYTHON STREQUAL "OFF")
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The Python interpreter of the fem module")
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module NumPy)
  if(Python3_FOUND AND Python3_NumPy_FOUND)
    find_package(pybind11 2.10 CONFIG)
    # DLPack's header: how fem.HashTable takes PyTorch tensors, CUDA ones in place.
    find_path(FEM_DLPACK_INCLUDE_DIR dlpack/dlpack.h)
    if(pybind11_FOUND AND FEM_DLPACK_INCLUDE_DIR)
      set(_fem_python_found ON)
    endif()
  endif()
endif()
fem_resolve_option(FEM_ENABLE_PYTHON "${_fem_python_found}" "Python 3 with NumPy, pybind11 and DLPack"
                   python3-dev python3-numpy pybind11-dev libdlpack-dev)

set(_fem_nvcc_found OFF)
if(NOT FEM_ENABLE_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_fem_nvcc_found ON)
  endif()
endif()
fem_resolve_option(FEM_ENABLE_CUDA "${_fem_nvcc_found}" "the CUDA compiler (nvcc)" nvidia-cuda-toolkit)
if(FEM_ENABLE_CUDA_RESOLVED)
  set(CMAKE_CUDA_ARCHITECTURES ${FEM_CUDA_ARCHITECTURES})
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc 13's C++20 flag: tell it.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
endif()

if(FEM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(FEM_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

add_feature_info(CUDA FEM_ENABLE_CUDA_RESOLVED "GPU hash table and assembly (sm ${FEM_CUDA_ARCHITECTURES})")
add_feature_info(SuiteSparse FEM_ENABLE_SUITESPARSE_RESOLVED "CHOLMOD, UMFPACK and KLU backends")
add_feature_info(METIS FEM_ENABLE_METIS_RESOLVED "nested-dissection ordering, mesh partitions")
add_feature_info(PETSc FEM_ENABLE_PETSC_RESOLVED "libfem_dist: MPI + PETSc (MUMPS, GAMG, hypre)")
add_feature_info(Python FEM_ENABLE_PYTHON_RESOLVED "the Python module (import fem) for ${Python3_EXECUTABLE}")
add_feature_info(Tests FEM_BUILD_TESTS "GoogleTest suites registered with ctest")
add_feature_info(Benchmarks FEM_BUILD_BENCHMARKS "Google Benchmark programs in bench/")
add_feature_info(Apps FEM_BUILD_APPS "the fem driver executable")

function(fem_feature_summary)
  message(STATUS "")
  message(STATUS "fem ${PROJECT_VERSION}: ${CMAKE_BUILD_TYPE} build, ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  message(STATUS "  instruction set: ${FEM_ARCH}")
  if(FEM_SANITIZE)
    message(STATUS "  sanitizer: ${FEM_SANITIZE}")
  endif()
  feature_summary(WHAT ENABLED_FEATURES DISABLED_FEATURES PACKAGES_FOUND PACKAGES_NOT_FOUND
                  INCLUDE_QUIET_PACKAGES DESCRIPTION "Feature summary:")
endfunction()
