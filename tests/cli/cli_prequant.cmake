# The `analyze` contract for pre-quantized checkpoints (issue 13): for each recognised convention, the
# weight's "stored:<scheme>" CSV row (its amax, and an SQNR of inf where the stored scheme reproduces its own
# values exactly) and the stderr re-quantization line: 0 differences for a fixture made by the matching rule,
# and, for the perturbed fixture (one block whose values top out below the format's top code), that block's
# scale and every one of its codes. The fixtures come from `qs_hostile_inputs prequant DIR`; every number
# expected here follows from their construction (tests/cli/hostile_inputs.cpp, write_prequant) and the formats'
# definitions, never from the program's output:
#   amax = the top value of the largest block: e4m3fn 448, e2m1 6, int4 7, int8 127, times the block's scale.
# A file with a malformed group: one skipped line, the other tensors analysed.
# Run: ctest --test-dir build -R cli_prequant --output-on-failure
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

execute_process(COMMAND ${GEN} prequant ${WORK} RESULT_VARIABLE grc ERROR_VARIABLE gerr)
if(NOT grc EQUAL 0)
  message(FATAL_ERROR "qs_hostile_inputs prequant: ${gerr}")
endif()

# A literal string as a regular expression, for expect_match: a macro, whose arguments are read once more
# (so each escaping backslash is doubled here).
function(re_escape out text)
  string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\\\\\1" e "${text}")
  set(${out} "${e}" PARENT_SCOPE)
endfunction()

# check(<file> <tensor> <scheme> <convention> <stored label> <amax> <codes differ> <codes> <scales differ>
#       <scales> <exact> [note]): analyze <file>; the CSV has the tensor's row with the stored label in the
# dtype column and its stored:<scheme> row (amax; mse 0 and SQNR inf when <exact>, else a finite SQNR);
# stderr has the re-quantization line (ending with [note] when given).
function(check file tensor scheme convention label amax cdiff ctotal sdiff stotal exact)
  set(note "${ARGN}")
  run(analyze --in ${WORK}/${file} --scheme e4m3fn/tensor)
  expect_ok("${file}: analyze")
  re_escape(t "${tensor}")
  re_escape(s "${scheme}")
  re_escape(l "${label}")
  re_escape(a "${amax}")
  # The stored label sits in the dtype column (quoted when it holds a comma).
  expect_match("${file}: stored label" "${out}" ",${t},[^,\n]?${l}[^,\n]?,")
  expect_match("${file}: analysed with a user scheme" "${out}" ",${t},[^\n]*,e4m3fn/tensor,")
  if(exact)
    expect_match("${file}: stored row, mse 0 and SQNR inf" "${out}" ",${t},[^\n]*,stored:${s},${a},0,inf,0,0,")
  else()
    expect_match("${file}: stored row, a finite SQNR" "${out}" ",${t},[^\n]*,stored:${s},${a},[0-9.e-]+,[0-9]+[.][0-9]+,")
  endif()
  re_escape(c "${convention}")
  set(line "analyze: ${tensor}: stored ${scheme} (${convention}); re-quantized: ${cdiff} of ${ctotal} codes and ${sdiff} of ${stotal} scales differ")
  if(NOT note STREQUAL "")
    string(APPEND line "; ${note}")
  endif()
  re_escape(want "${line}")
  expect_match("${file}: re-quantization line" "${err}" "(^|\n)${want}\n")
  set(failures ${failures} PARENT_SCOPE)
endfunction()

# DeepSeek-V3 FP8: [256, 256], tiles of 128 x 128 (scale_inv 2^-9, 1.5 * 2^-10, 1.25 * 2^-10, 1.75 * 2^-11: amax
# 448 * 2^-9); the perturbed tile (the second) tops out at 224: its scale re-derives as half, and each of its
# 16384 codes (none is 0) doubles.
set(w model.layers.0.mlp.down_proj.weight)
set(l "FP8 block scales: e4m3fn/block:128x128 (scale_inv fp32)")
check(fp8_block.safetensors ${w} e4m3fn/block:128x128 "FP8 block scales" "${l}" 0.875 0 65536 0 4 TRUE)
check(fp8_block_perturbed.safetensors ${w} e4m3fn/block:128x128 "FP8 block scales" "${l}" 0.875 16384 65536 1 4 TRUE)

# gpt-oss MXFP4: [4, 64], blocks of 32, exponents 120 + k % 7 (the largest 126: amax 6 * 2^-1); block 3
# tops out at 3: half the scale, its 32 codes move.
set(w model.layers.0.mlp.experts.down_proj)
set(l "MXFP4: e2m1fn/block:32:e8m0fnu (blocks + e8m0 scales)")
check(mxfp4.safetensors ${w} e2m1fn/block:32:e8m0fnu MXFP4 "${l}" 3 0 256 0 8 TRUE)
check(mxfp4_perturbed.safetensors ${w} e2m1fn/block:32:e8m0fnu MXFP4 "${l}" 3 32 256 1 8 TRUE)

# compressed-tensors int4: [4, 64], groups of 32, scales (1 + k % 4 / 4) * 2^-7 (amax 7 * 1.75 * 2^-7);
# group 5 tops out at 3: scale 3 s / 7, its 32 codes move, and int4 cannot hold them exactly (finite SQNR).
set(w model.layers.0.self_attn.q_proj.weight)
set(l "compressed-tensors int4: int4/block:32 (weight_scale fp32)")
check(ct_int4.safetensors ${w} int4/block:32 "compressed-tensors int4" "${l}" 0.095703125 0 256 0 8 TRUE)
check(ct_int4_perturbed.safetensors ${w} int4/block:32 "compressed-tensors int4" "${l}" 0.095703125 32 256 1 8 FALSE)

# NVFP4, both spellings: [4, 64], blocks of 16, block 0's e4m3fn scale 448 with a 6 (amax 6 * 448 * 2^-12);
# tensor scale 2^-12 (compressed-tensors: global scale 4096, which divides; ModelOpt: weight_scale_2 2^-12,
# which multiplies); block 6 tops out at 3: its e4m3fn scale halves, its 16 codes move.
set(ts "0.000244140625")
set(w model.layers.0.mlp.gate_proj.weight)
set(l "NVFP4 (compressed-tensors): e2m1fn/block:16:e4m3fn (weight_scale e4m3fn / weight_global_scale fp32)")
set(n "tensor scale: stored 1 / global scale = ${ts}, QuantScope's amax / 2688 = ${ts}")
check(nvfp4_ct.safetensors ${w} e2m1fn/block:16:e4m3fn "NVFP4 (compressed-tensors)" "${l}" 0.65625 0 256 0 16 TRUE "${n}")
check(nvfp4_ct_perturbed.safetensors ${w} e2m1fn/block:16:e4m3fn "NVFP4 (compressed-tensors)" "${l}" 0.65625 16 256 1 16 TRUE "${n}")
set(w model.layers.0.mlp.up_proj.weight)
set(l "NVFP4 (ModelOpt): e2m1fn/block:16:e4m3fn (weight_scale e4m3fn * weight_scale_2 fp32, input_scale)")
set(n "tensor scale: stored weight_scale_2 = ${ts}, QuantScope's amax / 2688 = ${ts}")
check(nvfp4_modelopt.safetensors ${w} e2m1fn/block:16:e4m3fn "NVFP4 (ModelOpt)" "${l}" 0.65625 0 256 0 16 TRUE "${n}")
check(nvfp4_modelopt_perturbed.safetensors ${w} e2m1fn/block:16:e4m3fn "NVFP4 (ModelOpt)" "${l}" 0.65625 16 256 1 16 TRUE "${n}")

# compressed-tensors MXFP4: [4, 64], exponents 110 + 3 k (the largest 131: amax 6 * 2^4); block 3 perturbed.
set(w model.layers.0.mlp.down_proj.weight)
set(l "MXFP4 (compressed-tensors): e2m1fn/block:32:e8m0fnu (weight_scale e8m0fnu)")
check(ct_mxfp4.safetensors ${w} e2m1fn/block:32:e8m0fnu "MXFP4 (compressed-tensors)" "${l}" 96 0 256 0 8 TRUE)
check(ct_mxfp4_perturbed.safetensors ${w} e2m1fn/block:32:e8m0fnu "MXFP4 (compressed-tensors)" "${l}" 96 32 256 1 8 TRUE)

# ONNX QDQ: int8 [4, 16] per row, scales (1 + r / 4) * 2^-8 (amax 127 * 1.75 * 2^-8); row 1 tops out at 63.
if(HAVE_ONNX)
  set(l "ONNX QDQ: int8/channel:0 (scale fp32)")
  check(qdq.onnx w int8/channel:0 "ONNX QDQ" "${l}" 0.8681640625 0 64 0 4 TRUE)
  check(qdq_perturbed.onnx w int8/channel:0 "ONNX QDQ" "${l}" 0.8681640625 16 64 1 4 FALSE)
endif()

# Bad input: a ModelOpt NVFP4 weight whose weight_scale has 3 rows for 4: one skipped line naming why, the
# group's tensors listed as stored, and the other tensor analysed.
run(analyze --in ${WORK}/modelopt_bad.safetensors --scheme int8/tensor)
expect_ok("modelopt_bad: analyze")
re_escape(want "modelopt_bad.safetensors: w: looks like NVFP4 (ModelOpt) but w_scale has shape [3, 4], not [4, blocks] for a weight of shape [4, 32]; its tensors are listed as stored")
expect_match("modelopt_bad: one skipped line" "${err}" "analyze: skipped [^\n]*${want}\n")
string(REGEX MATCHALL "looks like" looks "${err}")
list(LENGTH looks nlooks)
if(NOT nlooks EQUAL 1)
  fail("modelopt_bad: ${nlooks} skipped lines, want 1: ${err}")
endif()
expect_match("modelopt_bad: the other tensor analysed" "${out}" ",other,float32,[^\n]*,int8/tensor,")
if(err MATCHES "re-quantized")
  fail("modelopt_bad: a re-quantization line for a refused group: ${err}")
endif()

qs_cli_finish()
