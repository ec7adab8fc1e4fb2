// The vectorized float32 encoders (core/format/encode_simd.h) against the scalar oracle encode_f32_ref,
// bit for bit, at every SIMD level this CPU runs: codes, values (NaN == NaN) and EncodeStats, on
// probe inputs, smooth tensors that take the fast path, ReLU-like batches, every tail length, the
// 2^32 index boundary where the dispatcher splits, and jobs split at arbitrary points.
// Run: cmake --build build --target tst_encode_simd && QT_QPA_PLATFORM=offscreen build/tests/tst_encode_simd
//      (one row: tst_encode_simd "matchesRef:e4m3fn/stochastic/ieee/scaled/avx512")
#include "format/encode_simd.h"

#include "test_rng.h"
#include "format/format.h"
#include "format/selftest.h"

#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <optional>
#include <set>
#include <vector>

Q_DECLARE_METATYPE(qs::Rounding)
Q_DECLARE_METATYPE(qs::Overflow)
Q_DECLARE_METATYPE(qs::SimdLevel)

namespace {

// Every input is a function of these constants and the row name, so a failing row reproduces.
constexpr uint64_t kProbeSeed = 20240611;             // random part of probe_inputs
constexpr std::size_t kProbeRandom8 = 20000;          // random probes per format of <= 8 bits
constexpr std::size_t kProbeRandom16 = 4000;          // wider formats already probe ~750k values
constexpr uint64_t kDataSeed = 0x5eedda7aULL;         // smooth tensors and mixed inputs
constexpr uint64_t kRoundSeed = 0x9e3779b97f4a7c15ULL; // EncodeOptions::seed: both 32-bit halves set
constexpr uint64_t kIndex0 = 1000003;                 // a non-zero first element index
constexpr float kScaled = 0.3f;                       // "scaled" rows: not a power of two, x / s rounds
constexpr std::size_t kSmoothN = 8192 + 13;           // not a multiple of any lane count
constexpr std::size_t kMaxTail = 40;                  // tails: every n in [0, kMaxTail]
constexpr std::size_t kGuard = 32;                    // sentinel elements after a tail's output
constexpr uint32_t kSentinelBits = 0x7fc0deadu;       // a NaN payload no encoder writes
constexpr uint16_t kSentinel16 = 0xbeef;
constexpr uint8_t kSentinel8 = 0xa5;

// SplitMix64 and hand-written transforms: the same numbers with any standard library.

uint32_t bitsOf(float v) { return std::bit_cast<uint32_t>(v); }
bool sameValue(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b); }

QString rowName(const QString& spec, qs::Rounding r, qs::Overflow o, float scale, qs::SimdLevel l) {
  return QStringLiteral("%1/%2/%3/%4/%5")
      .arg(spec, qs::to_string(r), qs::to_string(o), scale == 1.0f ? "unscaled" : "scaled", qs::to_string(l));
}

// Named formats plus the 8-bit sweep, as the specs a user would type (the sweep's "e5m2" is the
// table's e5m2 and appears once).
QStringList allSpecs() {
  QStringList specs;
  std::set<std::string> seen;
  for (const qs::Format& f : qs::named_formats())
    if (seen.insert(f.name).second) specs << QString::fromStdString(f.name);
  for (const std::string& s : qs::sweep_8bit_specs())
    if (seen.insert(qs::parse_format(s).name).second) specs << QString::fromStdString(s);
  return specs;
}

qs::Format formatOf(const QString& spec) { return qs::parse_format(spec.toStdString()); }

// Smallest magnitude from which a value is "in range" (the normal binades for float formats).
double smallestNormal(const qs::Format& f) { return f.min_normal > 0 ? f.min_normal : f.min_subnormal; }

// Seeded samples, scaled so that max |x| / scale is exactly the format's max finite value: every
// vector is in range, which is when the bit-rounding fast path of encode_simd_impl.h engages.
std::vector<float> smooth(const qs::Format& f, float scale, const char* kind, uint64_t seed) {
  Rng g{seed};
  std::vector<double> s(kSmoothN);
  const bool relu = std::strcmp(kind, "relu") == 0;
  for (double& v : s) {
    if (std::strcmp(kind, "laplace") == 0) v = g.laplace();
    else v = g.normal();
  }
  double amax = 0;
  for (double v : s) amax = std::max(amax, std::fabs(v));
  const double k = f.max_finite * double(scale) / amax;
  std::vector<float> x(kSmoothN);
  for (std::size_t i = 0; i < kSmoothN; ++i) {
    double v = s[i] * k;
    if (relu && v < 0) v = (i % 11 == 0) ? -0.0 : 0.0;  // exact zeros, a few of them negative
    x[i] = static_cast<float>(v);
  }
  return x;
}

// Magnitudes log-uniform over the format's normal range (random sign): in range, never a subnormal
// of the target, so stochastic rounding stays on the fast path too.
std::vector<float> logUniform(const qs::Format& f, float scale, std::size_t n, uint64_t seed) {
  Rng g{seed};
  const double lo = std::log2(smallestNormal(f)), hi = std::log2(f.max_finite);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(g.sign() * std::exp2(lo + (hi - lo) * g.open01()) * scale);
  return x;
}

// Every kind of input in a short stretch: in range, specials, beyond max, below the smallest value.
std::vector<float> mixed(const qs::Format& f, float scale, std::size_t n, uint64_t seed) {
  Rng g{seed};
  const std::vector<float> inRange = logUniform(f, scale, n, seed ^ 0xabcdefULL);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (g.next() % 8) {
      case 0: x[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: x[i] = static_cast<float>(g.sign() * INFINITY); break;
      case 2: x[i] = static_cast<float>(g.sign() * f.max_finite * scale * (1.5 + g.open01())); break;
      case 3: x[i] = static_cast<float>(g.sign() * f.min_subnormal * scale * 0.3); break;
      case 4: x[i] = static_cast<float>(g.sign() * 0.0); break;
      default: x[i] = inRange[i]; break;
    }
  }
  return x;
}

enum class Outputs { CodesAndValues, ValuesOnly, Codes8Only, Codes16Only, All };
const char* to_string(Outputs o) {
  switch (o) {
    case Outputs::CodesAndValues: return "codes16+values";
    case Outputs::ValuesOnly: return "values-only (fast path)";
    case Outputs::Codes8Only: return "codes8-only";
    case Outputs::Codes16Only: return "codes16-only";
    case Outputs::All: return "codes8+codes16+values";
  }
  return "?";
}

struct Encoded {
  std::vector<uint16_t> codes16;  // empty when not requested
  std::vector<uint8_t> codes8;
  std::vector<float> values;
  qs::EncodeStats stats;
};

// One encode through the oracle (level empty) or a vectorized level.
Encoded encode(const qs::Format& f, const qs::EncodeOptions& opt, float scale, const float* x, std::size_t n,
               uint64_t index0, Outputs out, std::optional<qs::SimdLevel> level) {
  Encoded e;
  const bool c16 = out == Outputs::CodesAndValues || out == Outputs::Codes16Only || out == Outputs::All;
  const bool c8 = out == Outputs::Codes8Only || out == Outputs::All;
  const bool vals = out == Outputs::CodesAndValues || out == Outputs::ValuesOnly || out == Outputs::All;
  if (c16) e.codes16.assign(n, kSentinel16);
  if (c8) e.codes8.assign(n, kSentinel8);
  if (vals) e.values.assign(n, std::bit_cast<float>(kSentinelBits));
  qs::EncodeJob job;
  job.x = x;
  job.n = n;
  job.scale = scale;
  job.index0 = index0;
  job.codes16 = c16 ? e.codes16.data() : nullptr;
  job.codes8 = c8 ? e.codes8.data() : nullptr;
  job.values = vals ? e.values.data() : nullptr;
  e.stats = level ? qs::encode_f32(f, opt, job, *level) : qs::encode_f32_ref(f, opt, job);
  return e;
}

QString statsText(const qs::EncodeStats& s) {
  return QStringLiteral("overflow %1 underflow %2 nan %3").arg(s.overflow).arg(s.underflow).arg(s.nan);
}

// First difference between a reference result and another one, over the outputs both have (codes8
// is compared with the reference's codes16), naming the element and its input; empty when they agree.
QString mismatch(const float* x, std::size_t n, const Encoded& ref, const Encoded& got) {
  const bool refCodes = !ref.codes16.empty(), refValues = !ref.values.empty();
  for (std::size_t i = 0; i < n; ++i) {
    const bool badCode16 = refCodes && !got.codes16.empty() && got.codes16[i] != ref.codes16[i];
    const bool badCode8 = refCodes && !got.codes8.empty() && got.codes8[i] != ref.codes16[i];
    const bool badValue = refValues && !got.values.empty() && !sameValue(got.values[i], ref.values[i]);
    if (badCode16 || badCode8 || badValue) {
      QString m = QStringLiteral("element %1, input %2 (0x%3): ref").arg(i).arg(double(x[i]), 0, 'g', 9).arg(
          bitsOf(x[i]), 8, 16, QChar('0'));
      if (refCodes) m += QStringLiteral(" code 0x%1").arg(ref.codes16[i], 0, 16);
      if (refValues)
        m += QStringLiteral(" value %1 (0x%2)")
                 .arg(double(ref.values[i]), 0, 'g', 9)
                 .arg(bitsOf(ref.values[i]), 8, 16, QChar('0'));
      if (!got.codes16.empty()) m += QStringLiteral(", got codes16 0x%1").arg(got.codes16[i], 0, 16);
      if (!got.codes8.empty()) m += QStringLiteral(", got codes8 0x%1").arg(got.codes8[i], 0, 16);
      if (!got.values.empty())
        m += QStringLiteral(", got value %1 (0x%2)")
                 .arg(double(got.values[i]), 0, 'g', 9)
                 .arg(bitsOf(got.values[i]), 8, 16, QChar('0'));
      return m;
    }
  }
  const qs::EncodeStats& a = ref.stats;
  const qs::EncodeStats& b = got.stats;
  if (a.overflow != b.overflow || a.underflow != b.underflow || a.nan != b.nan)
    return QStringLiteral("stats differ: ref %1, got %2").arg(statsText(a), statsText(b));
  return {};
}

// The inputs of a matchesRef row and their oracle results. Rows run with the level innermost, so
// the oracle runs once per format/rounding/overflow/scale and is reused for every level.
struct RefCase {
  QString key;
  std::vector<QString> names;
  std::vector<std::vector<float>> inputs;
  std::vector<Encoded> refs;
};

const RefCase& refCase(const qs::Format& f, const QString& spec, const qs::EncodeOptions& opt, float scale) {
  static RefCase c;
  const QString key = rowName(spec, opt.rounding, opt.overflow, scale, qs::SimdLevel::Generic);
  if (c.key == key) return c;
  c = RefCase{};
  c.key = key;
  c.names = {"probe", "normal", "laplace", "relu", "log-uniform"};
  c.inputs.push_back(qs::probe_inputs(f, kProbeSeed, f.bits > 8 ? kProbeRandom16 : kProbeRandom8));
  c.inputs.push_back(smooth(f, scale, "normal", kDataSeed));
  c.inputs.push_back(smooth(f, scale, "laplace", kDataSeed + 1));
  c.inputs.push_back(smooth(f, scale, "relu", kDataSeed + 2));
  c.inputs.push_back(logUniform(f, scale, kSmoothN, kDataSeed + 3));
  for (const auto& x : c.inputs)
    c.refs.push_back(encode(f, opt, scale, x.data(), x.size(), kIndex0, Outputs::CodesAndValues, std::nullopt));
  return c;
}

qs::EncodeOptions options(qs::Rounding r, qs::Overflow o) {
  qs::EncodeOptions opt;
  opt.rounding = r;
  opt.overflow = o;
  opt.seed = kRoundSeed;
  return opt;
}

}  // namespace

class tst_encode_simd : public QObject {
  Q_OBJECT

 private slots:
  void levelsIncludeGeneric();
  void matchesRef_data();
  void matchesRef();
  void tails_data();
  void tails();
  void codes8MatchesCodes16_data();
  void codes8MatchesCodes16();
  void codes8RejectedForWideFormats_data();
  void codes8RejectedForWideFormats();
  void indexBoundary_data();
  void indexBoundary();
  void splitInvariance_data();
  void splitInvariance();
};

void tst_encode_simd::levelsIncludeGeneric() {
  const auto& levels = qs::available_simd_levels();
  QVERIFY(!levels.empty());
  QCOMPARE(levels.front(), qs::SimdLevel::Generic);
  QCOMPARE(qs::best_simd_level(), levels.back());
  for (std::size_t i = 1; i < levels.size(); ++i) QVERIFY(int(levels[i - 1]) < int(levels[i]));
}

void tst_encode_simd::matchesRef_data() {
  QTest::addColumn<QString>("spec");
  QTest::addColumn<qs::Rounding>("rounding");
  QTest::addColumn<qs::Overflow>("overflow");
  QTest::addColumn<float>("scale");
  QTest::addColumn<qs::SimdLevel>("level");
  for (const QString& spec : allSpecs())
    for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
      for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee})
        for (float scale : {1.0f, kScaled})
          for (qs::SimdLevel l : qs::available_simd_levels())
            QTest::newRow(qPrintable(rowName(spec, r, o, scale, l))) << spec << r << o << scale << l;
}

// Probe inputs (every value, midpoint and neighbour, specials, random bit patterns) and smooth
// tensors, once with codes (the general path) and once with values only (the fast path).
void tst_encode_simd::matchesRef() {
  QFETCH(QString, spec);
  QFETCH(qs::Rounding, rounding);
  QFETCH(qs::Overflow, overflow);
  QFETCH(float, scale);
  QFETCH(qs::SimdLevel, level);
  const qs::Format f = formatOf(spec);
  const qs::EncodeOptions opt = options(rounding, overflow);
  const RefCase& c = refCase(f, spec, opt, scale);
  for (std::size_t d = 0; d < c.inputs.size(); ++d) {
    const std::vector<float>& x = c.inputs[d];
    for (Outputs out : {Outputs::CodesAndValues, Outputs::ValuesOnly}) {
      const Encoded got = encode(f, opt, scale, x.data(), x.size(), kIndex0, out, level);
      const QString m = mismatch(x.data(), x.size(), c.refs[d], got);
      QVERIFY2(m.isEmpty(), qPrintable(QStringLiteral("%1 (%2 elements), %3: %4")
                                           .arg(c.names[d]).arg(x.size()).arg(to_string(out), m)));
    }
  }
}

void tst_encode_simd::tails_data() {
  QTest::addColumn<QString>("spec");
  QTest::addColumn<qs::Rounding>("rounding");
  QTest::addColumn<qs::SimdLevel>("level");
  for (const QString& spec : allSpecs())
    for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
      for (qs::SimdLevel l : qs::available_simd_levels())
        QTest::newRow(qPrintable(QStringLiteral("%1/%2/%3").arg(spec, qs::to_string(r), qs::to_string(l))))
            << spec << r << l;
}

// Every length 0..kMaxTail from a misaligned pointer, through the padded tail of the kernels: same
// as the oracle, padding lanes never counted, nothing written past n.
void tst_encode_simd::tails() {
  QFETCH(QString, spec);
  QFETCH(qs::Rounding, rounding);
  QFETCH(qs::SimdLevel, level);
  const qs::Format f = formatOf(spec);
  for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
    for (float scale : {1.0f, kScaled}) {
      const qs::EncodeOptions opt = options(rounding, o);
      std::vector<float> buf = mixed(f, scale, kMaxTail + 1, kDataSeed + 7);
      const float* x = buf.data() + 1;  // 4-byte aligned only
      std::vector<Outputs> outs = {Outputs::CodesAndValues, Outputs::ValuesOnly};
      if (f.bits <= 8) outs.push_back(Outputs::All);
      for (std::size_t n = 0; n <= kMaxTail; ++n) {
        const QString where =
            QStringLiteral("%1/%2/n=%3").arg(qs::to_string(o), scale == 1.0f ? "unscaled" : "scaled").arg(n);
        const Encoded ref = encode(f, opt, scale, x, n, kIndex0, Outputs::CodesAndValues, std::nullopt);
        for (Outputs out : outs) {
          // Outputs with a guard zone behind them: the kernel must not write past n.
          Encoded got;
          got.codes16.assign(n + kGuard, kSentinel16);
          got.codes8.assign(n + kGuard, kSentinel8);
          got.values.assign(n + kGuard, std::bit_cast<float>(kSentinelBits));
          qs::EncodeJob job;
          job.x = x;
          job.n = n;
          job.scale = scale;
          job.index0 = kIndex0;
          const bool c16 = out != Outputs::ValuesOnly, c8 = out == Outputs::All;
          job.codes16 = c16 ? got.codes16.data() : nullptr;
          job.codes8 = c8 ? got.codes8.data() : nullptr;
          job.values = got.values.data();
          got.stats = qs::encode_f32(f, opt, job, level);
          for (std::size_t i = n; i < n + kGuard; ++i) {
            QVERIFY2(bitsOf(got.values[i]) == kSentinelBits && got.codes16[i] == kSentinel16 &&
                         got.codes8[i] == kSentinel8,
                     qPrintable(QStringLiteral("%1, %2: output written at element %3").arg(where, to_string(out)).arg(i)));
          }
          if (!c16) got.codes16.clear();
          if (!c8) got.codes8.clear();
          const QString m = mismatch(x, n, ref, got);
          QVERIFY2(m.isEmpty(), qPrintable(QStringLiteral("%1, %2: %3").arg(where, to_string(out), m)));
        }
      }
    }
  }
}

void tst_encode_simd::codes8MatchesCodes16_data() {
  QTest::addColumn<QString>("spec");
  QTest::addColumn<qs::Rounding>("rounding");
  QTest::addColumn<qs::SimdLevel>("level");
  for (const QString& spec : allSpecs()) {
    if (formatOf(spec).bits > 8) continue;
    for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
      for (qs::SimdLevel l : qs::available_simd_levels())
        QTest::newRow(qPrintable(QStringLiteral("%1/%2/%3").arg(spec, qs::to_string(r), qs::to_string(l))))
            << spec << r << l;
  }
}

// For formats of <= 8 bits, 8-bit code storage alone, 16-bit alone and both at once agree with the
// oracle's codes (so codes16 never carries bits above the format's width).
void tst_encode_simd::codes8MatchesCodes16() {
  QFETCH(QString, spec);
  QFETCH(qs::Rounding, rounding);
  QFETCH(qs::SimdLevel, level);
  const qs::Format f = formatOf(spec);
  const std::vector<float> x = qs::probe_inputs(f, kProbeSeed, kProbeRandom8);
  for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
    const qs::EncodeOptions opt = options(rounding, o);
    const Encoded ref = encode(f, opt, kScaled, x.data(), x.size(), kIndex0, Outputs::CodesAndValues, std::nullopt);
    for (std::size_t i = 0; i < x.size(); ++i) QVERIFY(ref.codes16[i] < f.code_count());
    for (Outputs out : {Outputs::Codes8Only, Outputs::Codes16Only, Outputs::All}) {
      const Encoded got = encode(f, opt, kScaled, x.data(), x.size(), kIndex0, out, level);
      const QString m = mismatch(x.data(), x.size(), ref, got);
      QVERIFY2(m.isEmpty(), qPrintable(QStringLiteral("%1/scaled, %2: %3").arg(qs::to_string(o), to_string(out), m)));
    }
  }
}

void tst_encode_simd::codes8RejectedForWideFormats_data() {
  QTest::addColumn<QString>("spec");
  QTest::addColumn<qs::SimdLevel>("level");
  for (const QString& spec : allSpecs()) {
    if (formatOf(spec).bits <= 8) continue;
    for (qs::SimdLevel l : qs::available_simd_levels())
      QTest::newRow(qPrintable(QStringLiteral("%1/%2").arg(spec, qs::to_string(l)))) << spec << l;
  }
}

// 8-bit storage would silently drop the high bits of a 16-bit code: refused, at every level and in
// the oracle.
void tst_encode_simd::codes8RejectedForWideFormats() {
  QFETCH(QString, spec);
  QFETCH(qs::SimdLevel, level);
  const qs::Format f = formatOf(spec);
  const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  uint8_t c8[4];
  qs::EncodeJob job;
  job.x = x;
  job.n = 4;
  job.codes8 = c8;
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::encode_f32(f, {}, job, level));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::encode_f32_ref(f, {}, job));
}

void tst_encode_simd::indexBoundary_data() {
  QTest::addColumn<QString>("spec");
  QTest::addColumn<quint64>("index0");
  QTest::addColumn<qs::SimdLevel>("level");
  const std::pair<const char*, quint64> starts[] = {
      {"2^32-5", (quint64(1) << 32) - 5}, {"2^33-5", (quint64(1) << 33) - 5}, {"2^64-5", ~quint64(0) - 4}};
  for (const QString& spec : allSpecs())
    for (const auto& [name, index0] : starts)
      for (qs::SimdLevel l : qs::available_simd_levels())
        QTest::newRow(qPrintable(QStringLiteral("%1/stochastic/index0=%2/n=64/%3").arg(spec, name, qs::to_string(l))))
            << spec << index0 << l;
}

// A stochastic job of 64 elements that crosses a 2^32 index boundary (the dispatcher splits it and
// re-keys the generator): every element draws stochastic_bits(seed, index0 + i), as the oracle does.
void tst_encode_simd::indexBoundary() {
  QFETCH(QString, spec);
  QFETCH(quint64, index0);
  QFETCH(qs::SimdLevel, level);
  constexpr std::size_t n = 64;
  constexpr std::size_t beforeBoundary = 5;
  const qs::Format f = formatOf(spec);
  for (float scale : {1.0f, kScaled}) {
    const std::vector<float> x = logUniform(f, scale, n, kDataSeed + 11);
    for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
      const qs::EncodeOptions opt = options(qs::Rounding::Stochastic, o);
      const Encoded ref = encode(f, opt, scale, x.data(), n, index0, Outputs::CodesAndValues, std::nullopt);
      // The row can only fail if the codes past the boundary depend on the random numbers there.
      qs::EncodeOptions other = opt;
      other.seed ^= 1;
      const Encoded alt = encode(f, other, scale, x.data(), n, index0, Outputs::CodesAndValues, std::nullopt);
      bool sensitive = false;
      for (std::size_t i = beforeBoundary; i < n; ++i) sensitive |= alt.codes16[i] != ref.codes16[i];
      QVERIFY2(sensitive, "the inputs past the boundary do not depend on the random bits");
      for (Outputs out : {Outputs::CodesAndValues, Outputs::ValuesOnly}) {
        const Encoded got = encode(f, opt, scale, x.data(), n, index0, out, level);
        const QString m = mismatch(x.data(), n, ref, got);
        QVERIFY2(m.isEmpty(), qPrintable(QStringLiteral("%1/%2, %3: %4")
                                             .arg(qs::to_string(o), scale == 1.0f ? "unscaled" : "scaled",
                                                  to_string(out), m)));
      }
    }
  }
}

void tst_encode_simd::splitInvariance_data() {
  QTest::addColumn<QString>("spec");
  QTest::addColumn<qs::Rounding>("rounding");
  QTest::addColumn<int>("split");
  QTest::addColumn<qs::SimdLevel>("level");
  // Splits before, at and after the 2^32 boundary (element 40 of the job), none lane-aligned but 40.
  for (const char* spec : {"e4m3fn", "e5m2", "bf16", "int8", "uint4", "e8m0fnu", "e0m7"})
    for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
      for (int split : {1, 13, 40, 77})
        for (qs::SimdLevel l : qs::available_simd_levels())
          QTest::newRow(qPrintable(QStringLiteral("%1/%2/index0=2^32-40/n=100/split=%3/%4")
                                       .arg(spec, qs::to_string(r))
                                       .arg(split)
                                       .arg(qs::to_string(l))))
              << QString(spec) << r << split << l;
}

// The same job in one call or in two calls [0, split) and [split, n) with index0 advanced: identical
// codes, values and summed statistics.
void tst_encode_simd::splitInvariance() {
  QFETCH(QString, spec);
  QFETCH(qs::Rounding, rounding);
  QFETCH(int, split);
  QFETCH(qs::SimdLevel, level);
  constexpr std::size_t n = 100;
  const uint64_t index0 = (uint64_t(1) << 32) - 40;
  const qs::Format f = formatOf(spec);
  const qs::EncodeOptions opt = options(rounding, qs::Overflow::Ieee);
  const std::vector<float> x = mixed(f, kScaled, n, kDataSeed + 13);
  for (Outputs out : {Outputs::CodesAndValues, Outputs::ValuesOnly}) {
    const Encoded whole = encode(f, opt, kScaled, x.data(), n, index0, out, level);
    const std::size_t k = static_cast<std::size_t>(split);
    const Encoded a = encode(f, opt, kScaled, x.data(), k, index0, out, level);
    const Encoded b = encode(f, opt, kScaled, x.data() + k, n - k, index0 + k, out, level);
    Encoded joined;
    joined.stats = a.stats;
    joined.stats += b.stats;
    joined.values = a.values;
    joined.values.insert(joined.values.end(), b.values.begin(), b.values.end());
    joined.codes16 = a.codes16;
    joined.codes16.insert(joined.codes16.end(), b.codes16.begin(), b.codes16.end());
    const QString m = mismatch(x.data(), n, whole, joined);
    QVERIFY2(m.isEmpty(), qPrintable(QStringLiteral("%1: %2").arg(to_string(out), m)));
  }
}

QTEST_APPLESS_MAIN(tst_encode_simd)
#include "tst_encode_simd.moc"
