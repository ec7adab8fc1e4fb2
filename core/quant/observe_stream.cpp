// Observers over a stream of batches, see observe_stream.h.
#include "quant/observe_stream.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "quant/scheme.h"

namespace qs {

namespace {

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == '\0' && std::isfinite(out);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) parts.push_back(cur), cur.clear();
    else cur += c;
  }
  parts.push_back(cur);
  return parts;
}

std::string number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

std::vector<ObserverSpec> parse_observer_specs(std::string_view text) {
  std::vector<ObserverSpec> out;
  for (std::string item : split(text, ',')) {
    for (char& c : item) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto fail = [&](const std::string& why) { throw FormatError("observer '" + item + "': " + why); };
    ObserverSpec s;
    const std::vector<std::string> p = split(item, ':');
    if (item == "current") {
      s.kind = ObserverSpec::Kind::Current;
      s.text = "current";
    } else if (item == "minmax") {
      s.kind = ObserverSpec::Kind::MinMax;
      s.text = "minmax";
    } else if (item == "mse") {
      s.kind = ObserverSpec::Kind::Mse;
      s.text = "mse";
    } else if (p[0] == "movavg") {
      s.kind = ObserverSpec::Kind::MovingAverage;
      s.param = 0.01;
      if (p.size() > 2 || (p.size() == 2 && (!parse_double(p[1], s.param) || !(s.param > 0 && s.param <= 1))))
        fail("expected movavg[:c] with c in (0, 1]");
      s.text = "movavg:" + number(s.param);
    } else if (!item.empty() && item[0] == 'p' && p.size() == 1) {
      s.kind = ObserverSpec::Kind::Percentile;
      if (!parse_double(item.substr(1), s.param) || !(s.param > 0 && s.param <= 100))
        fail("expected p<percentile> with a percentile in (0, 100]");
      s.text = "p" + number(s.param);
    } else if (p[0] == "delayed") {
      s.kind = ObserverSpec::Kind::Delayed;
      double len = 16, margin = 0;
      if (p.size() > 4) fail("expected delayed[:<history>[:max|recent[:<margin>]]]");
      if (p.size() > 1 && (!parse_double(p[1], len) || len < 1 || len > 1e6 || len != std::floor(len)))
        fail("history length must be an integer from 1 to 1000000");
      if (p.size() > 2) {
        if (p[2] == "recent") s.most_recent = true;
        else if (p[2] != "max") fail("expected max or recent");
      }
      if (p.size() > 3 && (!parse_double(p[3], margin) || margin != std::floor(margin) || std::fabs(margin) > 64))
        fail("margin must be an integer power of two from -64 to 64");
      s.history = int(len);
      s.margin = int(margin);
      s.text = "delayed:" + std::to_string(s.history) + ":" + (s.most_recent ? "recent" : "max") + ":" +
               std::to_string(s.margin);
    } else {
      fail("unknown observer (current, minmax, movavg[:c], p<pct>, mse, delayed[:len[:max|recent[:margin]]])");
    }
    out.push_back(s);
  }
  return out;
}

ObserveStream::ObserveStream(Format format, std::vector<ObserverSpec> specs)
    : f_(std::move(format)), specs_(std::move(specs)) {
  for (const ObserverSpec& s : specs_) {
    std::unique_ptr<Observer> o;
    std::unique_ptr<DelayedScaling> d;
    switch (s.kind) {
      case ObserverSpec::Kind::MinMax: o = std::make_unique<MinMaxObserver>(); break;
      case ObserverSpec::Kind::MovingAverage: o = std::make_unique<MovingAverageMinMaxObserver>(s.param); break;
      case ObserverSpec::Kind::Percentile: o = std::make_unique<HistogramPercentileObserver>(s.param, 2048); break;
      case ObserverSpec::Kind::Mse: o = std::make_unique<MseObserver>(f_, std::size_t(1) << 20, 1); break;
      case ObserverSpec::Kind::Delayed:
        d = std::make_unique<DelayedScaling>(s.history, s.most_recent ? DelayedScaling::Algo::MostRecent
                                                                      : DelayedScaling::Algo::Max, s.margin);
        break;
      case ObserverSpec::Kind::Current: break;
    }
    obs_.push_back(std::move(o));
    delayed_.push_back(std::move(d));
  }
}

std::vector<ObserveRow> ObserveStream::step(const float* x, std::size_t n) {
  double batch_amax = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) batch_amax = std::max(batch_amax, double(std::fabs(x[i])));
  std::vector<ObserveRow> rows;
  std::vector<float> y(n);
  for (std::size_t k = 0; k < specs_.size(); ++k) {
    ObserveRow r;
    r.batch = batch_;
    r.observer = &specs_[k];
    r.batch_amax = batch_amax;
    if (obs_[k]) {
      obs_[k]->observe(x, n);
      r.clip = obs_[k]->amax();
      r.scale = amax_scale(f_, r.clip);
    } else if (delayed_[k]) {
      DelayedScaling& d = *delayed_[k];
      if (d.history().empty()) {
        r.clip = batch_amax;
        r.scale = amax_scale(f_, batch_amax);
      } else {
        r.clip = std::ldexp(d.history_amax(), specs_[k].margin);
        r.scale = d.scale(f_);
      }
      d.push(batch_amax);
    } else {
      r.clip = batch_amax;
      r.scale = amax_scale(f_, batch_amax);
    }
    EncodeJob job;
    job.x = x;
    job.n = n;
    job.scale = r.scale;
    job.values = y.data();
    encode_f32(f_, {}, job);
    ErrorMetrics m;
    m.histograms = false;
    accumulate_metrics(m, x, y.data(), n, r.scale, clip_bound(f_, r.scale));
    r.sqnr_db = m.sqnr_db();
    r.clipped = m.clipped;
    rows.push_back(r);
  }
  ++batch_;
  return rows;
}

std::vector<float> synthetic_batch(const SyntheticStream& s, uint64_t b) {
  SyntheticSpec spec;
  spec.dist = s.dist;
  spec.n = s.batch_size;
  spec.cols = s.batch_size;
  spec.outlier_rows = 0;
  spec.seed = s.seed * 1000003 + b;
  spec.sigma = std::pow(1.0 + s.drift, double(b));
  std::vector<float> x = make_synthetic(spec, 1);
  if (std::find(s.spikes.begin(), s.spikes.end(), b) != s.spikes.end())
    for (float& v : x) v = float(double(v) * s.spike_scale);
  return x;
}

std::vector<uint64_t> parse_batch_list(std::string_view text) {
  std::vector<uint64_t> out;
  if (text.empty()) return out;
  for (const std::string& item : split(text, ',')) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size())
      throw FormatError("'" + std::string(text) + "': '" + item + "' is not a batch index");
    out.push_back(v);
  }
  return out;
}

}  // namespace qs
