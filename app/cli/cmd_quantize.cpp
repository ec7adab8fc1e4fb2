// `quantize`: fake-quantize a .npy tensor with one scale, write the values (float32) and optionally
// the codes; prints one summary line. Output paths are checked before any work.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "format/quantize.h"
#include "io/atomic_file.h"
#include "io/npy.h"

namespace qs::cli {

void add_quantize(CLI::App& app) {
  auto* c = app.add_subcommand("quantize", "Fake-quantize a .npy tensor: Y = decode(encode(X / s)) * s");
  struct Opts {
    std::string format, in, out, codes, rounding = "nearest", overflow = "saturate", scale = "amax";
    uint64_t seed = 0;
    int threads = 0;
  };
  static Opts o;
  c->add_option("--format", o.format, "Format spec (e4m3fn, int8, e3m2:bias=2, ...)")->required();
  c->add_option("--in", o.in, "Input .npy (float32/64/16, int8, uint8, int32, uint16)")->required();
  c->add_option("--out", o.out, "Output .npy of float32 values")->required();
  c->add_option("--codes", o.codes, "Also write the codes (.npy, uint8 or uint16 for wider formats)");
  c->add_option("--rounding", o.rounding, "nearest | stochastic")->capture_default_str();
  c->add_option("--seed", o.seed, "Seed of stochastic rounding")->capture_default_str()->check(seed_check());
  c->add_option("--overflow", o.overflow, "saturate | ieee")->capture_default_str();
  c->add_option("--scale", o.scale, "amax (s = amax / max finite) | none | <number>")->capture_default_str();
  c->add_option("--threads", o.threads, "Worker threads (0 = all cores)")->capture_default_str()->check(threads_check());
  c->callback([] {
    const Format f = parse_format(o.format);
    EncodeOptions opt;
    opt.rounding = parse_rounding(o.rounding);
    opt.overflow = parse_overflow(o.overflow);
    opt.seed = o.seed;
    const ScaleChoice scale = parse_scale(o.scale);
    check_distinct_files({{"--out", o.out}, {"--codes", o.codes}}, {{"--in", o.in}});
    check_writable(o.out);
    if (!o.codes.empty()) check_writable(o.codes);

    const NpyArray in = read_npy(o.in);
    const std::size_t n = in.numel();
    std::vector<float> values(n);
    std::vector<uint8_t> c8;
    std::vector<uint16_t> c16;
    const bool want_codes = !o.codes.empty();
    if (want_codes) (f.bits <= 8 ? (void)c8.resize(n) : (void)c16.resize(n));
    uint8_t* p8 = c8.empty() ? nullptr : c8.data();
    uint16_t* p16 = c16.empty() ? nullptr : c16.data();

    QuantizeResult r;
    std::size_t beyond_written = 0;
    if (in.dtype == DType::F32 || in.dtype == DType::F16) {
      const std::vector<float> x = to_float32(in);  // float16 widens exactly
      r = quantize_f32(f, opt, scale, x.data(), n, values.data(), p16, p8, o.threads);
    } else {
      const std::vector<double> x = to_float64(in);  // float64 and int32 stay exact
      r = quantize_f64(f, opt, scale, x.data(), n, values.data(), p16, p8, o.threads);
      // The output is float32: say when finite float64 values do not fit it (they become ±inf there).
      std::size_t beyond = 0;
      for (double v : x) beyond += std::isfinite(v) && std::fabs(v) > double(FLT_MAX);
      for (std::size_t i = 0; beyond && i < n; ++i) beyond_written += std::isinf(values[i]);
      if (beyond)
        std::fprintf(stderr, "quantize: warning: %zu finite float64 inputs exceed float32's range (%g); "
                     "%zu output values are infinite\n", beyond, double(FLT_MAX), beyond_written);
    }
    write_npy(o.out, make_npy(DType::F32, in.shape, values.data()));
    if (want_codes)
      write_npy(o.codes, p8 ? make_npy(DType::U8, in.shape, p8) : make_npy(DType::U16, in.shape, p16));

    std::ostringstream line;
    line << "count=" << r.count << " format=" << f.name << " scale=" << fmt_value(r.scale);
    if (f.is_int() && !f.is_signed && scale.kind == ScaleChoice::Amax) line << " zero_point=" << r.zero_point;
    line << " overflow=" << r.stats.overflow << " underflow=" << r.stats.underflow
         << " nan=" << r.stats.nan << " sqnr_db=" << fmt_value(r.sqnr_db) << '\n';
    emit(line.str(), "");
  });
}

}  // namespace qs::cli
