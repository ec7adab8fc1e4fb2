# `--backend cuda` without a usable device (this is CI: no GPU) must say so in one line and exit
# non-zero. Where a device is present this test checks nothing and says so: the CUDA checks live in
# `quantscope-cli selftest --backend cuda`, run on the GPU machine.
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${CLI} selftest --backend cuda RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(err MATCHES "no GPU")
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl lines)
  if(rc EQUAL 0 OR NOT lines EQUAL 1)
    message(FATAL_ERROR "selftest --backend cuda without a device: exit ${rc}, stderr: ${err}")
  endif()
  message(STATUS "SKIP: no CUDA device here (${err}); the no-device path behaves")
else()
  message(STATUS "a CUDA device is present; exit ${rc}: ${out}${err}")
endif()
