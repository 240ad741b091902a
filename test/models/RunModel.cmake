# Compiles MODEL_DIR/model.onnx with kiln-compile and runs it with kiln-run on
# MODEL_DIR/input_*.pb, comparing with MODEL_DIR/output_0.pb (PyTorch's).
file(GLOB inputs "${MODEL_DIR}/input_*.pb")
list(SORT inputs)
set(input_args)
foreach(input ${inputs})
  list(APPEND input_args --input ${input})
endforeach()
execute_process(
  COMMAND ${KILN_BIN}/kiln-compile ${MODEL_DIR}/model.onnx -o ${MODEL_DIR}/model.so
  RESULT_VARIABLE compile_result)
if(NOT compile_result EQUAL 0)
  message(FATAL_ERROR "kiln-compile failed on ${MODEL_DIR}/model.onnx")
endif()
execute_process(
  COMMAND ${KILN_BIN}/kiln-run ${MODEL_DIR}/model.so ${input_args}
          --expect ${MODEL_DIR}/output_0.pb --rtol 1e-4 --atol ${ATOL} --repeat 1
  RESULT_VARIABLE run_result)
if(NOT run_result EQUAL 0)
  message(FATAL_ERROR "kiln-run did not match PyTorch on ${MODEL_DIR}")
endif()
