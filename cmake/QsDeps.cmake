# The optional tensor-file readers' libraries, found once for every target that compiles a reader
# (qs_core, the fuzz build). Each reader is compiled when its library is found; without it the reader
# says what to install. QS_REQUIRE_READERS=ON (set by build.sh) makes a missing one a configure error,
# so a machine set up by the README never builds a QuantScope that silently lacks a reader.
#
# Found without anything a library's own CMake config may drag in: Debian 12's libzip config names the
# zipcmp/zipmerge/ziptool programs of another package and fails hard on a fresh machine without them,
# so libzip comes through pkg-config (libzip.pc), which names only the library and its headers.
option(QS_REQUIRE_READERS "Fail at configure time when a tensor-file reader's library is missing" OFF)

set(QS_MISSING_READERS "")

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(QS_LIBZIP QUIET IMPORTED_TARGET GLOBAL libzip)
endif()
if(QS_LIBZIP_FOUND)
  set(QS_HAVE_LIBZIP ON)
else()
  set(QS_HAVE_LIBZIP OFF)
  list(APPEND QS_MISSING_READERS "npz (pkg-config + libzip-dev)")
endif()

find_package(nlohmann_json 3.9 CONFIG QUIET HINTS ${QS_DEPS_DIR})
if(nlohmann_json_FOUND)
  set(QS_HAVE_JSON ON)
else()
  set(QS_HAVE_JSON OFF)
  list(APPEND QS_MISSING_READERS "safetensors (nlohmann-json3-dev)")
endif()

find_package(Protobuf QUIET)
if(Protobuf_FOUND AND Protobuf_PROTOC_EXECUTABLE)
  set(QS_HAVE_PROTOBUF ON)
else()
  set(QS_HAVE_PROTOBUF OFF)
  list(APPEND QS_MISSING_READERS "onnx (libprotobuf-dev + protobuf-compiler)")
endif()

find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  list(APPEND QS_MISSING_READERS "gzipped IDX for the training lab (zlib1g-dev)")
endif()

if(QS_MISSING_READERS)
  list(JOIN QS_MISSING_READERS ", " _qs_missing)
  if(QS_REQUIRE_READERS)
    message(FATAL_ERROR "QuantScope: QS_REQUIRE_READERS is ON but these readers' libraries are missing: ${_qs_missing}")
  endif()
  message(STATUS "QuantScope: built without ${_qs_missing}")
endif()
