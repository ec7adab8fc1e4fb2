# The `quantscope-cli info` contract: a GGUF file's metadata and tensors (block types named, shapes in C order,
# bytes as stored), its skipped tensors with the reason, a .npy beside it, and one stderr line for a file
# that cannot be opened (and no output for the good one before it).
# Run: ctest --test-dir build -R cli_info --output-on-failure
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

set(corpus ${SRC}/fuzz/corpus/gguf)
run(info ${corpus}/blocks.gguf ${corpus}/skipped.gguf)
expect_ok("info gguf")
expect_match("header" "${out}" "# [^\n]*blocks.gguf: gguf, 4 tensors [(]405 bytes[)], 3 metadata entries, 0 not read\n")
expect_match("array metadata" "${out}" "\nmeta\ttokenizer.ggml.tokens\t[[]a, bb, ccc[]]\n")
expect_match("Q8_0 tensor" "${out}" "\ntensor\tq8\tQ8_0\t32\t34\n")
expect_match("Q4_K tensor" "${out}" "\ntensor\tq4k\tQ4_K\t256\t144\n")
expect_match("MXFP4 tensor" "${out}" "\ntensor\tmx\tMXFP4\t32\t17\n")
expect_match("skipped IQ" "${out}" "\nskipped\tiq: ggml type IQ2_XXS is not decoded by QuantScope, not read\n")

# analyze reads the quantized tensors dequantized and names their stored type in the dtype column.
run(analyze --in ${corpus}/blocks.gguf --scheme q4_k --scheme e2m1fn/block:32:e8m0fnu)
expect_ok("analyze gguf")
expect_match("analyze stored type" "${out}" ",q4k,Q4_K,256,256,q4_k,")

run(info ${corpus}/plain.gguf ${WORK}/missing.gguf)
expect_error("info missing file" "missing.gguf")
if(NOT out STREQUAL "")
  fail("info printed output although a file failed: ${out}")
endif()
run(info)
expect_error("info without files" "files")

qs_cli_finish()
