# Compiles MODEL_DIR/model.onnx at -O2 (the default) and -O0, with the
# dimensions DIMS if given (--dim values separated by commas: one artifact
# for every shape in the ranges), and runs each data set through both with
# kiln-run: the -O2 output against PyTorch's (output_0.pb), against the -O0
# reference path (max relative error <= 1e-5), and on 1 thread against 3,
# bit for bit (threads split iterations, never sums). The data sets are
# MODEL_DIR/test_data_set_<k> (one sequence length each) when there are
# any, otherwise MODEL_DIR itself (input_*.pb, output_0.pb). SUFFIX, if
# given, names this run's artifacts and outputs apart from another's on the
# same model.
string(REPLACE "," ";" dims "${DIMS}")
set(dim_args)
foreach(dim ${dims})
  list(APPEND dim_args --dim ${dim})
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
              ${dim_args} -o ${MODEL_DIR}/model${SUFFIX}-${level}.so)
endforeach()

file(GLOB sets LIST_DIRECTORIES true "${MODEL_DIR}/test_data_set_*")
list(SORT sets)
if(NOT sets)
  set(sets ${MODEL_DIR})
endif()
foreach(set ${sets})
  file(GLOB inputs "${set}/input_*.pb")
  list(SORT inputs)
  if(NOT inputs)
    message(FATAL_ERROR "no inputs in ${set}")
  endif()
  set(input_args)
  foreach(input ${inputs})
    list(APPEND input_args --input ${input})
  endforeach()
  foreach(run O0:1 O2:1 O2:3)
    string(REPLACE ":" ";" run ${run})
    list(GET run 0 level)
    list(GET run 1 threads)
    set(out ${set}/out${SUFFIX}-${level}-${threads})
    file(MAKE_DIRECTORY ${out})
    run_checked(${KILN_BIN}/kiln-run ${MODEL_DIR}/model${SUFFIX}-${level}.so
                ${input_args} --repeat 1 --threads ${threads} --save ${out})
  endforeach()
  run_checked(${KILN_BIN}/kiln-run ${MODEL_DIR}/model${SUFFIX}-O2.so ${input_args}
              --expect ${set}/output_0.pb --rtol 1e-4 --atol ${ATOL} --repeat 1)
  run_checked(${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare_outputs.py
              ${set}/out${SUFFIX}-O2-1/output_0.pb ${set}/out${SUFFIX}-O0-1/output_0.pb 1e-5)
  run_checked(${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/compare_outputs.py
              ${set}/out${SUFFIX}-O2-3/output_0.pb ${set}/out${SUFFIX}-O2-1/output_0.pb 0)
endforeach()
