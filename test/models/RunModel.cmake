# Compiles MODEL_DIR/model.onnx at -O2 (the default) and -O0, runs both with
# kiln-run on MODEL_DIR/input_*.pb, checks the -O2 output against
# MODEL_DIR/output_0.pb (PyTorch's), and the -O2 output against the -O0
# reference path (max relative error <= 1e-5).
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
  file(MAKE_DIRECTORY ${MODEL_DIR}/out-${level})
  run_checked(${KILN_BIN}/kiln-compile -${level} ${MODEL_DIR}/model.onnx
              -o ${MODEL_DIR}/model-${level}.so)
  run_checked(${KILN_BIN}/kiln-run ${MODEL_DIR}/model-${level}.so ${input_args}
              --repeat 1 --save ${MODEL_DIR}/out-${level})
endforeach()
run_checked(${KILN_BIN}/kiln-run ${MODEL_DIR}/model-O2.so ${input_args}
            --expect ${MODEL_DIR}/output_0.pb --rtol 1e-4 --atol ${ATOL}
            --repeat 1)
run_checked(${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare_outputs.py
            ${MODEL_DIR}/out-O2/output_0.pb ${MODEL_DIR}/out-O0/output_0.pb
            1e-5)
