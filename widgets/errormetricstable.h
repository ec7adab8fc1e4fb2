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
  enum Column { Scheme, Sqnr, Mse, MaxAbs, MeanAbs, Clipped, Overflow, Underflow, Nan, BitsPerValue, ColumnCount };
  struct Row {
    QString scheme;
    QColor color;
    std::shared_ptr<const qs::ErrorView> view;  // null while pending or after an error
    QString error;                               // why there is no view
  };

  explicit ErrorMetricsTable(QWidget* parent = nullptr);

  void setRows(const QVector<Row>& rows);
  const QVector<Row>& rows() const { return m_rows; }
  // The numeric value behind a cell (what sorting compares); NaN for a row without a view.
  double number(int row, Column column) const;

  // "scheme,sqnr_db,mse,max_abs_error,mean_abs_error,clip_mse,round_mse,clipped,overflow,underflow,nan,
  // finite,pos_inf,neg_inf,amax,groups,grid", rows in scheme order.
  QByteArray csv() const;

private:
  QVector<Row> m_rows;
};
