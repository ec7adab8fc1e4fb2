# One-line helpers for tests: qs_add_qtest(tst_foo core) builds tests/tst_foo.cpp as a Qt Test executable.
function(qs_add_qtest name)
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE Qt6::Test ${ARGN})
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
