# DLAUNCH_FUZZ=ON: everything is compiled for libFuzzer's coverage and with AddressSanitizer and
# UndefinedBehaviorSanitizer, so a parser's own code is what the fuzzer explores and checks;
# tests/fuzz then links each target with libFuzzer. Included by the top-level CMakeLists.txt
# before any library is defined. scripts/fuzz.sh configures and runs this build.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "DLAUNCH_FUZZ=ON needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
