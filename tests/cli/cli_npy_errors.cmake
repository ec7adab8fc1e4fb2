# CLI contract for bad .npy input and bad output paths: every error is one line on stderr, a non-zero
# exit, and no output (or temp) file left behind; empty and 0-d arrays work.
# Run: cmake -DCLI=build/quantscope-cli -DWORK=/tmp/w -DSRC=tests -P tests/cli/cli_npy_errors.cmake
# (or: ctest --test-dir build -R cli_npy_errors --output-on-failure)
cmake_minimum_required(VERSION 3.25)

foreach(v CLI WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "cli_npy_errors: pass -D${v}=...")
  endif()
endforeach()
# CMake strings cannot hold a NUL byte, and every .npy has some (version 1.0, lengths), so fixtures
# are hex strings turned into bytes by printf's octal escapes (POSIX; no shell is involved).
find_program(PRINTF printf REQUIRED)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(failures 0)

# ---- fixture helpers ----

# le_hex(<out> <value> <nbytes>): hex of an unsigned little-endian integer.
function(le_hex out value nbytes)
  set(digits "0123456789abcdef")
  set(h "")
  foreach(i RANGE 1 ${nbytes})
    math(EXPR b "${value} % 256")
    math(EXPR value "${value} / 256")
    math(EXPR b_hi "${b} / 16")
    math(EXPR b_lo "${b} % 16")
    string(SUBSTRING "${digits}" ${b_hi} 1 c1)
    string(SUBSTRING "${digits}" ${b_lo} 1 c2)
    string(APPEND h "${c1}${c2}")
  endforeach()
  set(${out} "${h}" PARENT_SCOPE)
endfunction()

# write_hex(<file> <hex>): writes the bytes spelled by <hex> (whitespace ignored).
function(write_hex file hex)
  string(REGEX REPLACE "[ \t\r\n]" "" hex "${hex}")
  string(LENGTH "${hex}" n)
  math(EXPR odd "${n} % 2")
  if(odd)
    message(FATAL_ERROR "write_hex(${file}): odd number of hex digits")
  endif()
  set(fmt "")
  set(i 0)
  while(i LESS n)
    string(SUBSTRING "${hex}" ${i} 2 pair)
    math(EXPR v "0x${pair}")
    math(EXPR o1 "${v} / 64")
    math(EXPR o2 "(${v} / 8) % 8")
    math(EXPR o3 "${v} % 8")
    string(APPEND fmt "\\${o1}${o2}${o3}")
    math(EXPR i "${i} + 2")
  endwhile()
  if(n EQUAL 0)
    file(WRITE "${file}" "")
    return()
  endif()
  execute_process(COMMAND "${PRINTF}" "${fmt}" OUTPUT_FILE "${file}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "write_hex(${file}): printf failed (${rc})")
  endif()
endfunction()

# write_npy_fixture(<file> <header text> [DATA <hex>] [VERSION <major>] [HEADER_LEN <n>]):
# magic + version + header length + the header text as given + data. HEADER_LEN overrides the
# length field, to describe a header longer than the file.
function(write_npy_fixture file header)
  cmake_parse_arguments(A "" "DATA;VERSION;HEADER_LEN" "" ${ARGN})
  if(NOT DEFINED A_VERSION)
    set(A_VERSION 1)
  endif()
  string(LENGTH "${header}" hlen)
  if(DEFINED A_HEADER_LEN)
    set(hlen ${A_HEADER_LEN})
  endif()
  if(A_VERSION EQUAL 1)
    le_hex(len_hex ${hlen} 2)
  else()
    le_hex(len_hex ${hlen} 4)
  endif()
  le_hex(ver_hex ${A_VERSION} 1)
  string(HEX "${header}" header_hex)
  write_hex("${file}" "934e554d5059${ver_hex}00${len_hex}${header_hex}${A_DATA}")
endfunction()

# ---- checks ----

# Lists everything under WORK, so a failed run can be shown to have created nothing (no temp files).
function(list_work out)
  file(GLOB_RECURSE entries LIST_DIRECTORIES true RELATIVE "${WORK}" "${WORK}/*" "${WORK}/.*")
  list(SORT entries)
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

macro(fail_case name what)
  message(SEND_ERROR "${name}: ${what}")
  math(EXPR failures "${failures} + 1")
endmacro()

# expect_error(<name> <regex on stderr> <cli args...>): non-zero exit, exactly one line on stderr
# that matches, nothing on stdout, and nothing new under WORK.
function(expect_error name regex)
  set(failures_before ${failures})
  list_work(before)
  execute_process(COMMAND "${CLI}" ${ARGN} WORKING_DIRECTORY "${WORK}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list_work(after)
  if(rc EQUAL 0)
    fail_case("${name}" "exit status 0, expected an error")
  elseif(NOT rc MATCHES "^[0-9]+$")
    fail_case("${name}" "did not exit normally: ${rc}")  # a crash reads "Segmentation fault" etc.
  endif()
  if(NOT err MATCHES "^[^\n]+\n$")
    fail_case("${name}" "stderr is not exactly one line: [${err}]")
  elseif(NOT err MATCHES "${regex}")
    fail_case("${name}" "stderr does not match '${regex}': ${err}")
  endif()
  if(NOT out STREQUAL "")
    fail_case("${name}" "unexpected stdout on error: [${out}]")
  endif()
  if(NOT before STREQUAL after)
    fail_case("${name}" "files changed under WORK: before [${before}] after [${after}]")
  endif()
  if(failures EQUAL failures_before)
    string(STRIP "${err}" err)
    message(STATUS "ok   ${name}: ${err}")
  endif()
  set(failures ${failures} PARENT_SCOPE)
endfunction()

# expect_bad_input(<fixture name> <regex>): quantize the fixture; the error names the file.
function(expect_bad_input fixture regex)
  expect_error("${fixture}" "${fixture}\\.npy.*${regex}"
               quantize --format e4m3fn --in "${WORK}/${fixture}.npy" --out "${WORK}/out.npy")
  if(EXISTS "${WORK}/out.npy")
    fail_case("${fixture}" "out.npy was created")
    file(REMOVE "${WORK}/out.npy")
  endif()
  set(failures ${failures} PARENT_SCOPE)
endfunction()

# expect_ok(<name> <cli args...>): exit 0 and one summary line on stdout.
function(expect_ok name)
  execute_process(COMMAND "${CLI}" ${ARGN} WORKING_DIRECTORY "${WORK}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    fail_case("${name}" "exit ${rc}: ${err}")
  elseif(NOT out MATCHES "^[^\n]+\n$")
    fail_case("${name}" "stdout is not one summary line: [${out}]")
  else()
    string(STRIP "${out}" out)
    message(STATUS "ok   ${name}: ${out}")
  endif()
  set(failures ${failures} PARENT_SCOPE)
endfunction()

# ---- fixtures ----

set(F4_123 "0000803f 00000040 00004040")  # float32 [1, 2, 3]
set(H_F4_3 "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n")

write_npy_fixture("${WORK}/good.npy" "${H_F4_3}" DATA "${F4_123}")
write_npy_fixture("${WORK}/empty.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n")
write_npy_fixture("${WORK}/scalar.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n"
                  DATA "0000c03f")  # 1.5

write_hex("${WORK}/empty_file.npy" "")
write_hex("${WORK}/bad_magic.npy" "504b0304 14000000 08000000 2a2a2a2a")  # a zip file's start
write_hex("${WORK}/magic_only.npy" "934e554d5059")
write_hex("${WORK}/cut_length.npy" "934e554d5059 0100 46")
write_npy_fixture("${WORK}/header_beyond_file.npy" "{'descr': '<f4'" HEADER_LEN 300)
write_npy_fixture("${WORK}/v2_header_4gib.npy" "{}" VERSION 2 HEADER_LEN 4294967295)
write_npy_fixture("${WORK}/version_9.npy" "${H_F4_3}" VERSION 9 DATA "${F4_123}")
write_npy_fixture("${WORK}/data_short.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n"
                  DATA "${F4_123}")
write_npy_fixture("${WORK}/data_long.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
                  DATA "${F4_123}")
write_npy_fixture("${WORK}/negative_dim.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }\n"
                  DATA "${F4_123}")
write_npy_fixture("${WORK}/overflow_dims.npy"
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n"
                  DATA "${F4_123}")
write_npy_fixture("${WORK}/huge_dim.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }\n"
                  DATA "${F4_123}")
# Header bytes 0xff 0xfe in the middle of 'descr': written as raw hex, CMake strings are text.
string(HEX "{'descr': '<f4" garbage_a)
string(HEX "', 'fortran_order': False, 'shape': (3,), }\n" garbage_b)
string(LENGTH "${garbage_a}${garbage_b}" garbage_len)
math(EXPR garbage_len "${garbage_len} / 2 + 2")
le_hex(garbage_len_hex ${garbage_len} 2)
write_hex("${WORK}/non_ascii.npy" "934e554d5059 0100 ${garbage_len_hex} ${garbage_a} fffe ${garbage_b} ${F4_123}")
write_npy_fixture("${WORK}/not_a_dict.npy" "[1, 2, 3]\n" DATA "${F4_123}")
write_npy_fixture("${WORK}/missing_shape.npy" "{'descr': '<f4', 'fortran_order': False}\n" DATA "${F4_123}")
write_npy_fixture("${WORK}/fortran.npy" "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }\n"
                  DATA "${F4_123}")
write_npy_fixture("${WORK}/big_endian.npy" "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }\n"
                  DATA "3f800000 40000000 40400000")
write_npy_fixture("${WORK}/object.npy" "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }\n"
                  DATA "${F4_123}")
write_npy_fixture("${WORK}/bool.npy" "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n" DATA "010001")

# ---- malformed input: one line naming the file, no output ----

expect_bad_input(empty_file "empty file")
expect_bad_input(bad_magic "bad magic")
expect_bad_input(magic_only "truncated header")
expect_bad_input(cut_length "truncated header")
expect_bad_input(header_beyond_file "header length 300 runs past the end")
expect_bad_input(v2_header_4gib "runs past the end")
expect_bad_input(version_9 "version 9\\.0")
expect_bad_input(data_short "truncated")
expect_bad_input(data_long "trailing data")
expect_bad_input(negative_dim "negative dimension -3")
expect_bad_input(overflow_dims "overflows")
expect_bad_input(huge_dim "needs 4398046511104 data bytes")
expect_bad_input(non_ascii "non-ASCII")
expect_bad_input(not_a_dict "not a Python dict")
expect_bad_input(missing_shape "no 'shape' key")
expect_bad_input(fortran "Fortran.*ascontiguousarray")
expect_bad_input(big_endian "'>f4'.*big-endian")
expect_bad_input(object "'\\|O'")
expect_bad_input(bool "'\\|b1'")
expect_bad_input(does_not_exist "cannot open")

# ---- bad output paths: refused before any work, nothing left behind ----

expect_error(out_missing_dir "nodir"
             quantize --format e4m3fn --in "${WORK}/good.npy" --out "${WORK}/nodir/out.npy")
if(EXISTS "${WORK}/nodir")
  fail_case(out_missing_dir "created ${WORK}/nodir")
endif()
expect_error(out_is_dir "is a directory"
             quantize --format e4m3fn --in "${WORK}/good.npy" --out "${WORK}")
expect_error(codes_missing_dir "nodir"
             quantize --format e4m3fn --in "${WORK}/good.npy" --out "${WORK}/out.npy" --codes "${WORK}/nodir/c.npy")
# Bad output path and bad input together: the output is checked first ("before work").
expect_error(out_checked_before_input "nodir"
             quantize --format e4m3fn --in "${WORK}/bad_magic.npy" --out "${WORK}/nodir/out.npy")

# ---- arrays that must work ----

function(expect_npy_written name file shape_text)
  if(NOT EXISTS "${file}")
    fail_case("${name}" "${file} was not written")
  else()
    file(READ "${file}" got HEX)
    string(HEX "'shape': ${shape_text}" want)
    string(FIND "${got}" "${want}" at)
    if(at EQUAL -1)
      fail_case("${name}" "${file} does not have shape ${shape_text}")
    endif()
  endif()
  set(failures ${failures} PARENT_SCOPE)
endfunction()

expect_ok(good quantize --format e4m3fn --in "${WORK}/good.npy" --out "${WORK}/good_out.npy")
expect_npy_written(good "${WORK}/good_out.npy" "(3,)")
expect_ok(empty quantize --format e4m3fn --in "${WORK}/empty.npy" --out "${WORK}/empty_out.npy")
expect_npy_written(empty "${WORK}/empty_out.npy" "(0,)")
if(EXISTS "${WORK}/empty_out.npy")
  file(SIZE "${WORK}/empty_out.npy" empty_size)
  if(NOT empty_size EQUAL 128)  # 10-byte prefix + header padded to 64, no data
    fail_case(empty "empty_out.npy is ${empty_size} bytes, expected 128")
  endif()
endif()
expect_ok(scalar quantize --format e4m3fn --in "${WORK}/scalar.npy" --out "${WORK}/scalar_out.npy")
expect_npy_written(scalar "${WORK}/scalar_out.npy" "()")

# No temp files anywhere after all of the above.
file(GLOB_RECURSE leftovers "${WORK}/*.tmp.*" "${WORK}/.*.tmp.*")
if(leftovers)
  fail_case(temp_files "left behind: ${leftovers}")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "cli_npy_errors: ${failures} check(s) failed")
endif()
message(STATUS "cli_npy_errors: all checks passed")
