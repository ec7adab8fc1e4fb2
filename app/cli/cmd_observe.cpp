// `observe`: observers over a stream of batches (quant/observe_stream.h) -> one CSV row per batch and
// observer: the clip each observer uses, the scale, the batch's SQNR and clipped count. Batches are the rows
// of a file tensor split along axis 0, or synthetic with drift and spikes.
#include <cmath>
#include <sstream>

#include "cli/commands.h"
#include "io/atomic_file.h"
#include "io/csv.h"
#include "io/tensor_file.h"
#include "quant/observe_stream.h"
#include "quant/synthetic.h"

namespace qs::cli {

void add_observe(CLI::App& app) {
  auto* c = app.add_subcommand("observe", "Observers (MinMax, moving average, percentile, MSE, delayed scaling) over a stream of batches; CSV of their scales and errors");
  struct Opts {
    std::string in, tensor, csv, format = "e4m3fn", dist = "normal",
        observers = "current,minmax,movavg:0.01,p99.99,mse,delayed:16:max:0", spikes;
    uint64_t batches = 100, batch_size = 4096, seed = 1;
    double drift = 0, spike_scale = 20;
  };
  static Opts o;
  c->add_option("--in", o.in, "Tensor file: the batches are the rows of --tensor (axis 0) split into --batches parts");
  c->add_option("--tensor", o.tensor, "Tensor name in --in (default: the first float tensor with at least --batches rows)");
  c->add_option("--format", o.format, "Element format the scales are for")->capture_default_str();
  c->add_option("--observers", o.observers, "Comma-separated: current, minmax, movavg[:c], p<pct>, mse, delayed[:len[:max|recent[:margin]]]")
      ->capture_default_str();
  c->add_option("--batches", o.batches, "Batches")->capture_default_str()->check(integer_in(1, 1000000));
  c->add_option("--batch-size", o.batch_size, "Synthetic: values per batch")->capture_default_str()->check(integer_in(1, 1u << 26));
  c->add_option("--dist", o.dist, "Synthetic: normal | laplace | uniform | student-t | outliers")->capture_default_str();
  c->add_option("--drift", o.drift, "Synthetic: the scale grows by this fraction per batch (0.01 = 1 %)")->capture_default_str()
      ->check(CLI::Range(-0.5, 10.0));
  c->add_option("--spikes", o.spikes, "Synthetic: comma-separated batch indices scaled by --spike-scale");
  c->add_option("--spike-scale", o.spike_scale, "Synthetic: the factor of a spike batch")->capture_default_str()
      ->check(CLI::Range(1e-6, 1e6));
  c->add_option("--seed", o.seed, "Synthetic: seed")->capture_default_str()->check(seed_check());
  c->add_option("--csv", o.csv, "Write the CSV here instead of stdout");
  c->callback([] {
    const Format f = parse_format(o.format);
    ObserveStream stream(f, parse_observer_specs(o.observers));
    if (!o.csv.empty()) check_writable(o.csv);
    std::ostringstream out;
    out.precision(9);
    out << "batch,observer,batch_amax,clip,scale,sqnr_db,clipped\n";
    auto emit_rows = [&](const std::vector<ObserveRow>& rows) {
      for (const ObserveRow& r : rows)
        out << r.batch << ',' << r.observer->text << ',' << fmt_value(r.batch_amax) << ',' << fmt_value(r.clip) << ','
            << fmt_value(r.scale) << ',' << fmt_value(r.sqnr_db) << ',' << r.clipped << '\n';
    };
    if (!o.in.empty()) {
      const auto file = open_tensor_file(o.in);
      const auto& ts = file->tensors();
      std::size_t pick = ts.size();
      for (std::size_t i = 0; i < ts.size(); ++i) {
        const TensorInfo& t = ts[i];
        const bool fits = dtype_is_float(t.dtype) && !t.shape.empty() && uint64_t(t.shape[0]) >= o.batches;
        if (o.tensor.empty() ? fits : t.name == o.tensor) {
          pick = i;
          break;
        }
      }
      if (pick == ts.size())
        throw std::runtime_error(o.in + ": " + (o.tensor.empty() ? "no float tensor with at least " + std::to_string(o.batches) + " rows"
                                                                   : "no tensor named '" + o.tensor + "'"));
      const TensorInfo& t = ts[pick];
      if (!dtype_is_float(t.dtype) || t.shape.empty() || uint64_t(t.shape[0]) < o.batches)
        throw std::runtime_error(o.in + ": " + t.name + ": not a float tensor with at least " + std::to_string(o.batches) + " rows");
      check_memory(uint64_t(t.numel()) * 4, "tensor " + t.name);
      std::vector<float> x(t.numel());
      file->read_f32(pick, x.data());
      const std::size_t rows = std::size_t(t.shape[0]), row = t.numel() / rows;
      for (uint64_t b = 0; b < o.batches; ++b) {
        const std::size_t r0 = rows * b / o.batches, r1 = rows * (b + 1) / o.batches;
        emit_rows(stream.step(x.data() + r0 * row, (r1 - r0) * row));
      }
    } else {
      SyntheticStream stream_spec;
      try {
        stream_spec.spikes = parse_batch_list(o.spikes);
      } catch (const FormatError& e) {
        throw std::runtime_error(std::string("--spikes ") + e.what());
      }
      stream_spec.dist = parse_distribution(o.dist);
      stream_spec.batch_size = o.batch_size;
      stream_spec.drift = o.drift;
      stream_spec.spike_scale = o.spike_scale;
      stream_spec.seed = o.seed;
      for (uint64_t b = 0; b < o.batches; ++b) {
        const std::vector<float> x = synthetic_batch(stream_spec, b);
        emit_rows(stream.step(x.data(), x.size()));
      }
    }
    emit(out.str(), o.csv);
  });
}

}  // namespace qs::cli
