# One-line helpers for tests: qs_add_qtest(tst_foo qs_widgets) builds tests/tst_foo.cpp as a Qt Test executable
# (the widget suites); qs_add_gtest(tst_foo) builds tests/core/tst_foo.cpp as a GoogleTest executable linked to
# qs_core (the engine's suites: Qt-free, so they run in every configuration, the GPU machine's included).
function(qs_add_qtest name)
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE Qt6::Test ${ARGN})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  set_target_properties(${name} PROPERTIES AUTOMOC ON)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "QT_QPA_PLATFORM=offscreen" LABELS qt)
endfunction()

# qs_add_cli_test(name SCRIPT file.cmake [ARGS...]): runs a CMake script that drives quantscope-cli.
function(qs_add_cli_test name script)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:quantscope-cli> -DWORK=${CMAKE_CURRENT_BINARY_DIR}/${name}.work
            -DSRC=${CMAKE_CURRENT_SOURCE_DIR} ${ARGN} -P ${CMAKE_CURRENT_SOURCE_DIR}/${script})
  set_tests_properties(${name} PROPERTIES LABELS cli)
endfunction()

# qs_add_gtest(name [LAYER qs_<layer>] [LIBS...]): tests/core/<name>.cpp with GoogleTest's main, linked to the
# engine layer it tests (LAYER: the highest layer it includes, which brings those below; qs_core when absent)
# and LIBS; one ctest entry per executable, label "core". Linking only its layer keeps a suite to that layer's
# headers and checks that the layer links without anything above it. A suite whose every test calls
# GTEST_SKIP() still reads "Passed" in ctest: suites that can be skipped as a whole (no GPU) exit 77 instead,
# see tests/core/CMakeLists.txt.
function(qs_add_gtest name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "LAYER" "")
  if(NOT arg_LAYER)
    set(arg_LAYER qs_core)
  endif()
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE ${arg_LAYER} GTest::gtest_main ${arg_UNPARSED_ARGUMENTS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS core)
endfunction()
