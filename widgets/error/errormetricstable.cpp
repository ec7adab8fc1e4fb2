// ErrorMetricsTable: a QTableWidget whose items sort by a numeric role, so "∞ (exact)" and "1.2e-05"
// order correctly. Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel`.
#include "io/csv.h"
#include "errormetricstable.h"

#include "shared/errortext.h"
#include "quant/scheme.h"
#include "shared/plotexport.h"

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

// What a finite value becomes on IEEE overflow in this scheme's element format: inf where it has one.
QString nonFiniteKind(const qs::ErrorView& v) {
  try {
    return qs::parse_scheme(v.scheme).format.has_inf ? QStringLiteral("inf") : QStringLiteral("NaN");
  } catch (const std::exception&) {
    return QStringLiteral("inf/NaN");
  }
}

// The count alone keeps the ten columns inside a 1280-px window; the share is in the cell's tooltip.
QString percentOf(uint64_t n, uint64_t /*of*/) { return errortext::count(n); }

QString shareTip(uint64_t n, uint64_t of) {
  if (n == 0 || of == 0) return {};
  return QStringLiteral("%1 of %2 finite values (%3%)")
      .arg(errortext::count(n), errortext::count(of))
      .arg(100.0 * double(n) / double(of), 0, 'g', 3);
}

}  // namespace

ErrorMetricsTable::ErrorMetricsTable(QWidget* parent) : QTableWidget(0, ColumnCount, parent) {
  // Two-line headers: the columns are as narrow as their numbers, so all eleven fit beside the Setup dock.
  setHorizontalHeaderLabels({QStringLiteral("Scheme"), QStringLiteral("SQNR\n(dB)"), QStringLiteral("MSE"),
                             QStringLiteral("max\n|err|"), QStringLiteral("mean\n|err|"), QStringLiteral("clipped"),
                             QStringLiteral("over-\nflow"), QStringLiteral("under-\nflow"), QStringLiteral("NaN/inf\nin"),
                             QStringLiteral("→ NaN/\ninf"), QStringLiteral("bits/\nvalue")});
  const char* tips[] = {"Scheme: format / granularity, with its rounding and overflow modes",
                        "10·log10(Σx² / Σ(x−q)²) over the finite values; ∞ when every value is exact",
                        "Mean squared error over the finite values",
                        "Largest |x − q|",
                        "Mean |x − q|",
                        "Values beyond their group's clip bound: scale × where round-to-nearest leaves the format's range",
                        "Values at or beyond the format's overflow threshold (clipped, or sent to inf/NaN under ieee)",
                        "Non-zero values that became zero",
                        "NaN and ±inf inputs: counted, left out of every error metric (the format keeps NaN, or maps "
                        "it to 0 where it has no NaN)",
                        "Finite inputs that came out as inf or NaN: IEEE overflow beyond the format's range (E4M3FN has "
                        "no inf, so they become NaN). Their error is infinite: MSE, SQNR and mean |err| are undefined",
                        "Storage per value, scales included: element bits + scale bits per group (Q4_K: 4.5, MXFP4: 4.25)"};
  for (int c = 0; c < ColumnCount; ++c) {
    horizontalHeaderItem(c)->setToolTip(QString::fromUtf8(tips[c]));
    horizontalHeaderItem(c)->setWhatsThis(QString::fromUtf8(tips[c]));  // Shift+F1, then the header
  }
  // Every column as wide as its widest cell, the scheme names whole (a stretched first column was
  // squeezed to "e4m3fn/none · …" at 1280 px); the last column takes what is left, and a table wider
  // than the tab scrolls sideways instead of cutting text.
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setStretchLastSection(true);
  horizontalHeader()->setHighlightSections(false);
  verticalHeader()->setVisible(false);
  verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setAlternatingRowColors(true);
  setSortingEnabled(true);
  horizontalHeader()->setSortIndicatorShown(false);  // Qt reserves its width in every column; rows show the order
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
        text = c != Sqnr            ? QString()
               : !row.error.isEmpty() ? QStringLiteral("error")
               : row.cancelled        ? QStringLiteral("cancelled")
                                      : QStringLiteral("computing…");
      } else {
        const qs::ErrorView& e = *row.view;
        switch (c) {
          case Sqnr: text = errortext::decibel(v); break;
          case Mse: case MaxAbs: case MeanAbs: text = errortext::value(v); break;
          case Clipped: text = percentOf(e.clipped, e.finite); break;
          case Overflow: text = percentOf(e.out.stats.overflow, e.finite); break;
          case Underflow: text = percentOf(e.out.stats.underflow, e.finite); break;
          case Nan: {
            const uint64_t inf = e.pos_inf + e.neg_inf;
            text = inf == 0 ? errortext::count(e.nan)
                            : QStringLiteral("%1 NaN, %2 inf").arg(errortext::count(e.nan), errortext::count(inf));
            break;
          }
          case NonFiniteOut: {
            const uint64_t n = e.abs_error.non_finite;
            text = n == 0 ? QStringLiteral("0") : QStringLiteral("%1 %2").arg(errortext::count(n), nonFiniteKind(e));
            break;
          }
          case BitsPerValue: text = QString::number(v, 'g', 4); break;
        }
      }
      auto* item = new NumericItem(text, v);
      if (!row.error.isEmpty()) item->setToolTip(row.error);
      else if (row.view) {
        const qs::ErrorView& e = *row.view;
        QString note = metricNote(e, Column(c));
        if (note.isEmpty() && c >= Clipped && c <= Underflow)
          note = shareTip(uint64_t(v), e.finite);
        if (note.isEmpty() && c == NonFiniteOut) note = shareTip(e.abs_error.non_finite, e.finite);
        if (!note.isEmpty()) {
          item->setToolTip(note);
          if (text == u"—") item->setText(QStringLiteral("undefined"));
        }
      }
      setItem(r, c, item);
    }
  }
  setSortingEnabled(true);
  horizontalHeader()->setSortIndicatorShown(false);
}

QString ErrorMetricsTable::metricNote(const qs::ErrorView& v, Column c) {
  const uint64_t lost = v.abs_error.non_finite;
  const QString lostText = QStringLiteral("%1 finite value%2 became %3 (IEEE overflow)")
                               .arg(errortext::count(lost), lost == 1 ? QString() : QStringLiteral("s"), nonFiniteKind(v));
  switch (c) {
    case Sqnr:
    case Mse:
    case MeanAbs:
      if (lost) return QStringLiteral("Undefined: %1; its error is infinite. Compare the saturating scheme, or see the "
                                      "→ NaN/inf column.").arg(lostText);
      if (v.finite == 0) return QStringLiteral("Undefined: no finite input values.");
      return {};
    case MaxAbs:
      if (lost) return QStringLiteral("Largest |x − q| over the values that stayed finite; %1.").arg(lostText);
      return {};
    default: return {};
  }
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
    case Nan: return double(v->nan + v->pos_inf + v->neg_inf);
    case NonFiniteOut: return double(v->abs_error.non_finite);
    case BitsPerValue: return v->bits_per_value;
    default: return std::nan("");
  }
}

QByteArray ErrorMetricsTable::csv() const {
  QByteArray out("scheme,sqnr_db,mse,max_abs_error,mean_abs_error,clip_mse,round_mse,clipped,overflow,underflow,nan,"
                 "finite,pos_inf,neg_inf,amax,groups,grid,bits_per_value,nonfinite_out\n");
  auto quoted = [](const QByteArray& s) { return QByteArray::fromStdString(qs::csv_field(s.toStdString())); };
  for (const Row& row : m_rows) {
    out += quoted(row.scheme.toUtf8());
    if (!row.view) {
      out += ",,,,,,,,,,,,,,,," + quoted(row.error.toUtf8()) + ",,\n";
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
           number(v.bits_per_value) + ',' + QByteArray::number(qulonglong(v.abs_error.non_finite)) + '\n';
  }
  return out;
}
