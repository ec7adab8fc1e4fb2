// A kernel trace for the GPU machine, which has no Nsight Systems: a CUPTI injection library that records every
// kernel's GPU start and end (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which does not serialize kernels) and
// writes them as CSV (start_ns, end_ns, name) when the process exits. A diagnostic, not part of QuantScope.
//   g++ -shared -fPIC -O2 -I<cuda>/include tests/gpu/ktrace/ktrace.cpp -o libktrace.so -L<cuda>/lib64 -lcupti
//   CUDA_INJECTION64_PATH=$PWD/libktrace.so KTRACE_OUT=trace.csv QS_BENCH_BATCH=20 quantscope-cli bench gemm ...
//   python3 tests/gpu/ktrace/summary.py trace.csv
// (tests/gpu/ktrace/run.sh does all three.) Session 20 used it to split the back-to-back time of the GEMM
// benchmark into kernel durations and the gaps between launches (notes/issue18-gemm-tma.md).
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Kernel {
  unsigned long long start, end;
  std::string name;
};
std::vector<Kernel> kernels;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = std::size_t(16) << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      kernels.push_back({k->start, k->end, k->name ? k->name : "?"});
    }
  std::free(buffer);
}

void write_trace() {
  cuptiActivityFlushAll(1);
  const char* path = std::getenv("KTRACE_OUT");
  FILE* f = std::fopen(path ? path : "ktrace.csv", "w");
  if (!f) {
    std::fprintf(stderr, "ktrace: cannot write %s\n", path ? path : "ktrace.csv");
    return;
  }
  std::fprintf(f, "start,end,name\n");
  for (const Kernel& k : kernels) std::fprintf(f, "%llu,%llu,%s\n", k.start, k.end, k.name.c_str());
  std::fclose(f);
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "ktrace: CUPTI activity tracing unavailable\n");
    return 0;
  }
  std::atexit(write_trace);
  return 1;
}
