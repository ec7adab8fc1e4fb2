// The responsiveness benchmark of issue 4: while the Error tab analyses 16 M values under 3 schemes, the
// event loop must never stall more than 100 ms. A 10 ms QTimer measures the largest gap between its
// ticks from the moment the tensor is set until the results are on screen. `quantscope --bench-ui`.
#pragma once

#include <QTextStream>

#include <cstddef>

// Prints "values,schemes,compute_ms,max_gap_ms,budget_ms,ratio" and one row (ratio = max_gap / budget).
// Returns 0 within budget, 1 over budget, 2 when the computation did not finish (60 s) or failed.
// `values` must be a multiple of 4096 (the tensor is values/4096 x 4096).
int runUiBenchmark(QTextStream& out, std::size_t values = std::size_t(1) << 24);

// The Observers tab streaming as fast as it can (every observer, MSE search included, `batches` batches of
// `batchSize` values): prints "batches,batch_size,observers,stream_ms,max_gap_ms,budget_ms,ratio" and one row.
// Returns 0 within the 100 ms budget, 1 over it, 2 when the stream did not finish (120 s).
int runObserversUiBenchmark(QTextStream& out, int batches = 200, int batchSize = 65536);
