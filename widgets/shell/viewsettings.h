// ViewSettings: everything that reproduces a view of the window — data source, schemes, format view,
// current tab — as one value that reads and writes JSON. Demo presets are such JSON files
// (resources/presets/*.json), the report writes one as settings.json, and `quantscope --settings F`
// loads one. Exercise: tests/tst_mainwindow.cpp.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <vector>

#include "quant/scheme.h"
#include "quant/synthetic.h"

struct SchemeSetting {
  QString format = QStringLiteral("e4m3fn");  // table name or custom spec
  QString granularity = QStringLiteral("tensor");  // tensor | channel:<axis> | block:<n>[:<scale format>]
  QString rounding = QStringLiteral("nearest");
  QString overflow = QStringLiteral("saturate");

  // A llama.cpp block type in the granularity field (q4_k, q6_k, q8_0, ...) is the whole scheme: its element
  // format is ggml's own, so the format field does not apply.
  QString schemeText() const {
    static const QStringList ggml = {QStringLiteral("q4_0"), QStringLiteral("q4_1"), QStringLiteral("q5_0"),
                                     QStringLiteral("q5_1"), QStringLiteral("q8_0"), QStringLiteral("q4_k"),
                                     QStringLiteral("q5_k"), QStringLiteral("q6_k")};
    return ggml.contains(granularity.trimmed().toLower()) ? granularity.trimmed() : format + u'/' + granularity;
  }
  // Throws qs::FormatError naming the problem.
  qs::Scheme toScheme(uint64_t seed) const;
  bool operator==(const SchemeSetting&) const = default;
};

struct ViewSettings {
  QString tab = QStringLiteral("Formats");  // Formats | Error | Model | Training | Latency
  // Formats tab
  QString format = QStringLiteral("e4m3fn");
  QStringList compare;
  bool logScale = false;
  QString inspectorValue = QStringLiteral("0.3");
  // Data: "synthetic" or "file"
  QString source = QStringLiteral("synthetic");
  qs::SyntheticSpec synthetic;
  QString file, tensor;
  // Schemes compared in the Error tab (and the Model heatmap)
  QList<SchemeSetting> schemes = {SchemeSetting{}, SchemeSetting{QStringLiteral("int8"), QStringLiteral("tensor")}};
  quint64 seed = 0;  // stochastic rounding
  // Error tab view options
  QString errorMode = QStringLiteral("absolute");  // absolute | relative
  bool logCounts = false;
  QString gridGroup = QStringLiteral("largest");   // largest | median
  int bins = 512;                                   // value histogram bins, 16..4096
  // Model tab: the file whose heatmap is shown (analysed again on load), its row order and colour scale
  QString modelFile;
  QString modelOrder = QStringLiteral("file");      // file | name | size | worst
  QString modelColours = QStringLiteral("auto");    // auto | full | fixed
  double modelLo = 0, modelHi = 60;                 // dB, for fixed
  // Block scales tab: the family (mx | nvfp4), its element format and block size
  QString blockFamily = QStringLiteral("mx");
  QString blockElement = QStringLiteral("e2m1fn");
  int blockSize = 32;
  // Conventions tab: the format and the conventions compared (names as format/convention.h spells them)
  QString convFormat = QStringLiteral("e4m3fn");
  QStringList convNames = {QStringLiteral("ml_dtypes"), QStringLiteral("satfinite"), QStringLiteral("qpytorch")};
  // Observers tab: the stream (quantscope-cli observe's options); `observeRun` starts it on load
  struct Observe {
    QString format = QStringLiteral("e4m3fn");
    QString observers = QStringLiteral("current,minmax,movavg:0.01,p99.99,mse,delayed:16:max:0");
    int batches = 120;
    QString source = QStringLiteral("synthetic");  // synthetic | tensor (rows of the data tensor)
    QString distribution = QStringLiteral("normal");
    int batchSize = 4096;
    double drift = 0.005;
    QList<qint64> spikes = {60};
    double spikeScale = 20;
    qint64 seed = 1;
    bool run = false;
    bool operator==(const Observe&) const = default;
  } observe;
  // Demo presets: what the explanation panel shows
  QString preset, title, explanation;

  // Longest string read from a settings file (F2: a 20,000-character title or tensor name there once
  // made a window that wide). The display texts 'title' and 'explanation' are cut to this length, with
  // an ellipsis; any other string longer than this (file, tensor, formats, schemes) is refused, since
  // a cut name would name something else. Paths on Linux are at most 4096 bytes anyway.
  static constexpr int kMaxTextChars = 4096;

  QJsonObject toJson() const;
  // Missing keys keep their defaults; wrong types or values give false with *error naming the key.
  static bool fromJson(const QJsonObject& json, ViewSettings* out, QString* error);
  // The text of a settings file (JSON): false with *error when it is not JSON, not one JSON object
  // ("[1]"), or fromJson() refuses it. `quantscope --settings F` and File → Load settings use it.
  static bool fromJsonText(const QByteArray& text, ViewSettings* out, QString* error);
  // Parses every scheme; false with *error ("scheme 2: ...") at the first that does not parse.
  bool parseSchemes(std::vector<qs::Scheme>* out, QString* error) const;
};

// Demo presets shipped in the binary (resources/presets/*.json): name -> settings.
struct Preset {
  QString name;  // file stem, what --preset takes
  ViewSettings settings;
};
QList<Preset> builtinPresets();
// nullptr-safe lookup; false with *error listing the available names.
bool findPreset(const QString& name, ViewSettings* out, QString* error);
