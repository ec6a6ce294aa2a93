# ctest's gpu.assembly_kernels_use_no_local_memory: compile the device assembly for every CUDA
# architecture with ptxas's report, and check it with scripts/ptxas-report.py: no stack frame,
# no spills and at most 128 registers in any CellRows kernel (issue 20, item 6). Run as
#   cmake -DNVCC=... -DPYTHON=... -DSOURCE_DIR=... -DARCHS="80;90" -DWORK=... -P check_kernels.cmake
set(arch_flags "")
foreach(a ${ARCHS})
  list(APPEND arch_flags --generate-code=arch=compute_${a},code=sm_${a})
endforeach()
execute_process(
  COMMAND ${NVCC} -DFEM_WITH_CUDA=1 -I${SOURCE_DIR} -I${SOURCE_DIR}/gpu/src -I${SOURCE_DIR}/shared/include
          -I${SOURCE_DIR}/gpu/include -isystem=/usr/include/eigen3 -O3 -DNDEBUG ${arch_flags}
          --expt-relaxed-constexpr -std=c++20 -Xptxas -v -c ${SOURCE_DIR}/fem/assembly/device_cuda.cu
          -o ${WORK}/device_cuda_check.o
  ERROR_FILE ${WORK}/ptxas.txt
  RESULT_VARIABLE compiled)
if(NOT compiled EQUAL 0)
  file(READ ${WORK}/ptxas.txt log)
  message(FATAL_ERROR "nvcc failed:\n${log}")
endif()
execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/scripts/ptxas-report.py ${WORK}/ptxas.txt --check CellRows
                RESULT_VARIABLE checked)
if(NOT checked EQUAL 0)
  message(FATAL_ERROR "an assembly kernel uses local memory or more than 128 registers (table above)")
endif()
