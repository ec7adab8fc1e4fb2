# The quantscope-cli contract of docs/DESIGN.md (Command-line contract) / issue 2: --help everywhere, CSV
# columns, exact codes for known inputs, one-line errors with a non-zero exit, atomic outputs.
# Run: ctest --test-dir build -R cli_contract --output-on-failure
cmake_minimum_required(VERSION 3.25)
set(DATA ${SRC}/data)
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# Data bytes of a .npy file (after the header) as lower-case hex.
function(npy_data_hex file out)
  file(READ "${file}" hex HEX)
  string(SUBSTRING "${hex}" 16 4 hl)          # header length, little-endian uint16
  string(SUBSTRING "${hl}" 0 2 lo)
  string(SUBSTRING "${hl}" 2 2 hi)
  math(EXPR start "(10 + 0x${lo} + 256 * 0x${hi}) * 2")
  string(SUBSTRING "${hex}" ${start} -1 data)
  set(${out} "${data}" PARENT_SCOPE)
endfunction()

# --help for every subcommand.
foreach(cmd "formats" "grid" "quantize" "bench" "bench;quantize" "selftest")
  run(${cmd} --help)
  expect_ok("${cmd} --help")
  expect_match("${cmd} --help" "${out}" "Usage:")
endforeach()

# formats: exact header, one row per named format, known facts.
run(formats)
expect_ok("formats")
expect_match("formats header" "${out}"
  "^name,bits,exponent_bits,mantissa_bits,bias,signed,has_inf,has_nan,has_negative_zero,max,min_normal,min_subnormal,distinct_values\n")
expect_match("formats e4m3fn" "${out}" "\ne4m3fn,8,4,3,7,true,false,true,true,448,0.015625,0.001953125,253\n")
expect_match("formats e2m1fn" "${out}" "\ne2m1fn,4,2,1,1,true,false,false,true,6,1,0.5,15\n")
string(REGEX MATCHALL "\n" rows "${out}")
list(LENGTH rows nrows)
if(NOT nrows EQUAL 18)
  fail("formats: expected 17 rows + header, got ${nrows} lines")
endif()
set(stdout_formats "${out}")
run(formats --csv ${WORK}/formats.csv)
expect_ok("formats --csv")
file(READ ${WORK}/formats.csv csv)
if(NOT csv STREQUAL stdout_formats)
  fail("formats --csv differs from stdout")
endif()

# grid: one row per code, values that read back exactly.
run(grid --format e4m3fn)
expect_ok("grid e4m3fn")
expect_match("grid header" "${out}" "^code,hex,value,class\n0,0x00,0,zero\n1,0x01,0.001953125,subnormal\n")
expect_match("grid 0x7e" "${out}" "\n126,0x7e,448,normal\n127,0x7f,nan,nan\n128,0x80,-0,zero\n")
run(grid --format fp16 --csv ${WORK}/fp16.csv)
expect_ok("grid fp16")
file(STRINGS ${WORK}/fp16.csv lines)
list(LENGTH lines n)
if(NOT n EQUAL 65537)
  fail("grid fp16: ${n} lines, expected 65537")
endif()
run(grid --format e8m0fnu)
expect_match("grid e8m0" "${out}" "\n0,0x00,5.877471754111438e-39,normal\n")
expect_match("grid e8m0 max" "${out}" "\n254,0xfe,1.7014118346046923e.38,normal\n255,0xff,nan,nan\n")

# Invalid specs and options: one line naming the problem.
run(grid --format e9m9)
expect_error("grid e9m9" "exponent bits")
run(grid --format e5m2:bias=300)
expect_error("grid bias" "bias 300 out of range")
run(grid --format e6m10)
expect_error("grid 17 bits" "17 bits")
run(grid)
expect_error("grid without --format" "--format")
run(nosuchcommand)
expect_error("unknown subcommand" "nosuchcommand")

# quantize: exact codes for known inputs (e4m3fn, saturate, no scale).
#   464 -> 448 (tie to even, no overflow), 465 -> 448 (clamped, an overflow), -0, 1, 0.0625, 1e-4 -> 0, NaN, -inf -> -448, 3.5, -448
set(want_codes "7e7e803818007ffe46fe")
foreach(input probe_f32 probe_f64)
  run(quantize --format e4m3fn --scale none --in ${DATA}/${input}.npy --out ${WORK}/${input}_y.npy
      --codes ${WORK}/${input}_c.npy)
  expect_ok("quantize ${input}")
  expect_match("quantize ${input} summary" "${out}"
    "^count=10 format=e4m3fn scale=1 overflow=2 underflow=1 nan=1 sqnr_db=[-0-9.e+]+\n$")
  npy_data_hex(${WORK}/${input}_c.npy codes)
  if(NOT codes STREQUAL want_codes)
    fail("quantize ${input}: codes ${codes}, want ${want_codes}")
  endif()
  # Values: float32 448, 448, -0, 1, ... little-endian.
  npy_data_hex(${WORK}/${input}_y.npy vals)
  string(SUBSTRING "${vals}" 0 24 head)
  if(NOT head STREQUAL "0000e0430000e04300000080")
    fail("quantize ${input}: values start ${head}")
  endif()
endforeach()

# Integer input into int8: -128 saturates to -127 (narrow range), the rest is exact.
run(quantize --format int8 --scale none --in ${DATA}/ramp_i8.npy --out ${WORK}/i8_y.npy --codes ${WORK}/i8_c.npy)
expect_ok("quantize int8")
npy_data_hex(${WORK}/i8_c.npy codes)
if(NOT codes STREQUAL "81ff0001407f")
  fail("quantize int8 codes ${codes}")
endif()
expect_match("quantize int8 summary" "${out}" "overflow=1 underflow=0 nan=0")

# uint16 input, a 16-bit format: codes are stored as uint16.
run(quantize --format bf16 --scale none --in ${DATA}/ramp_u16.npy --out ${WORK}/bf_y.npy --codes ${WORK}/bf_c.npy)
expect_ok("quantize bf16")
file(READ ${WORK}/bf_c.npy hdr LIMIT 60 HEX)
expect_match("bf16 codes dtype '<u2'" "${hdr}" "273c753227")
npy_data_hex(${WORK}/bf_c.npy codes)
# 0 -> 0x0000, 1000 -> 0x447a, 65535 -> 65536 = 0x4780 (nearest even)
if(NOT codes STREQUAL "00007a448047")
  fail("quantize bf16 codes ${codes}")
endif()

# Empty arrays work.
run(quantize --format e5m2 --in ${DATA}/empty_f32.npy --out ${WORK}/empty_y.npy)
expect_ok("quantize empty")
expect_match("quantize empty" "${out}" "^count=0 ")

# Stochastic rounding: same seed, same result whatever the thread count; another seed differs.
run(quantize --format e2m1fn --rounding stochastic --seed 9 --threads 1 --in ${DATA}/probe_f32.npy
    --out ${WORK}/s1.npy --codes ${WORK}/s1c.npy)
expect_ok("stochastic t1")
run(quantize --format e2m1fn --rounding stochastic --seed 9 --threads 2 --in ${DATA}/probe_f32.npy
    --out ${WORK}/s2.npy --codes ${WORK}/s2c.npy)
expect_ok("stochastic t2")
file(READ ${WORK}/s1c.npy a HEX)
file(READ ${WORK}/s2c.npy b HEX)
if(NOT a STREQUAL b)
  fail("stochastic rounding depends on the thread count")
endif()

# Bad options and paths fail before any work and leave nothing behind.
run(quantize --format e4m3fn --rounding up --in ${DATA}/probe_f32.npy --out ${WORK}/bad1.npy)
expect_error("bad rounding" "rounding")
run(quantize --format e4m3fn --overflow wrap --in ${DATA}/probe_f32.npy --out ${WORK}/bad2.npy)
expect_error("bad overflow" "overflow")
run(quantize --format e4m3fn --scale -2 --in ${DATA}/probe_f32.npy --out ${WORK}/bad3.npy)
expect_error("bad scale" "scale")
run(quantize --format e4m3fn --in ${DATA}/probe_f32.npy --out ${WORK}/no/such/dir/y.npy)
expect_error("unwritable output" "y.npy")
run(quantize --format e4m3fn --in ${WORK}/missing.npy --out ${WORK}/bad4.npy)
expect_error("missing input" "missing.npy")
foreach(f bad1 bad2 bad3 bad4)
  if(EXISTS ${WORK}/${f}.npy)
    fail("${f}.npy was left behind")
  endif()
endforeach()
file(GLOB leftovers "${WORK}/*.tmp*" "${WORK}/.*")
if(leftovers)
  fail("temporary files left behind: ${leftovers}")
endif()

# bench quantize: checks, then prints the CSV row.
run(bench quantize --backend cpu --format e4m3fn --n 100000 --reps 1 --threads 1)
expect_ok("bench quantize")
expect_match("bench header" "${out}" "^backend,format,rounding,n,threads,quant_gbps,memcpy_gbps,ratio\ncpu,e4m3fn,nearest,100000,1,[0-9.e+]+,[0-9.e+]+,[0-9.e+]+\n$")
run(bench quantize --backend tpu --n 10)
expect_error("bench unknown backend" "tpu")

# bench gemm: int8 kernels are exact against the int64 reference on a tail-heavy shape.
run(bench gemm --backend cpu --shape 33x70x45 --threads 1 --reps 1 --min-time 0)
expect_ok("bench gemm")
expect_match("bench gemm header" "${out}" "^backend,kernel,M,N,K,threads,median_ms,gops,speedup_vs_fp32,max_abs_err_vs_ref\ncpu,fp32-eigen,33,45,70,1,")
string(REPLACE "\n" ";" gemm_lines "${out}")
set(n_exact 0)
foreach(row IN LISTS gemm_lines)
  # Exact kernels (no -dq / -e2e suffix): the last column is the error against the int64 reference.
  if(row MATCHES "^cpu,int8-[a-z0-9]+,33,45,70,1,.*,([^,]+)$")
    math(EXPR n_exact "${n_exact} + 1")
    if(NOT CMAKE_MATCH_1 STREQUAL "0")
      fail("bench gemm: exact int8 kernel differs from the reference: ${row}")
    endif()
  endif()
endforeach()
if(n_exact LESS 2)
  fail("bench gemm: expected exact int8 rows, got: ${out}")
endif()
# --reps is a floor even above the 1000 runs that --min-time is capped at (it was std::clamp with lo > hi).
run(bench gemm --backend cpu --shape 4x8x4 --threads 1 --kernels int8-generic --reps 1500 --min-time 1)
expect_ok("bench gemm --reps 1500")
if(NOT err MATCHES "int8-generic 4x8x4: [0-9]+ outputs checked, 1500 timed runs")
  fail("bench gemm --reps 1500: expected 1500 timed runs, stderr: ${err}")
endif()
run(bench gemm --backend cpu --shape 0x4x4)
expect_error("bench gemm bad shape" "shape|size|positive")

# bench error-view: the Error tab's computation, checked against a plain loop and apply_scheme, then timed.
run(bench error-view --n 65536 --scheme e2m1fn/block:32:e8m0fnu --reps 1)
expect_ok("bench error-view")
expect_match("bench error-view header" "${out}" "^scheme,n,threads,simd,ms,apply_ms,x_apply,budget_ms,ratio,sqnr_db\ne2m1fn/block:32:e8m0fnu,65536,1,[a-z0-9]+,[0-9.e+-]+,[0-9.e+-]+,[0-9.e+-]+,150,[0-9.e+-]+,[0-9.]+\n$")
run(bench error-view --n 1000 --scheme e4m3fn/chanel:0)
expect_error("bench error-view bad scheme" "granularity")

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} failure(s)")
endif()
message(STATUS "cli_contract: all checks passed")
