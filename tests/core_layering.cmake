# core_layering: the include rule of core/ (docs/DESIGN.md, "The layering rule"). The layers, lowest first, are
# util < format < io < quant < gemm < train < bench < cuda; a file of one layer includes only its own layer and
# those below it. The build already refuses an upward include of the files it compiles (each layer target sees
# only its own include root and those below, core/CMakeLists.txt); this check reads the #include lines of every
# file under core/, so it also covers what this configuration does not compile (the CUDA sources without nvcc,
# gemm_onednn.cpp without oneDNN, the AVX variants on another CPU) and a relative "../" include, which would
# step around the include roots.
# Run: cmake -DCORE=core -DLAYERS=util,format,io,quant,gemm,train,bench,cuda -P tests/core_layering.cmake
# (ctest: core_layering, in every configuration).
cmake_minimum_required(VERSION 3.20)
if(NOT CORE OR NOT LAYERS)
  message(FATAL_ERROR "usage: cmake -DCORE=<path to core/> -DLAYERS=<lowest>,...,<highest> -P core_layering.cmake")
endif()
get_filename_component(CORE "${CORE}" ABSOLUTE)
string(REPLACE "," ";" layers "${LAYERS}")
file(GLOB sources RELATIVE ${CORE} ${CORE}/*/*.h ${CORE}/*/*.cpp ${CORE}/*/*.cuh ${CORE}/*/*.cu)
set(bad "")
set(checked 0)
foreach(src ${sources})
  string(REGEX MATCH "^[^/]+" from "${src}")
  list(FIND layers "${from}" from_rank)
  if(from_rank LESS 0)
    string(APPEND bad "  ${src}: folder '${from}' is not a layer (${LAYERS}): give it a place in the order\n")
    continue()
  endif()
  file(STRINGS ${CORE}/${src} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
    math(EXPR checked "${checked} + 1")
    if(inc MATCHES "(^|/)\\.\\.(/|$)")
      string(APPEND bad "  ${src} includes \"${inc}\": write the layer folder (\"format/x.h\"), not a relative path\n")
    elseif(inc MATCHES "^([^/]+)/")
      set(to "${CMAKE_MATCH_1}")
      list(FIND layers "${to}" to_rank)
      if(to_rank GREATER from_rank)
        string(APPEND bad "  ${src} includes ${inc}: ${from}/ is below ${to}/ (${LAYERS}, lowest first)\n")
      endif()
    endif()
  endforeach()
endforeach()
list(LENGTH sources nfiles)
if(nfiles LESS 120 OR checked LESS 250)
  message(FATAL_ERROR "core_layering: found only ${nfiles} files and ${checked} includes under ${CORE}: wrong path?")
endif()
if(bad)
  message(FATAL_ERROR "core_layering: include rule broken:\n${bad}")
endif()
message(STATUS "core_layering: ${nfiles} files, ${checked} includes, none upward (${LAYERS})")
