# `--backend cuda` without a usable device (this is CI: no GPU) must say so in one line and exit
# non-zero, for the self-test and for each benchmark. Where a device is present this test checks nothing
# and says so: the CUDA checks live in `quantscope-cli selftest --backend cuda`, run on the GPU machine.
cmake_minimum_required(VERSION 3.25)
set(commands
  "selftest --backend cuda"
  "bench gemm --backend cuda --sizes 64"
  "bench quantize --backend cuda --n 1024"
  "bench quantize-int8 --backend cuda --rows 4 --cols 4")
foreach(cmd IN LISTS commands)
  separate_arguments(args UNIX_COMMAND "${cmd}")
  execute_process(COMMAND ${CLI} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(err MATCHES "no GPU")
    string(REGEX MATCHALL "\n" nl "${err}")
    list(LENGTH nl lines)
    if(rc EQUAL 0 OR NOT lines EQUAL 1 OR NOT out STREQUAL "")
      message(FATAL_ERROR "${cmd} without a device: exit ${rc}, stdout: '${out}', stderr: ${err}")
    endif()
    message(STATUS "SKIP: no CUDA device here (${cmd}: ${err}); the no-device path behaves")
  else()
    message(STATUS "a CUDA device is present (${cmd}): exit ${rc}")
  endif()
endforeach()
