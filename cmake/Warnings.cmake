# A switch over an enum (OpKind above all: graph/op.h) that misses an enumerator is an
# error in every target, tests included: that is how a new op without its shape rule,
# gradient rule, kernels or test samples fails to build. Such switches have no default.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Werror=switch> $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror=switch>)
add_library(twograph_warnings INTERFACE)
target_compile_options(twograph_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TWOGRAPH_WERROR}>>:-Werror>)
if(TWOGRAPH_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
