// ErrorMetricsTable: a QTableWidget whose items sort by a numeric role, so "∞ (exact)" and "1.2e-05"
// order correctly. Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel`.
#include "io/csv.h"
#include "errormetricstable.h"

#include "errortext.h"
#include "plotexport.h"

#include <QHeaderView>
#include <QPainter>
#include <QPixmap>

#include <cmath>

namespace {

constexpr int kSortRole = Qt::UserRole + 1;

class NumericItem : public QTableWidgetItem {
public:
  NumericItem(const QString& text, double value) : QTableWidgetItem(text) {
    setData(kSortRole, value);
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  }
  bool operator<(const QTableWidgetItem& other) const override {
    const double a = data(kSortRole).toDouble(), b = other.data(kSortRole).toDouble();
    if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);  // rows without numbers last
    return a < b;
  }
};

QIcon swatch(const QColor& c) {
  QPixmap pm(12, 12);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setBrush(c);
  p.setPen(c.darker(130));
  p.drawRoundedRect(QRectF(0.5, 0.5, 11, 11), 2, 2);
  return QIcon(pm);
}

QString percentOf(uint64_t n, uint64_t of) {
  if (n == 0 || of == 0) return errortext::count(n);
  return QStringLiteral("%1 (%2%)").arg(errortext::count(n)).arg(100.0 * double(n) / double(of), 0, 'g', 3);
}

}  // namespace

ErrorMetricsTable::ErrorMetricsTable(QWidget* parent) : QTableWidget(0, ColumnCount, parent) {
  setHorizontalHeaderLabels({QStringLiteral("Scheme"), QStringLiteral("SQNR (dB)"), QStringLiteral("MSE"),
                             QStringLiteral("max |err|"), QStringLiteral("mean |err|"), QStringLiteral("clipped"),
                             QStringLiteral("overflow"), QStringLiteral("underflow"), QStringLiteral("NaN"),
                             QStringLiteral("bits/value")});
  const char* tips[] = {"Scheme: format / granularity, with its rounding and overflow modes",
                        "10·log10(Σx² / Σ(x−q)²) over the finite values; ∞ when every value is exact",
                        "Mean squared error over the finite values",
                        "Largest |x − q|",
                        "Mean |x − q|",
                        "Values beyond their group's clip bound: scale × where round-to-nearest leaves the format's range",
                        "Values at or beyond the format's overflow threshold (clipped, or sent to inf/NaN under ieee)",
                        "Non-zero values that became zero",
                        "NaN inputs (the format keeps them as NaN, or maps them to 0 where it has no NaN)",
                        "Storage per value, scales included: element bits + scale bits per group (Q4_K: 4.5, MXFP4: 4.25)"};
  for (int c = 0; c < ColumnCount; ++c) horizontalHeaderItem(c)->setToolTip(QString::fromUtf8(tips[c]));
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setSectionResizeMode(Scheme, QHeaderView::Stretch);
  horizontalHeader()->setHighlightSections(false);
  verticalHeader()->setVisible(false);
  verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setAlternatingRowColors(true);
  setSortingEnabled(true);
  sortByColumn(-1, Qt::AscendingOrder);  // scheme order until a header is clicked
}

void ErrorMetricsTable::setRows(const QVector<Row>& rows) {
  m_rows = rows;
  setSortingEnabled(false);  // fill first, then sort once by the column the user chose
  setRowCount(int(rows.size()));
  for (int r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    auto* name = new QTableWidgetItem(swatch(row.color), row.scheme);
    name->setData(kSortRole, r);
    name->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (!row.error.isEmpty()) name->setToolTip(row.error);
    else if (row.view) name->setToolTip(QStringLiteral("grid drawn: %1").arg(errortext::superscriptPowers(QString::fromStdString(row.view->grid.note))));
    setItem(r, Scheme, name);
    for (int c = Sqnr; c < ColumnCount; ++c) {
      QString text;
      const double v = number(r, Column(c));
      if (!row.view) {
        text = c == Sqnr ? (row.error.isEmpty() ? QStringLiteral("computing…") : QStringLiteral("error")) : QString();
      } else {
        const qs::ErrorView& e = *row.view;
        switch (c) {
          case Sqnr: text = errortext::decibel(v); break;
          case Mse: case MaxAbs: case MeanAbs: text = errortext::value(v); break;
          case Clipped: text = percentOf(e.clipped, e.finite); break;
          case Overflow: text = percentOf(e.out.stats.overflow, e.finite); break;
          case Underflow: text = percentOf(e.out.stats.underflow, e.finite); break;
          case Nan: text = errortext::count(e.out.stats.nan); break;
          case BitsPerValue: text = QString::number(v, 'g', 4); break;
        }
      }
      auto* item = new NumericItem(text, v);
      if (!row.error.isEmpty()) item->setToolTip(row.error);
      setItem(r, c, item);
    }
  }
  setSortingEnabled(true);
}

double ErrorMetricsTable::number(int row, Column column) const {
  if (row < 0 || row >= m_rows.size()) return std::nan("");
  if (column == Scheme) return row;
  const auto& v = m_rows[row].view;
  if (!v) return std::nan("");
  switch (column) {
    case Sqnr: return v->metrics.sqnr_db();
    case Mse: return v->metrics.mse();
    case MaxAbs: return v->metrics.max_abs_e;
    case MeanAbs: return v->metrics.mean_abs_error();
    case Clipped: return double(v->clipped);
    case Overflow: return double(v->out.stats.overflow);
    case Underflow: return double(v->out.stats.underflow);
    case Nan: return double(v->out.stats.nan);
    case BitsPerValue: return v->bits_per_value;
    default: return std::nan("");
  }
}

QByteArray ErrorMetricsTable::csv() const {
  QByteArray out("scheme,sqnr_db,mse,max_abs_error,mean_abs_error,clip_mse,round_mse,clipped,overflow,underflow,nan,"
                 "finite,pos_inf,neg_inf,amax,groups,grid,bits_per_value\n");
  auto quoted = [](const QByteArray& s) { return QByteArray::fromStdString(qs::csv_field(s.toStdString())); };
  for (const Row& row : m_rows) {
    out += quoted(row.scheme.toUtf8());
    if (!row.view) {
      out += ",,,,,,,,,,,,,,,," + quoted(row.error.toUtf8()) + ",\n";
      continue;
    }
    const qs::ErrorView& v = *row.view;
    const double n = double(std::max<uint64_t>(v.metrics.count, 1));
    using plotexport::number;
    out += ',' + number(v.metrics.sqnr_db()) + ',' + number(v.metrics.mse()) + ',' + number(v.metrics.max_abs_e) + ',' +
           number(v.metrics.mean_abs_error()) + ',' + number(v.metrics.sum_clip2 / n) + ',' +
           number(v.metrics.sum_round2 / n) + ',' + QByteArray::number(qulonglong(v.clipped)) + ',' +
           QByteArray::number(qulonglong(v.out.stats.overflow)) + ',' +
           QByteArray::number(qulonglong(v.out.stats.underflow)) + ',' + QByteArray::number(qulonglong(v.out.stats.nan)) +
           ',' + QByteArray::number(qulonglong(v.finite)) + ',' + QByteArray::number(qulonglong(v.pos_inf)) + ',' +
           QByteArray::number(qulonglong(v.neg_inf)) + ',' + number(v.out.amax) + ',' +
           QByteArray::number(qulonglong(v.out.groups)) + ',' + quoted(QByteArray::fromStdString(v.grid.note)) + ',' +
           number(v.bits_per_value) + '\n';
  }
  return out;
}
