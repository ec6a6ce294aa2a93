# ctest script: install the build tree into a fresh prefix and import the package from there
# (PYTHONPATH at the prefix's package folder), away from the build tree.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
set(code "import fem, numpy as np, os
assert fem.__file__.startswith(os.environ['EXPECTED']), fem.__file__
fem.generate_mesh('gen:square-tri3:8', 'm')
a = fem.Assembler(fem.FunctionSpace('m', 1))
A, b = fem.DirichletBC(a.space, {'all': 0.0}).apply(a.matrix(fem.Diffusion()), a.vector(fem.Source(1.0)))
fem.store.put('A', A)
u = fem.solve('A', b)
assert np.linalg.norm(A @ u - b) < 1e-12 * np.linalg.norm(b), 'residual'
print('installed fem imports and solves from', os.path.dirname(fem.__file__))")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${WORK_DIR}/prefix/${PACKAGE_DIR}"
                        "EXPECTED=${WORK_DIR}/prefix/${PACKAGE_DIR}" ${PYTHON} -c "${code}"
                WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "importing the installed package failed: ${rc}")
endif()
