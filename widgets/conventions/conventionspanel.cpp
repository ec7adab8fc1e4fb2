// The Conventions tab (conventionspanel.h).
#include "conventionspanel.h"

#include "shared/elidedlabel.h"
#include "shared/plotexport.h"
#include "shared/plotstyle.h"
#include "shared/palette.h"
#include "shared/theme.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <cmath>

namespace {

constexpr std::size_t kTensorCap = std::size_t(1) << 22;  // values of the current tensor compared
constexpr int kTableRows = 500;

QString num(double v) {
  if (std::isnan(v)) return QStringLiteral("NaN");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("−inf");
  return QString::number(v, 'g', 9);
}

QString hex(uint32_t code, int bits) { return QStringLiteral("0x%1").arg(code, (bits + 3) / 4, 16, QLatin1Char('0')); }

bool isIntFormat(const QString& f) { return f == u"int8" || f == u"uint8"; }

}  // namespace

ConventionsPanel::ConventionsPanel(QWidget* parent) : QWidget(parent) {
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(QStringLiteral("Format")));
  m_format = new QComboBox;
  m_format->setObjectName(QStringLiteral("conventionsFormat"));
  for (const char* f : {"e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2fn", "e2m3fn", "e2m1fn", "e8m0fnu", "bf16",
                        "fp16", "int8", "uint8"})
    m_format->addItem(QString::fromLatin1(f));
  m_format->setToolTip(QStringLiteral("The format the conventions encode into; int8 and uint8 take the integer "
                                      "conventions (their scale rules)"));
  top->addWidget(m_format);
  m_summary = new QLabel;
  m_summary->setObjectName(QStringLiteral("conventionsSummary"));
  m_summary->setWordWrap(true);
  top->addWidget(m_summary, 1);

  m_list = new QListWidget;
  m_list->setObjectName(QStringLiteral("conventionsList"));
  m_list->setToolTip(QStringLiteral("Tick two or more; the first ticked is the reference the others are counted "
                                    "against. Hover a name for its source."));
  m_list->setMinimumWidth(150);
  m_list->setMaximumWidth(230);

  m_plot = new QCustomPlot;
  m_plot->setObjectName(QStringLiteral("conventionsPlot"));
  m_plot->setMinimumHeight(160);
  std::tie(m_title, m_subtitle) = plotstyle::addTitleAndSubtitle(m_plot);
  plotstyle::styleLegend(m_plot);
  plotstyle::styleGrid(m_plot->xAxis);
  plotstyle::styleGrid(m_plot->yAxis);

  m_tensorLine = new ElidedLabel;
  m_tensorLine->setObjectName(QStringLiteral("conventionsTensorLine"));
  m_tensorLine->setWordWrap(true);
  m_tensorLine->setTextFormat(Qt::PlainText);
  m_tensorLine->setMaximumLines(3);

  m_table = new QTableWidget;
  m_table->setObjectName(QStringLiteral("conventionsTable"));
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->verticalHeader()->setVisible(false);
  m_table->setMinimumHeight(90);

  auto* right = new QSplitter(Qt::Vertical);
  right->addWidget(m_plot);
  right->addWidget(m_table);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  auto* mid = new QHBoxLayout;
  mid->addWidget(m_list);
  mid->addWidget(right, 1);

  auto* l = new QVBoxLayout(this);
  l->addLayout(top);
  l->addLayout(mid, 1);
  l->addWidget(m_tensorLine);

  connect(m_format, &QComboBox::currentTextChanged, this, [this] {
    fillConventionList();
    recompute();
  });
  connect(m_list, &QListWidget::itemChanged, this, &ConventionsPanel::recompute);
  connect(&m_job, &JobRunnerBase::finished, this, [this] {
    const std::shared_ptr<qs::ConventionComparison> r = m_job.takeResult().value_or(nullptr);
    if (m_jobGeneration != m_generation) return startTensor();  // stale
    if (!r) {
      m_tensorLine->setText(QStringLiteral("Current tensor %1: not compared (the conventions do not fit it)").arg(m_tensor.name));
      return;
    }
    m_tensorResult = std::make_unique<qs::ConventionComparison>(*r);
    QStringList parts;
    for (std::size_t k = 0; k < r->conventions.size(); ++k) {
      QString p = QStringLiteral("%1 %2 dB").arg(QString::fromStdString(r->conventions[k]->name),
                                                 std::isinf(r->stats[k].sqnr_db) ? QStringLiteral("∞")
                                                                                  : QString::number(r->stats[k].sqnr_db, 'f', 2));
      if (r->stats[k].nan_out) p += QStringLiteral(" (%1 NaN)").arg(r->stats[k].nan_out);
      parts << p;
    }
    m_tensorLine->setText(QStringLiteral("Current tensor %1: %2 of %3 values differ · SQNR %4")
                              .arg(m_tensor.name, QLocale().toString(qulonglong(r->differing)),
                                   QLocale().toString(qulonglong(r->inputs.size())), parts.join(QStringLiteral(" · "))) +
                          (m_tensor.size() > r->inputs.size()
                               ? QStringLiteral(" (its first %1 of %2 values)")
                                     .arg(QLocale().toString(qulonglong(r->inputs.size())), QLocale().toString(qulonglong(m_tensor.size())))
                               : QString()));
  });

  plotexport::installContextMenu(m_plot, QStringLiteral("conventions"), [this] { return csv(); },
                                 QStringLiteral("Conventions"));
  fillConventionList();
  setComparison(QStringLiteral("e4m3fn"), {QStringLiteral("ml_dtypes"), QStringLiteral("satfinite"), QStringLiteral("qpytorch")});
}

ConventionsPanel::~ConventionsPanel() { m_job.cancelAndWait(); }

void ConventionsPanel::fillConventionList() {
  const QSignalBlocker quiet(m_list);  // the caller recomputes once the list is set
  const bool ints = isIntFormat(m_format->currentText());
  const QStringList before = checkedConventions();
  m_list->clear();
  for (const qs::Convention& c : qs::conventions()) {
    if (c.is_int() != ints) continue;
    if (ints && (m_format->currentText() == u"int8") != (c.int_rule == qs::IntRule::TorchQint8 || c.int_rule == qs::IntRule::Narrow127))
      continue;
    auto* it = new QListWidgetItem(QString::fromStdString(c.name), m_list);
    it->setFlags(it->flags() | Qt::ItemIsUserCheckable);
    it->setCheckState(before.contains(it->text()) ? Qt::Checked : Qt::Unchecked);
    it->setToolTip(QStringLiteral("%1\nSource: %2").arg(QString::fromStdString(c.title), QString::fromStdString(c.source)));
  }
  int checked = 0;
  for (int i = 0; i < m_list->count(); ++i) checked += m_list->item(i)->checkState() == Qt::Checked;
  for (int i = 0; i < m_list->count() && checked < 2; ++i)
    if (m_list->item(i)->checkState() != Qt::Checked) m_list->item(i)->setCheckState(Qt::Checked), ++checked;
}

bool ConventionsPanel::setComparison(const QString& format, const QStringList& conventions, QString* error) {
  const int fi = m_format->findText(format);
  if (fi < 0) {
    if (error) *error = QStringLiteral("unknown format '%1' for conventions").arg(format);
    return false;
  }
  int found = 0;
  {
    const QSignalBlocker quietFormat(m_format), quietList(m_list);  // one recompute, below
    m_format->setCurrentIndex(fi);
    fillConventionList();
    for (int i = 0; i < m_list->count(); ++i) {
      const bool on = conventions.contains(m_list->item(i)->text());
      found += on;
      m_list->item(i)->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    }
  }
  if (found < 2 || found != conventions.size()) {
    if (error) *error = QStringLiteral("%1 of the conventions %2 apply to %3; two or more are needed")
                            .arg(found).arg(conventions.join(QStringLiteral(", ")), format);
    fillConventionList();
  }
  recompute();
  return found >= 2 && found == conventions.size();
}

QString ConventionsPanel::format() const { return m_format->currentText(); }

QStringList ConventionsPanel::checkedConventions() const {
  QStringList out;
  for (int i = 0; i < m_list->count(); ++i)
    if (m_list->item(i)->checkState() == Qt::Checked) out << m_list->item(i)->text();
  return out;
}

void ConventionsPanel::setTensor(const TensorData& tensor) {
  m_tensor = tensor;
  startTensor();
}

void ConventionsPanel::recompute() {
  const QStringList names = checkedConventions();
  std::vector<std::string> n;
  for (const QString& s : names) n.push_back(s.toStdString());
  m_probe.reset();
  try {
    if (n.size() < 2) throw qs::FormatError("tick two or more conventions");
    m_probe = std::make_unique<qs::ConventionComparison>(
        qs::compare_conventions(qs::parse_format(m_format->currentText().toStdString()), n));
    m_summary->setStyleSheet(QString());
    std::size_t points = 0;
    for (const qs::ConventionRange& r : m_probe->ranges) points += r.lo == r.hi;
    m_summary->setText(QStringLiteral("%1 of %2 probe inputs differ: %3 ranges, %4 of them single points (ties)")
                           .arg(m_probe->differing)
                           .arg(m_probe->inputs.size())
                           .arg(m_probe->ranges.size())
                           .arg(points));
  } catch (const std::exception& e) {
    m_summary->setStyleSheet(theme::errorCss(this));
    m_summary->setText(QString::fromStdString(e.what()));
  }
  drawPlot();
  fillTable();
  startTensor();
}

void ConventionsPanel::drawPlot() {
  m_plot->clearGraphs();
  m_plot->clearItems();
  if (!m_probe) {
    plotstyle::setText(m_title, QStringLiteral("Conventions"));
    plotstyle::setText(m_subtitle, QString());
    m_plot->replot();
    return;
  }
  const qs::ConventionComparison& c = *m_probe;
  const bool ints = c.format.is_int();
  // Floats: positive inputs on log axes (the negative side mirrors them); integers: the ramp, linear.
  auto shown = [&](float x) {
    return ints ? std::isfinite(x) : (x >= c.format.min_subnormal / 4 && std::isfinite(x) && x <= 4 * c.format.max_finite);
  };
  double ylo = INFINITY, yhi = -INFINITY, xlo = INFINITY, xhi = -INFINITY;
  for (std::size_t k = 0; k < c.conventions.size(); ++k) {
    QVector<double> xs, ys;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
      if (!shown(c.inputs[i])) continue;
      const double v = c.codes[k][i].value;
      // Floats: output / input, so that rounding shows as a sawtooth around 1 and saturation as a falling
      // curve beyond max; integers: output - input, the sawtooth of each scale's step.
      const double y = ints ? v - double(c.inputs[i]) : v / double(c.inputs[i]);
      xs << c.inputs[i];
      ys << (std::isfinite(y) ? y : qQNaN());
      xlo = std::min(xlo, double(c.inputs[i])), xhi = std::max(xhi, double(c.inputs[i]));
      if (std::isfinite(y)) ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
    QCPGraph* g = m_plot->addGraph();
    g->setData(xs, ys, true);
    g->setLineStyle(QCPGraph::lsStepLeft);
    QPen pen(palette::color(int(k)), k == 0 ? 2.6 : 1.4);
    if (k > 0) pen.setStyle(k == 1 ? Qt::DashLine : Qt::DotLine);
    g->setPen(pen);
    plotstyle::setLegendName(g, QString::fromStdString(c.conventions[k]->name));
  }
  if (!(xlo < xhi)) xlo = 0.1, xhi = 1;
  if (!(ylo < yhi)) ylo = xlo, yhi = xhi;
  QColor band = theme::warningColor(this);
  band.setAlpha(90);
  for (const qs::ConventionRange& r : c.ranges) {
    double a = r.lo, b = r.hi;
    if (!ints) {
      if (b <= 0) continue;  // the mirror of a positive range
      a = std::max(a, xlo), b = std::min(b, xhi);
      if (!(a <= b)) continue;
    }
    auto* rect = new QCPItemRect(m_plot);
    const double w = a == b ? (ints ? (xhi - xlo) * 0.002 : a * 0.004) : 0;
    rect->topLeft->setCoords(a - w, ints ? yhi * 1.05 : 3.0);
    rect->bottomRight->setCoords(b + w, ints ? ylo * 1.05 : -1.0);
    rect->setPen(Qt::NoPen);
    rect->setBrush(band);
    rect->setLayer(QStringLiteral("background"));
  }
  auto logAxis = [&](QCPAxis* a, bool on) {
    a->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on) a->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    else a->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  };
  logAxis(m_plot->xAxis, !ints);
  logAxis(m_plot->yAxis, false);
  m_plot->xAxis->setRange(ints ? xlo : xlo / 1.5, ints ? xhi : xhi * 1.5);
  m_plot->yAxis->setRange(ints ? ylo * 1.05 : 0.0, ints ? yhi * 1.05 : std::min(2.05, yhi * 1.05));
  m_plot->xAxis->setLabel(ints ? QStringLiteral("input x (a ramp over [−1, 1]; scales from it)") : QStringLiteral("input |x| (negative inputs mirror)"));
  m_plot->yAxis->setLabel(ints ? QStringLiteral("output − input") : QStringLiteral("output / input"));
  QStringList names;
  for (const qs::Convention* cv : c.conventions) names << QString::fromStdString(cv->name);
  plotstyle::setText(m_title, QStringLiteral("%1: %2").arg(QString::fromStdString(c.format.name), names.join(QStringLiteral(" vs "))));
  plotstyle::setText(m_subtitle, QStringLiteral("shaded: inputs where they disagree (%1 ranges) · gaps: NaN or ±inf outputs")
                                     .arg(c.ranges.size()));
  m_plot->legend->setVisible(true);
  m_plot->replot();
}

void ConventionsPanel::fillTable() {
  m_table->clear();
  m_table->setRowCount(0);
  if (!m_probe) return;
  const qs::ConventionComparison& c = *m_probe;
  QStringList headers = {QStringLiteral("input")};
  for (const qs::Convention* cv : c.conventions) headers << QString::fromStdString(cv->name);
  m_table->setColumnCount(headers.size());
  m_table->setHorizontalHeaderLabels(headers);
  int row = 0;
  for (std::size_t i = 0; i < c.inputs.size() && row < kTableRows; ++i) {
    if (!c.differ[i]) continue;
    m_table->insertRow(row);
    m_table->setItem(row, 0, new QTableWidgetItem(num(c.inputs[i])));
    for (std::size_t k = 0; k < c.conventions.size(); ++k) {
      const qs::ConventionCode& cc = c.codes[k][i];
      auto* it = new QTableWidgetItem(QStringLiteral("%1 = %2").arg(hex(cc.code, c.format.bits), num(cc.value)));
      const qs::ConventionCode& ref = c.codes[0][i];
      const bool same = cc.code == ref.code && (cc.value == ref.value || (std::isnan(cc.value) && std::isnan(ref.value)));
      if (k > 0 && !same) it->setForeground(theme::warningColor(this));
      m_table->setItem(row, int(k) + 1, it);
    }
    ++row;
  }
  m_table->resizeColumnsToContents();
}

void ConventionsPanel::startTensor() {
  ++m_generation;
  if (m_job.isRunning()) return;  // the finished handler starts the current one
  if (m_tensor.isEmpty() || !m_probe) {
    m_tensorLine->setText(m_tensor.isEmpty() ? QStringLiteral("No current tensor: load one (File → Open) or pick a demo")
                                             : QString());
    return;
  }
  auto values = m_tensor.values;
  const std::string fmt = m_format->currentText().toStdString();
  std::vector<std::string> names;
  for (const QString& s : checkedConventions()) names.push_back(s.toStdString());
  m_tensorLine->setText(QStringLiteral("Current tensor %1: comparing…").arg(m_tensor.name));
  m_jobGeneration = m_generation;
  m_job.start([values, fmt, names](JobRunner<std::monostate, std::shared_ptr<qs::ConventionComparison>>::Sink& sink) {
    std::shared_ptr<qs::ConventionComparison> r;
    try {
      const std::size_t n = std::min(values->size(), kTensorCap);
      r = std::make_shared<qs::ConventionComparison>(qs::compare_conventions(qs::parse_format(fmt), names, values->data(), n));
    } catch (const std::exception&) {
      r = nullptr;  // the line says "not compared"
    }
    sink.setResult(std::move(r));
  });
}

QByteArray ConventionsPanel::csv() const {
  if (!m_probe) return {};
  const qs::ConventionComparison& c = *m_probe;
  QByteArray out = "input,differ";
  for (const qs::Convention* cv : c.conventions) out += ',' + QByteArray::fromStdString(cv->name) + "_code," +
                                                        QByteArray::fromStdString(cv->name) + "_value";
  out += '\n';
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    out += plotexport::number(c.inputs[i]) + (c.differ[i] ? ",1" : ",0");
    for (std::size_t k = 0; k < c.conventions.size(); ++k)
      out += ',' + hex(c.codes[k][i].code, c.format.bits).toLatin1() + ',' + plotexport::number(c.codes[k][i].value);
    out += '\n';
  }
  return out;
}

void ConventionsPanel::exportInteractive() {
  plotexport::exportInteractive(this, m_plot, QStringLiteral("conventions"), [this] { return csv(); },
                                QStringLiteral("Conventions"));
}

bool ConventionsPanel::waitForIdle(int ms) {
  QElapsedTimer t;
  t.start();
  while (m_job.isRunning() && t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  QCoreApplication::processEvents();
  return !m_job.isRunning();
}
