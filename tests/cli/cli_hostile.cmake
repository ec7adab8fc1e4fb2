# The hostile-input catalogue of issue 20 (shared/reliability-findings.md, F-numbers below), as data-driven
# cases against quantscope-cli: each runs a command and states what must happen: exit 0 with output
# matching OUT, or an error (one stderr line, non-zero exit) matching ERR, within a time limit, with no
# crash. Inputs are generated here (qs_hostile_inputs, sparse files); nothing large is in the repository.
# Run: ctest --test-dir build -R cli_hostile --output-on-failure
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
set(DATA ${SRC}/data)

# hostile(<case> [OK | ERR <regex>] [OUT <regex>] [TIMEOUT s] [STDOUT_FILE f] ARGS <cli args...>)
function(hostile name)
  cmake_parse_arguments(H "OK" "ERR;OUT;TIMEOUT;STDOUT_FILE" "ARGS" ${ARGN})
  if(NOT H_TIMEOUT)
    set(H_TIMEOUT 60)
  endif()
  set(redirect)
  if(H_STDOUT_FILE)
    set(redirect OUTPUT_FILE ${H_STDOUT_FILE})
  else()
    set(redirect OUTPUT_VARIABLE out)
  endif()
  execute_process(COMMAND ${CLI} ${H_ARGS} RESULT_VARIABLE rc ${redirect} ERROR_VARIABLE err TIMEOUT ${H_TIMEOUT})
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl lines)
  if(NOT rc MATCHES "^[0-9]+$")
    fail("${name}: did not finish cleanly (${rc}): ${err}")
  elseif(H_OK)
    if(NOT rc EQUAL 0)
      fail("${name}: exit ${rc}, stderr: ${err}")
    elseif(H_OUT AND NOT "${out}" MATCHES "${H_OUT}")
      fail("${name}: stdout lacks '${H_OUT}': ${out}")
    endif()
  else()
    if(rc EQUAL 0)
      fail("${name}: expected an error, got exit 0 (stdout: ${out})")
    elseif(NOT lines EQUAL 1)
      fail("${name}: expected one stderr line, got ${lines}: ${err}")
    elseif(NOT err MATCHES "${H_ERR}")
      fail("${name}: stderr lacks '${H_ERR}': ${err}")
    endif()
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
  set(rc "${rc}" PARENT_SCOPE)
  set(failures ${failures} PARENT_SCOPE)
endfunction()

macro(gen)
  execute_process(COMMAND ${GEN} ${ARGN} RESULT_VARIABLE grc ERROR_VARIABLE gerr)
  if(NOT grc EQUAL 0)
    message(FATAL_ERROR "qs_hostile_inputs ${ARGN}: ${gerr}")
  endif()
endmacro()

set(W ${WORK})
gen(npy ${W}/w.npy ramp)

# F1: tensor names of 30,000 and 200,000 characters (the regex filter recursed per character).
gen(st-name ${W}/long30k.safetensors 30000)
gen(st-name ${W}/long200k.safetensors 200000)
hostile(st-longname30k OK OUT "long30k.safetensors,LLLL" ARGS analyze --in ${W}/long30k.safetensors --scheme int8/tensor)
hostile(st-longname200k OK OUT ",LLLL" ARGS analyze --in ${W}/long200k.safetensors --scheme int8/tensor)
hostile(st-longname-filter OK OUT ",LLLL" ARGS analyze --in ${W}/long200k.safetensors --scheme int8/tensor --tensor "^L+$")
hostile(st-bad-regex ERR "--tensor.*not a valid regular expression" ARGS analyze --in ${W}/w.npy --scheme int8/tensor --tensor "(")

# F3: special files and symlinks as outputs. Links under WORK point at /dev/null and /dev/full, so a
# regression replaces a link of ours, never a device node of the machine.
file(CREATE_LINK /dev/null ${W}/null SYMBOLIC)
file(CREATE_LINK /dev/full ${W}/full SYMBOLIC)
hostile(out-devnull OK ARGS formats --csv ${W}/null)
if(NOT IS_SYMLINK ${W}/null)
  fail("out-devnull: the symlink to /dev/null was replaced by a file")
endif()
hostile(out-devfull ERR "full.*No space left on device" ARGS formats --csv ${W}/full)
hostile(out-quantize-devnull OK ARGS quantize --format e4m3fn --in ${W}/w.npy --out ${W}/null --codes ${W}/null2.npy)
file(WRITE ${W}/real.csv "old")
file(CREATE_LINK real.csv ${W}/link.csv SYMBOLIC)
hostile(out-symlink OK ARGS formats --csv ${W}/link.csv)
file(READ ${W}/real.csv real)
if(NOT IS_SYMLINK ${W}/link.csv OR NOT real MATCHES "^name,bits,")
  fail("out-symlink: the link must stay and its target get the CSV (target: ${real})")
endif()
file(CREATE_LINK ${W}/no-such-target.csv ${W}/dangling.csv SYMBOLIC)
hostile(out-dangling ERR "symbolic link to a file that does not exist" ARGS formats --csv ${W}/dangling.csv)
hostile(out-dir ERR "is a directory" ARGS formats --csv ${W})

# F4: stdout that cannot take the output.
hostile(stdout-devfull ERR "stdout: No space left on device" STDOUT_FILE /dev/full ARGS formats)
hostile(stdout-devfull-analyze ERR "stdout: No space left on device" STDOUT_FILE /dev/full
        ARGS analyze --in ${W}/w.npy --scheme int8/tensor)
execute_process(COMMAND sh -c "exec \"$0\" formats >&-" ${CLI} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "stdout: ")
  fail("stdout-closed: exit ${rc}, ${err}")
endif()

# F8: bench analyze removes its temp file on Ctrl-C and SIGTERM, and refuses a file larger than the free space.
file(MAKE_DIRECTORY ${W}/bench)
foreach(sig INT TERM)
  execute_process(COMMAND sh -c "\"$0\" bench analyze --size-mb 256 --tensors 4 --dir \"$1\" 2>/dev/null & p=$!; \
i=0; while [ $i -lt 100 ] && [ -z \"$(ls \"$1\")\" ]; do sleep 0.05; i=$((i+1)); done; kill -${sig} $p; wait $p; echo rc=$?"
                  ${CLI} ${W}/bench OUTPUT_VARIABLE sout TIMEOUT 120)
  file(GLOB left ${W}/bench/*)
  if(left)
    fail("bench-analyze-sig${sig}: left ${left} behind (${sout})")
  endif()
endforeach()
hostile(bench-analyze-nospace ERR "does not fit in .*GB free" ARGS bench analyze --size-mb 4194304 --dir ${W}/bench)
hostile(bench-analyze-tiny ERR "do not fit" ARGS bench analyze --size-mb 1 --tensors 1000 --dir ${W}/bench)

# F9: quantize validates the header before reading the data, and refuses streams.
hostile(quantize-devzero ERR "not a regular file" TIMEOUT 20 ARGS quantize --format e4m3fn --in /dev/zero --out ${W}/z.npy)
file(WRITE ${W}/bigbad.npy "NOT A NUMPY FILE")
execute_process(COMMAND truncate -s 3G ${W}/bigbad.npy)  # sparse: no disk space used
hostile(quantize-bigbadmagic ERR "bad magic" TIMEOUT 20 ARGS quantize --format e4m3fn --in ${W}/bigbad.npy --out ${W}/z.npy)
file(REMOVE ${W}/bigbad.npy)

# F10: sizes beyond the machine are refused with the figures, before allocating.
hostile(bench-n-huge ERR "needs [0-9.]+ GB of memory, this machine has" ARGS bench quantize --n 1000000000000)
hostile(bench-ev-n-huge ERR "needs [0-9.]+ GB of memory" ARGS bench error-view --n 60000000000)
hostile(gemm-shape-huge ERR "needs [0-9.]+ GB of memory" ARGS bench gemm --backend cpu --shape 200000x200000x200000)

# F11: control bytes in names are escaped in the CSV (no raw ESC reaches a terminal), rows stay rows.
gen(st-ctrl ${W}/ctrl.safetensors)
hostile(st-ctrlname OK ARGS analyze --in ${W}/ctrl.safetensors --scheme int8/tensor)
string(ASCII 27 esc)
string(FIND "${out}" "${esc}" at)
if(NOT at EQUAL -1)
  fail("st-ctrlname: a raw ESC byte reached the CSV")
endif()
if(NOT out MATCHES "\"bad\\\\x1b\\[31m\nname,\"\"with\"\" comma\",float32,")
  fail("st-ctrlname: the name is not escaped and quoted: ${out}")
endif()

if(HAVE_NPZ)  # the .npz cases need the .npz reader (libzip); the GPU machine builds without it
# F11: every CSV cell that holds a comma, a quote or a line break is quoted (RFC 4180): an .npz whose
# member (the tensor name) and file name hold all three.
set(npz "${W}/we,ird\"\nfile.npz")
gen(npz-odd "${npz}")
hostile(npz-oddname OK ARGS analyze --in "${npz}" --scheme e4m3fn/tensor --scheme int8/tensor --histogram-csv ${W}/odd_hist.csv)
if(NOT err MATCHES "analyze: skipped [^\n]*file.npz: notes.txt: not an .npy member")
  fail("npz-oddname: the member that is not a tensor is not named: ${err}")
endif()
string(REPLACE "\"" "\"\"" qpath "${npz}")
set(row_start "\"${qpath}\",\"a,\"\"b\nc\",float32,")
string(FIND "${out}" "\n${row_start}" at)
if(at LESS 0)
  fail("npz-oddname: the file and tensor cells are not RFC 4180 quoted: ${out}")
endif()
# Read back as RFC 4180: outside quotes, every record has the header's 15 fields.
string(REGEX REPLACE "\"([^\"]|\"\")*\"" "Q" unquoted "${out}")
string(REGEX REPLACE "\n$" "" unquoted "${unquoted}")
string(REPLACE "\n" ";" records "${unquoted}")
list(LENGTH records nrec)
if(NOT nrec EQUAL 3)
  fail("npz-oddname: ${nrec} records read back (header + 2 schemes expected): ${out}")
endif()
foreach(rec IN LISTS records)
  string(REGEX MATCHALL "," commas "${rec}")
  list(LENGTH commas nc)
  if(NOT nc EQUAL 14)
    fail("npz-oddname: a record with ${nc} commas outside quotes: ${rec}")
  endif()
endforeach()
file(READ ${W}/odd_hist.csv hist)
string(FIND "${hist}" "\n\"${qpath}\",\"a,\"\"b\nc\",e4m3fn/tensor," at)
if(at LESS 0)
  fail("npz-oddname: --histogram-csv cells are not quoted")
endif()
else()
  message(STATUS "cli_hostile: .npz cases skipped (this build has no .npz reader)")
endif()

# Issue 13 item 4: a sharded model (index + 2 shards) is one model: one table whose file column is the
# index or the folder, each tensor once; a shard tensor outside the index is named as not read; a bad
# index is one line.
foreach(v ok missing escape twice)
  file(MAKE_DIRECTORY ${W}/sharded-${v})
  gen(sharded ${W}/sharded-${v} ${v})
endforeach()
set(idx ${W}/sharded-ok/model.safetensors.index.json)
foreach(in ${idx} ${W}/sharded-ok)
  hostile(sharded-analyze OK ARGS analyze --in ${in} --scheme int8/tensor --scheme e4m3fn/tensor)
  string(REPLACE "." "\\." rin "${in}")  # the path as a regex (build paths hold no other special characters)
  string(REPLACE "+" "\\+" rin "${rin}")
  string(REGEX MATCHALL "\n[^\n]+" rows "${out}")
  list(LENGTH rows nrows)
  foreach(t w0 w1 w2)
    string(REGEX MATCHALL "\n${rin},${t},float32,2x4," hits "${out}")
    list(LENGTH hits n)
    if(NOT n EQUAL 2)
      fail("sharded-analyze --in ${in}: tensor ${t} has ${n} rows, not one per scheme: ${out}")
    endif()
  endforeach()
  if(NOT nrows EQUAL 6)
    fail("sharded-analyze --in ${in}: ${nrows} rows, expected 3 tensors x 2 schemes: ${out}")
  endif()
  if(NOT err MATCHES "analyze: skipped ${rin}: extra: in model-00002-of-00002\\.safetensors but not in the index")
    fail("sharded-analyze --in ${in}: the shard tensor outside the index is not named: ${err}")
  endif()
endforeach()
hostile(sharded-missing ERR "model.safetensors.index.json: shard 'model-00003-of-00003.safetensors' \\(named for 1 tensor, e.g. 'w3'\\) is missing"
        ARGS analyze --in ${W}/sharded-missing/model.safetensors.index.json --scheme int8/tensor)
hostile(sharded-escape ERR "w2: shard '../model-00002-of-00002.safetensors' leaves the index's folder"
        ARGS analyze --in ${W}/sharded-escape --scheme int8/tensor)
hostile(sharded-twice ERR "w1: in two shards, 'model-00001-of-00002.safetensors' \\(as the index says\\) and 'model-00002"
        ARGS analyze --in ${W}/sharded-twice/model.safetensors.index.json --scheme int8/tensor)
file(SIZE ${W}/sharded-ok/model-00002-of-00002.safetensors shard_size)
hostile(csv-is-shard ERR "--csv is the input --in .*model-00002-of-00002.safetensors; refusing to overwrite an input"
        ARGS analyze --in ${W}/sharded-ok --scheme int8/tensor --csv ${W}/sharded-ok/model-00002-of-00002.safetensors)
file(SIZE ${W}/sharded-ok/model-00002-of-00002.safetensors shard_size2)
if(NOT shard_size EQUAL shard_size2)
  fail("csv-is-shard: the shard was overwritten")
endif()
file(WRITE ${W}/config.json "{\"hidden_size\": 4}")
hostile(json-not-index ERR "config.json: not a sharded-model index: no \"weight_map\""
        ARGS analyze --in ${W}/config.json --scheme int8/tensor)

# F12: a FIFO as input fails at once instead of hanging.
execute_process(COMMAND mkfifo ${W}/fifo.npy)
hostile(path-in-fifo ERR "not a regular file" TIMEOUT 20 ARGS analyze --in ${W}/fifo.npy --scheme int8/tensor)
hostile(path-in-fifo-q ERR "not a regular file" TIMEOUT 20 ARGS quantize --format e4m3fn --in ${W}/fifo.npy --out ${W}/z.npy)

# F13: degenerate numbers say so.
gen(npy ${W}/nan.npy nan)
gen(npy ${W}/inf.npy inf)
gen(npy ${W}/big64.npy big64)
hostile(npy-nan-q OK OUT "sqnr_db=nan" ARGS quantize --format e4m3fn --in ${W}/nan.npy --out ${W}/nan_y.npy)
hostile(npy-inf-q OK OUT "sqnr_db=nan" ARGS quantize --format e4m3fn --in ${W}/inf.npy --out ${W}/inf_y.npy)
hostile(npy-f64big-q OK ARGS quantize --format e4m3fn --scale none --in ${W}/big64.npy --out ${W}/big_y.npy)
if(NOT err MATCHES "3 finite float64 inputs exceed float32's range")
  fail("npy-f64big-q: no warning about float64 values beyond float32: ${err}")
endif()

# F14: bad values are refused with the valid range, not clamped or wrapped.
hostile(threads-neg ERR "--threads.*not an integer from 0 to 1024" ARGS quantize --format e4m3fn --in ${W}/w.npy --out ${W}/t.npy --threads -1)
hostile(seed-2p64 ERR "--seed.*not an integer from 0 to 18446744073709551615" ARGS quantize --format e4m3fn --in ${W}/w.npy --out ${W}/t.npy --seed 18446744073709551616)
hostile(seed-neg ERR "--seed.*not an integer from 0" ARGS analyze --in ${W}/w.npy --scheme int8/tensor --seed -1)
hostile(seed-huge ERR "--seed" ARGS train --dataset synthetic --seed 99999999999999999999999)
hostile(size-mb-wrap ERR "--size-mb.*not an integer from 1 to" ARGS bench analyze --size-mb 17592186044416)
if(HAVE_NPZ)
  gen(npz-notes ${W}/notes.npz)
  hostile(npz-no-npy ERR "nothing analysed: 0 tensors skipped .*, 2 entries not read \\(.*notes.npz: README.txt: not an .npy member, ...\\)"
          ARGS analyze --in ${W}/notes.npz --scheme int8/tensor)
endif()
hostile(channel-axis-beyond ERR "nothing analysed.*channel axis beyond" ARGS analyze --in ${W}/w.npy --scheme int8/channel:7)

# F15: an output never overwrites an input or another output.
hostile(csv-is-input ERR "--csv is the input --in" ARGS analyze --in ${W}/w.npy --scheme int8/tensor --csv ${W}/w.npy)
file(SIZE ${W}/w.npy wsize)
if(wsize LESS 128)
  fail("csv-is-input: the input was overwritten")
endif()
hostile(out-is-codes ERR "given to both --out and --codes" ARGS quantize --format e4m3fn --in ${W}/w.npy --out ${W}/y.npy --codes ${W}/y.npy)
hostile(out-is-in ERR "--out is the input --in" ARGS quantize --format e4m3fn --in ${W}/w.npy --out ${W}/./w.npy)
hostile(csv-is-hist ERR "given to both --csv and --histogram-csv" ARGS analyze --in ${W}/w.npy --scheme int8/tensor --csv ${W}/a.csv --histogram-csv ${W}/a.csv)

# F16: messages that help.
hostile(bench-n-0 ERR "--n.*not an integer from 1 to" ARGS bench quantize --n 0)
if(err MATCHES "1797693")
  fail("bench-n-0: the message still prints the double range: ${err}")
endif()

qs_cli_finish()
message(STATUS "cli_hostile: all cases passed")
