# Compiles MODEL_DIR/model.onnx at -O2 (the default) and -O0, runs both with
# kiln-run on MODEL_DIR/input_*.pb, checks the -O2 output against
# MODEL_DIR/output_0.pb (PyTorch's), the -O2 output against the -O0
# reference path (max relative error <= 1e-5), and that -O2 gives the same
# bits on 1 thread as on 3 (threads split iterations, never sums).
file(GLOB inputs "${MODEL_DIR}/input_*.pb")
list(SORT inputs)
set(input_args)
foreach(input ${inputs})
  list(APPEND input_args --input ${input})
endforeach()

function(run_checked)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "failed: ${command}")
  endif()
endfunction()

foreach(level O0 O2)
  run_checked(${KILN_BIN}/kiln-compile -${level} ${MODEL_DIR}/model.onnx
              -o ${MODEL_DIR}/model-${level}.so)
endforeach()
foreach(run O0:1 O2:1 O2:3)
  string(REPLACE ":" ";" run ${run})
  list(GET run 0 level)
  list(GET run 1 threads)
  set(out ${MODEL_DIR}/out-${level}-${threads})
  file(MAKE_DIRECTORY ${out})
  run_checked(${KILN_BIN}/kiln-run ${MODEL_DIR}/model-${level}.so ${input_args}
              --repeat 1 --threads ${threads} --save ${out})
endforeach()
run_checked(${KILN_BIN}/kiln-run ${MODEL_DIR}/model-O2.so ${input_args}
            --expect ${MODEL_DIR}/output_0.pb --rtol 1e-4 --atol ${ATOL}
            --repeat 1)
run_checked(${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare_outputs.py
            ${MODEL_DIR}/out-O2-1/output_0.pb ${MODEL_DIR}/out-O0-1/output_0.pb
            1e-5)
run_checked(${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare_outputs.py
            ${MODEL_DIR}/out-O2-3/output_0.pb ${MODEL_DIR}/out-O2-1/output_0.pb
            0)
