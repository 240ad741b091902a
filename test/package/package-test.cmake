# The installed-package test, run as `cmake -P` by ctest: installs this
# build into a fresh prefix, builds the consumer project against it with
# find_package(Kiln), compiles the bundled example through the C and C++
# APIs, and runs both artifacts against the example's expected output.
#
# Variables: KILN_BUILD_DIR, WORK_DIR, CONSUMER_DIR, EXAMPLE_DIR, MLIR_DIR,
# GENERATOR, C_COMPILER, CXX_COMPILER.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${result})")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

run_step("cmake --install" ${CMAKE_COMMAND} --install ${KILN_BUILD_DIR}
         --prefix ${prefix})
foreach(header abi.h runtime.h compiler.h compiler.hpp)
  if(NOT EXISTS ${prefix}/include/kiln/${header})
    message(FATAL_ERROR "package test: kiln/${header} is not installed")
  endif()
endforeach()

run_step("configuring the consumer" ${CMAKE_COMMAND}
         -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
         -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         -DCMAKE_PREFIX_PATH=${prefix} -DMLIR_DIR=${MLIR_DIR})
run_step("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)

run_step("the C API program" ${WORK_DIR}/build/compile_and_run
         ${EXAMPLE_DIR}/model.onnx ${EXAMPLE_DIR}/input_0.pb
         ${EXAMPLE_DIR}/output_0.pb ${WORK_DIR})
run_step("the C++ API program" ${WORK_DIR}/build/compile_cxx
         ${EXAMPLE_DIR}/model.onnx ${WORK_DIR}/model-cxx.so)
run_step("the installed kiln-run" ${prefix}/bin/kiln-run
         ${WORK_DIR}/model-cxx.so --input ${EXAMPLE_DIR}/input_0.pb
         --expect ${EXAMPLE_DIR}/output_0.pb --rtol 1e-4 --atol 1e-5)
run_step("the installed kiln-compile" ${prefix}/bin/kiln-compile --version)
