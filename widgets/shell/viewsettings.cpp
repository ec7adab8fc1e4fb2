// ViewSettings <-> JSON, and the demo presets compiled in from resources/presets/.
#include "viewsettings.h"

#include <cmath>

#include "quant/observe_stream.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>

qs::Scheme SchemeSetting::toScheme(uint64_t seed) const {
  qs::EncodeOptions opt;
  opt.rounding = qs::parse_rounding(rounding.toStdString());
  opt.overflow = qs::parse_overflow(overflow.toStdString());
  opt.seed = seed;
  return qs::parse_scheme(schemeText().toStdString(), opt);
}

QJsonObject ViewSettings::toJson() const {
  QJsonArray schemeArray;
  for (const SchemeSetting& s : schemes)
    schemeArray.append(QJsonObject{{QStringLiteral("format"), s.format},
                                   {QStringLiteral("granularity"), s.granularity},
                                   {QStringLiteral("rounding"), s.rounding},
                                   {QStringLiteral("overflow"), s.overflow}});
  const qs::SyntheticSpec& g = synthetic;
  QJsonObject data{{QStringLiteral("source"), source},
                   {QStringLiteral("distribution"), QString::fromLatin1(qs::distribution_name(g.dist).data())},
                   {QStringLiteral("size"), double(g.n)},
                   {QStringLiteral("cols"), double(g.cols)},
                   {QStringLiteral("seed"), double(g.seed)},
                   {QStringLiteral("sigma"), g.sigma},
                   {QStringLiteral("dof"), g.dof},
                   {QStringLiteral("outlier_fraction"), g.outlier_fraction},
                   {QStringLiteral("outlier_scale"), g.outlier_scale},
                   {QStringLiteral("outlier_rows"), double(g.outlier_rows)}};
  if (!file.isEmpty()) data.insert(QStringLiteral("file"), file);
  if (!tensor.isEmpty()) data.insert(QStringLiteral("tensor"), tensor);
  QJsonObject o{{QStringLiteral("quantscope_settings"), 1},
                {QStringLiteral("tab"), tab},
                {QStringLiteral("format"), format},
                {QStringLiteral("compare"), QJsonArray::fromStringList(compare)},
                {QStringLiteral("log_scale"), logScale},
                {QStringLiteral("inspector_value"), inspectorValue},
                {QStringLiteral("data"), data},
                {QStringLiteral("schemes"), schemeArray},
                {QStringLiteral("rounding_seed"), double(seed)}};
  o.insert(QStringLiteral("error_view"), QJsonObject{{QStringLiteral("mode"), errorMode},
                                                     {QStringLiteral("log_counts"), logCounts},
                                                     {QStringLiteral("grid"), gridGroup},
                                                     {QStringLiteral("bins"), bins}});
  o.insert(QStringLiteral("block_scales"), QJsonObject{{QStringLiteral("family"), blockFamily},
                                                       {QStringLiteral("element"), blockElement},
                                                       {QStringLiteral("block"), blockSize}});
  o.insert(QStringLiteral("conventions"), QJsonObject{{QStringLiteral("format"), convFormat},
                                                      {QStringLiteral("names"), QJsonArray::fromStringList(convNames)}});
  {
    QJsonArray spikes;
    for (qint64 b : observe.spikes) spikes.append(double(b));
    o.insert(QStringLiteral("observe"), QJsonObject{{QStringLiteral("format"), observe.format},
                                                    {QStringLiteral("observers"), observe.observers},
                                                    {QStringLiteral("batches"), observe.batches},
                                                    {QStringLiteral("source"), observe.source},
                                                    {QStringLiteral("distribution"), observe.distribution},
                                                    {QStringLiteral("batch_size"), observe.batchSize},
                                                    {QStringLiteral("drift"), observe.drift},
                                                    {QStringLiteral("spikes"), spikes},
                                                    {QStringLiteral("spike_scale"), observe.spikeScale},
                                                    {QStringLiteral("seed"), double(observe.seed)},
                                                    {QStringLiteral("run"), observe.run}});
  }
  if (!modelFile.isEmpty())
    o.insert(QStringLiteral("model"), QJsonObject{{QStringLiteral("file"), modelFile},
                                                  {QStringLiteral("order"), modelOrder},
                                                  {QStringLiteral("colours"), modelColours},
                                                  {QStringLiteral("lo"), modelLo},
                                                  {QStringLiteral("hi"), modelHi}});
  o.insert(QStringLiteral("quantscope_version"), QStringLiteral(QS_VERSION));  // which build wrote it (not read back)
  if (!preset.isEmpty()) o.insert(QStringLiteral("preset"), preset);
  if (!title.isEmpty()) o.insert(QStringLiteral("title"), title);
  if (!explanation.isEmpty()) o.insert(QStringLiteral("explanation"), explanation);
  return o;
}

namespace {

QString tooLong(const QString& key, qsizetype size) {
  return QStringLiteral("'%1' is %2 characters long; at most %3 are accepted")
      .arg(key)
      .arg(size)
      .arg(ViewSettings::kMaxTextChars);
}

enum class Long { Refuse, Cut };

// A string value; one longer than kMaxTextChars is refused, or with Long::Cut (display texts) cut.
bool readString(const QJsonObject& o, const char* key, QString* out, QString* error, Long whenLong = Long::Refuse) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (v.isUndefined()) return true;
  if (!v.isString()) return *error = QStringLiteral("'%1' must be a string").arg(QLatin1String(key)), false;
  *out = v.toString();
  if (out->size() > ViewSettings::kMaxTextChars) {
    if (whenLong == Long::Refuse) return *error = tooLong(QLatin1String(key), out->size()), false;
    out->truncate(ViewSettings::kMaxTextChars - 1);
    if (out->back().isHighSurrogate()) out->chop(1);
    *out += QChar(0x2026);
  }
  return true;
}

bool readNumber(const QJsonObject& o, const char* key, double lo, double hi, double* out, QString* error) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (v.isUndefined()) return true;
  if (!v.isDouble() || !(v.toDouble() >= lo && v.toDouble() <= hi))
    return *error = QStringLiteral("'%1' must be a number in [%2, %3]").arg(QLatin1String(key)).arg(lo).arg(hi), false;
  *out = v.toDouble();
  return true;
}

}  // namespace

bool ViewSettings::fromJson(const QJsonObject& o, ViewSettings* out, QString* error) {
  ViewSettings s;
  QString why;
  auto fail = [&](const QString& what) {
    if (error) *error = what;
    return false;
  };
  if (!readString(o, "tab", &s.tab, &why) || !readString(o, "format", &s.format, &why) ||
      !readString(o, "inspector_value", &s.inspectorValue, &why) || !readString(o, "preset", &s.preset, &why) ||
      !readString(o, "title", &s.title, &why, Long::Cut) || !readString(o, "explanation", &s.explanation, &why, Long::Cut))
    return fail(why);
  static const QStringList tabs = {QStringLiteral("Formats"), QStringLiteral("Error"), QStringLiteral("Model"),
                                   QStringLiteral("Training"), QStringLiteral("Latency"), QStringLiteral("Observers"),
                                   QStringLiteral("Block scales"), QStringLiteral("Conventions")};
  if (!tabs.contains(s.tab)) return fail(QStringLiteral("'tab' must be one of %1").arg(tabs.join(QStringLiteral(", "))));
  if (o.contains(QStringLiteral("log_scale"))) {
    if (!o.value(QStringLiteral("log_scale")).isBool()) return fail(QStringLiteral("'log_scale' must be true or false"));
    s.logScale = o.value(QStringLiteral("log_scale")).toBool();
  }
  if (o.contains(QStringLiteral("compare"))) {
    const QJsonValue c = o.value(QStringLiteral("compare"));
    if (!c.isArray()) return fail(QStringLiteral("'compare' must be a list of format specs"));
    s.compare.clear();
    for (const QJsonValue& v : c.toArray()) {
      if (!v.isString()) return fail(QStringLiteral("'compare' must be a list of format specs"));
      if (v.toString().size() > kMaxTextChars) return fail(tooLong(QStringLiteral("compare"), v.toString().size()));
      s.compare << v.toString();
    }
  }
  double seed = double(s.seed);
  if (!readNumber(o, "rounding_seed", 0, 9007199254740992.0, &seed, &why)) return fail(why);
  s.seed = quint64(seed);

  if (o.contains(QStringLiteral("data"))) {
    if (!o.value(QStringLiteral("data")).isObject()) return fail(QStringLiteral("'data' must be an object"));
    const QJsonObject d = o.value(QStringLiteral("data")).toObject();
    QString dist = QString::fromLatin1(qs::distribution_name(s.synthetic.dist).data());
    if (!readString(d, "source", &s.source, &why) || !readString(d, "distribution", &dist, &why) ||
        !readString(d, "file", &s.file, &why) || !readString(d, "tensor", &s.tensor, &why))
      return fail(QStringLiteral("data: ") + why);
    if (s.source != u"synthetic" && s.source != u"file") return fail(QStringLiteral("data: 'source' must be synthetic or file"));
    try {
      s.synthetic.dist = qs::parse_distribution(dist.toStdString());
    } catch (const std::exception& e) {
      return fail(QStringLiteral("data: ") + QString::fromUtf8(e.what()));
    }
    double n = double(s.synthetic.n), cols = double(s.synthetic.cols), gseed = double(s.synthetic.seed),
           rows = double(s.synthetic.outlier_rows);
    if (!readNumber(d, "size", 1, double(1ull << 30), &n, &why) || !readNumber(d, "cols", 1, double(1 << 24), &cols, &why) ||
        !readNumber(d, "seed", 0, 9007199254740992.0, &gseed, &why) ||
        !readNumber(d, "sigma", 1e-30, 1e30, &s.synthetic.sigma, &why) ||
        !readNumber(d, "dof", 1e-3, 1e6, &s.synthetic.dof, &why) ||
        !readNumber(d, "outlier_fraction", 0, 1, &s.synthetic.outlier_fraction, &why) ||
        !readNumber(d, "outlier_scale", 1e-6, 1e12, &s.synthetic.outlier_scale, &why) ||
        !readNumber(d, "outlier_rows", 0, 1e9, &rows, &why))
      return fail(QStringLiteral("data: ") + why);
    s.synthetic.n = std::size_t(n);
    s.synthetic.cols = std::size_t(cols);
    s.synthetic.seed = uint64_t(gseed);
    s.synthetic.outlier_rows = std::size_t(rows);
    if (s.synthetic.n % s.synthetic.cols != 0)
      return fail(QStringLiteral("data: 'size' must be a multiple of 'cols'"));
    if (s.source == u"file" && (s.file.isEmpty() || s.tensor.isEmpty()))
      return fail(QStringLiteral("data: a file source needs 'file' and 'tensor'"));
  }
  if (o.contains(QStringLiteral("schemes"))) {
    if (!o.value(QStringLiteral("schemes")).isArray()) return fail(QStringLiteral("'schemes' must be a list"));
    s.schemes.clear();
    int i = 0;
    for (const QJsonValue& v : o.value(QStringLiteral("schemes")).toArray()) {
      ++i;
      if (!v.isObject()) return fail(QStringLiteral("scheme %1 must be an object").arg(i));
      SchemeSetting sc;
      const QJsonObject so = v.toObject();
      if (!readString(so, "format", &sc.format, &why) || !readString(so, "granularity", &sc.granularity, &why) ||
          !readString(so, "rounding", &sc.rounding, &why) || !readString(so, "overflow", &sc.overflow, &why))
        return fail(QStringLiteral("scheme %1: ").arg(i) + why);
      s.schemes << sc;
    }
  }
  if (o.contains(QStringLiteral("error_view"))) {
    if (!o.value(QStringLiteral("error_view")).isObject()) return fail(QStringLiteral("'error_view' must be an object"));
    const QJsonObject e = o.value(QStringLiteral("error_view")).toObject();
    double bins = s.bins;
    if (!readString(e, "mode", &s.errorMode, &why) || !readString(e, "grid", &s.gridGroup, &why) ||
        !readNumber(e, "bins", 16, 4096, &bins, &why))
      return fail(QStringLiteral("error_view: ") + why);
    s.bins = int(bins);
    if (s.errorMode != u"absolute" && s.errorMode != u"relative")
      return fail(QStringLiteral("error_view: 'mode' must be absolute or relative"));
    if (s.gridGroup != u"largest" && s.gridGroup != u"median")
      return fail(QStringLiteral("error_view: 'grid' must be largest or median"));
    if (e.contains(QStringLiteral("log_counts"))) {
      if (!e.value(QStringLiteral("log_counts")).isBool()) return fail(QStringLiteral("error_view: 'log_counts' must be true or false"));
      s.logCounts = e.value(QStringLiteral("log_counts")).toBool();
    }
  }
  if (o.contains(QStringLiteral("model"))) {
    if (!o.value(QStringLiteral("model")).isObject()) return fail(QStringLiteral("'model' must be an object"));
    const QJsonObject m = o.value(QStringLiteral("model")).toObject();
    if (!readString(m, "file", &s.modelFile, &why) || !readString(m, "order", &s.modelOrder, &why) ||
        !readString(m, "colours", &s.modelColours, &why) || !readNumber(m, "lo", -1000, 1000, &s.modelLo, &why) ||
        !readNumber(m, "hi", -1000, 1000, &s.modelHi, &why))
      return fail(QStringLiteral("model: ") + why);
    static const QStringList orders = {QStringLiteral("file"), QStringLiteral("name"), QStringLiteral("size"), QStringLiteral("worst")};
    static const QStringList colours = {QStringLiteral("auto"), QStringLiteral("full"), QStringLiteral("fixed")};
    if (!orders.contains(s.modelOrder)) return fail(QStringLiteral("model: 'order' must be one of %1").arg(orders.join(QStringLiteral(", "))));
    if (!colours.contains(s.modelColours))
      return fail(QStringLiteral("model: 'colours' must be one of %1").arg(colours.join(QStringLiteral(", "))));
    if (s.modelColours == u"fixed" && !(s.modelHi > s.modelLo)) return fail(QStringLiteral("model: 'hi' must be above 'lo'"));
  }
  if (o.contains(QStringLiteral("conventions"))) {
    if (!o.value(QStringLiteral("conventions")).isObject()) return fail(QStringLiteral("'conventions' must be an object"));
    const QJsonObject c = o.value(QStringLiteral("conventions")).toObject();
    if (!readString(c, "format", &s.convFormat, &why)) return fail(QStringLiteral("conventions: ") + why);
    if (c.contains(QStringLiteral("names"))) {
      const QJsonValue n = c.value(QStringLiteral("names"));
      if (!n.isArray() || n.toArray().size() < 2 || n.toArray().size() > 16)
        return fail(QStringLiteral("conventions: 'names' must be a list of 2 to 16 convention names"));
      s.convNames.clear();
      for (const QJsonValue& v : n.toArray()) {
        if (!v.isString() || v.toString().size() > kMaxTextChars)
          return fail(QStringLiteral("conventions: 'names' must be a list of convention names"));
        s.convNames << v.toString();
      }
    }
  }
  if (o.contains(QStringLiteral("block_scales"))) {
    if (!o.value(QStringLiteral("block_scales")).isObject()) return fail(QStringLiteral("'block_scales' must be an object"));
    const QJsonObject b = o.value(QStringLiteral("block_scales")).toObject();
    double size = s.blockSize;
    if (!readString(b, "family", &s.blockFamily, &why) || !readString(b, "element", &s.blockElement, &why) ||
        !readNumber(b, "block", 16, 128, &size, &why))
      return fail(QStringLiteral("block_scales: ") + why);
    s.blockSize = int(size);
    if (s.blockFamily != u"mx" && s.blockFamily != u"nvfp4") return fail(QStringLiteral("block_scales: 'family' must be mx or nvfp4"));
    static const QStringList elements = {QStringLiteral("e2m1fn"), QStringLiteral("e2m3fn"), QStringLiteral("e3m2fn"),
                                         QStringLiteral("e4m3fn"), QStringLiteral("e5m2"), QStringLiteral("int8")};
    if (!elements.contains(s.blockElement))
      return fail(QStringLiteral("block_scales: 'element' must be one of %1").arg(elements.join(QStringLiteral(", "))));
    if (s.blockSize != 16 && s.blockSize != 32 && s.blockSize != 64 && s.blockSize != 128)
      return fail(QStringLiteral("block_scales: 'block' must be 16, 32, 64 or 128"));
  }
  if (o.contains(QStringLiteral("observe"))) {
    if (!o.value(QStringLiteral("observe")).isObject()) return fail(QStringLiteral("'observe' must be an object"));
    const QJsonObject m = o.value(QStringLiteral("observe")).toObject();
    Observe& ob = s.observe;
    double batches = ob.batches, size = ob.batchSize, seed = double(ob.seed);
    if (!readString(m, "format", &ob.format, &why) || !readString(m, "observers", &ob.observers, &why) ||
        !readString(m, "source", &ob.source, &why) || !readString(m, "distribution", &ob.distribution, &why) ||
        !readNumber(m, "batches", 1, 100000, &batches, &why) || !readNumber(m, "batch_size", 16, 1 << 22, &size, &why) ||
        !readNumber(m, "drift", -0.5, 0.5, &ob.drift, &why) || !readNumber(m, "spike_scale", 1e-3, 1e6, &ob.spikeScale, &why) ||
        !readNumber(m, "seed", 0, 1e6, &seed, &why))
      return fail(QStringLiteral("observe: ") + why);
    ob.batches = int(batches);
    ob.batchSize = int(size);
    ob.seed = qint64(seed);
    if (ob.source != u"synthetic" && ob.source != u"tensor") return fail(QStringLiteral("observe: 'source' must be synthetic or tensor"));
    try {
      qs::parse_distribution(ob.distribution.toStdString());
      qs::parse_format(ob.format.toStdString());
      qs::parse_observer_specs(ob.observers.toStdString());
    } catch (const std::exception& e) {
      return fail(QStringLiteral("observe: ") + QString::fromUtf8(e.what()));
    }
    if (m.contains(QStringLiteral("spikes"))) {
      if (!m.value(QStringLiteral("spikes")).isArray()) return fail(QStringLiteral("observe: 'spikes' must be a list of batch indices"));
      ob.spikes.clear();
      for (const QJsonValue& v : m.value(QStringLiteral("spikes")).toArray()) {
        const double d = v.toDouble(-1);
        if (!v.isDouble() || d < 0 || d > 1e9 || d != std::floor(d))
          return fail(QStringLiteral("observe: 'spikes' must be a list of batch indices"));
        ob.spikes << qint64(d);
      }
    }
    if (m.contains(QStringLiteral("run"))) {
      if (!m.value(QStringLiteral("run")).isBool()) return fail(QStringLiteral("observe: 'run' must be true or false"));
      ob.run = m.value(QStringLiteral("run")).toBool();
    }
  }
  std::vector<qs::Scheme> parsed;
  if (!s.parseSchemes(&parsed, &why)) return fail(why);
  *out = s;
  return true;
}

bool ViewSettings::fromJsonText(const QByteArray& text, ViewSettings* out, QString* error) {
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(text, &pe);
  if (pe.error != QJsonParseError::NoError) {
    if (error) *error = QStringLiteral("not valid JSON: %1 at offset %2").arg(pe.errorString()).arg(pe.offset);
    return false;
  }
  if (!doc.isObject()) {  // valid JSON, so pe says "no error occurred" (F16): say what is wrong instead
    if (error)
      *error = QStringLiteral("not a JSON object (the file holds %1); a settings file is one object, as a report's "
                              "settings.json")
                   .arg(doc.isArray() ? QStringLiteral("an array") : QStringLiteral("a single value"));
    return false;
  }
  return fromJson(doc.object(), out, error);
}

bool ViewSettings::parseSchemes(std::vector<qs::Scheme>* out, QString* error) const {
  out->clear();
  for (int i = 0; i < schemes.size(); ++i) {
    try {
      out->push_back(schemes[i].toScheme(seed));
    } catch (const std::exception& e) {
      if (error) *error = QStringLiteral("scheme %1 (%2): %3").arg(i + 1).arg(schemes[i].schemeText(), QString::fromUtf8(e.what()));
      return false;
    }
  }
  return true;
}

QList<Preset> builtinPresets() {
  QList<Preset> presets;
  QStringList names = QDir(QStringLiteral(":/presets")).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
  for (const QString& file : names) {
    QFile f(QStringLiteral(":/presets/") + file);
    if (!f.open(QIODevice::ReadOnly)) continue;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
    ViewSettings s;
    QString error;
    if (!doc.isObject() || !ViewSettings::fromJson(doc.object(), &s, &error)) {
      qWarning("preset %s is invalid: %s", qPrintable(file), qPrintable(error));  // caught by tst_mainwindow
      continue;
    }
    const QString name = file.chopped(5);
    s.preset = name;
    presets << Preset{name, s};
  }
  // Display order: the number before the first dash ("10-delayed-…" after "9-nvfp4-…", not after "1-…"),
  // then the prefix is dropped from the name.
  const auto order = [](const QString& name) {
    const int dash = name.indexOf(u'-');
    return dash > 0 ? name.left(dash).toInt() : 0;
  };
  std::stable_sort(presets.begin(), presets.end(), [&](const Preset& a, const Preset& b) { return order(a.name) < order(b.name); });
  for (Preset& p : presets) {
    const int dash = p.name.indexOf(u'-');
    if (dash > 0 && p.name.left(dash).toInt() > 0) p.name = p.name.mid(dash + 1);
    p.settings.preset = p.name;
  }
  return presets;
}

bool findPreset(const QString& name, ViewSettings* out, QString* error) {
  QStringList names;
  for (const Preset& p : builtinPresets()) {
    if (p.name == name) {
      *out = p.settings;
      return true;
    }
    names << p.name;
  }
  if (error) *error = QStringLiteral("unknown preset '%1' (available: %2)").arg(name, names.join(QStringLiteral(", ")));
  return false;
}
