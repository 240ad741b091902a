# Compiles MODEL_DIR/model.onnx with --pipeline=diffusion --sampler=SAMPLER
# --steps=STEPS (and EXTRA, kiln-compile options separated by commas) at
# each of LEVELS (e.g. O0,O2), and runs the entry sample through kiln-run --sample on
# MODEL_DIR/sample-SAMPLER${SUFFIX}'s inputs against the sample
# bench/models/samplers.py computed there with PyTorch calling the model
# (output_0.pb), within RTOL relative and absolute tolerance.
string(REPLACE "," ";" extra "${EXTRA}")
set(data ${MODEL_DIR}/sample-${SAMPLER}${SUFFIX})
file(GLOB inputs "${data}/input_*.pb")
list(SORT inputs)
if(NOT inputs)
  message(FATAL_ERROR "no inputs in ${data}")
endif()
set(input_args)
foreach(input ${inputs})
  list(APPEND input_args --input ${input})
endforeach()
string(REPLACE "," ";" levels "${LEVELS}")
foreach(level ${levels})
  set(artifact ${MODEL_DIR}/sample-${SAMPLER}${SUFFIX}-${level}.so)
  execute_process(COMMAND ${KILN_BIN}/kiln-compile -${level}
                          ${MODEL_DIR}/model.onnx --pipeline=diffusion
                          --sampler=${SAMPLER} --steps=${STEPS} ${extra}
                          -o ${artifact}
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "kiln-compile -${level} --sampler=${SAMPLER} failed")
  endif()
  execute_process(COMMAND ${KILN_BIN}/kiln-run ${artifact} --sample
                          ${input_args} --expect ${data}/output_0.pb
                          --rtol ${RTOL} --atol ${RTOL} --repeat 1
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "-${level} ${SAMPLER} sample differs from the reference")
  endif()
endforeach()
