// ErrorMetricsTable: one row per scheme with the numbers of qs::ErrorView (SQNR, MSE, max and mean
// |error|, clipped, overflow, underflow, NaN), sortable by any column on its numeric value.
// Exercise: the Error tab of `quantscope`, tests/tst_errorpanel.cpp.
#pragma once

#include <QTableWidget>
#include <QVector>

#include <memory>

#include "quant/error_view.h"

class ErrorMetricsTable : public QTableWidget {
  Q_OBJECT

public:
  // Nan: NaN and inf inputs (counted, never quantized); NonFiniteOut: finite inputs that came out as inf or
  // NaN (IEEE overflow), the reason the error columns are undefined.
  enum Column { Scheme, Sqnr, Mse, MaxAbs, MeanAbs, Clipped, Overflow, Underflow, Nan, NonFiniteOut, BitsPerValue, ColumnCount };
  // Why a metric cell is empty or partial ("—"), for its tooltip; empty when the number stands alone.
  static QString metricNote(const qs::ErrorView& v, Column c);
  struct Row {
    QString scheme;
    QColor color;
    std::shared_ptr<const qs::ErrorView> view;  // null while pending or after an error
    QString error;                               // why there is no view
    bool cancelled = false;                      // no view because the user cancelled (not pending)
  };

  explicit ErrorMetricsTable(QWidget* parent = nullptr);

  void setRows(const QVector<Row>& rows);
  const QVector<Row>& rows() const { return m_rows; }
  // The numeric value behind a cell (what sorting compares); NaN for a row without a view.
  double number(int row, Column column) const;

  // "scheme,sqnr_db,mse,max_abs_error,mean_abs_error,clip_mse,round_mse,clipped,overflow,underflow,nan,
  // finite,pos_inf,neg_inf,amax,groups,grid,bits_per_value,nonfinite_out", rows in scheme order.
  QByteArray csv() const;

private:
  QVector<Row> m_rows;
};
