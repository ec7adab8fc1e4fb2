# Shared by the CLI contract scripts: a fresh WORK folder, the failure counter and the run / expect
# macros (an error is one stderr line and a non-zero exit). Include it first; end with qs_cli_finish().
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(failures 0)

macro(fail msg)
  message(SEND_ERROR "FAIL: ${msg}")
  math(EXPR failures "${failures} + 1")
endmacro()

# run(<args...>): sets rc, out, err.
macro(run)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endmacro()

macro(expect_ok what)
  if(NOT rc EQUAL 0)
    fail("${what}: exit ${rc}, stderr: ${err}")
  endif()
endmacro()

# An error is exactly one line on stderr and a non-zero exit; `needle` must appear in it.
macro(expect_error what needle)
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl lines)
  if(rc EQUAL 0)
    fail("${what}: expected failure, got exit 0")
  elseif(NOT lines EQUAL 1)
    fail("${what}: expected one stderr line, got ${lines}: ${err}")
  elseif(NOT err MATCHES "${needle}")
    fail("${what}: stderr lacks '${needle}': ${err}")
  endif()
endmacro()

macro(expect_match what text regex)
  if(NOT "${text}" MATCHES "${regex}")
    fail("${what}: '${regex}' not found in: ${text}")
  endif()
endmacro()

macro(qs_cli_finish)
  if(failures GREATER 0)
    message(FATAL_ERROR "${failures} failure(s)")
  endif()
endmacro()
