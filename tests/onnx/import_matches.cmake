# tg-graph import MODEL into OUT, then the graph file and the weights must equal
# EXPECT.json and EXPECT.safetensors byte for byte (the committed fixtures).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
get_filename_component(name "${EXPECT}" NAME)
execute_process(COMMAND ${TOOL} import ${MODEL} -o ${OUT}/${name}.json RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tg-graph import exited ${rc}\n${out}\n${err}")
endif()
foreach(ext json safetensors)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/${name}.${ext} ${EXPECT}.${ext} RESULT_VARIABLE diff)
  if(NOT diff EQUAL 0)
    message(FATAL_ERROR "${OUT}/${name}.${ext} differs from the committed ${EXPECT}.${ext}: regenerate the fixtures "
                        "(experiments/peers/export_onnx_models.py --tg-graph ...) or fix the import")
  endif()
endforeach()
message(STATUS "${out}")
