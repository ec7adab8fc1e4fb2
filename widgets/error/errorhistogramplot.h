// ErrorHistogramPlot: the round-trip error of each scheme on log2 bins (absolute |x − q| or relative
// |x − q| / |x|), the rounding part as a filled step line and the clipping part (|x| beyond the
// group's scale × max) hatched and dashed in the same colour. Exercise: the Error tab of `quantscope`,
// tests/tst_errorpanel.cpp.
#pragma once

#include <QString>
#include <QVector>

#include <qcustomplot.h>

#include "quant/error_view.h"

class ErrorHistogramPlot : public QCustomPlot {
  Q_OBJECT

public:
  enum class Mode { Absolute, Relative };
  struct Series {
    QString scheme;
    QColor color;
    qs::Log2ErrorHistogram abs, rel;
    uint64_t finite = 0;  // the fractions' denominator
  };

  explicit ErrorHistogramPlot(QWidget* parent = nullptr);

  void setSeries(const QVector<Series>& series);
  const QVector<Series>& series() const { return m_series; }
  void setMode(Mode mode);
  Mode mode() const { return m_mode; }

  // Graphs of series i: keys are binary exponents e + 0.5 (bin [2^e, 2^(e+1))), values the fraction
  // of the finite values in the bin; nullptr for a clipping part that is empty.
  QCPGraph* roundingGraph(int index) const;
  QCPGraph* clippingGraph(int index) const;

  // "scheme,kind,part,bin_lo,bin_hi,count" for both kinds (qs::error_view_histogram_csv).
  QByteArray csv() const;

public slots:
  void resetView();

private:
  void rebuild();
  void showTip(QMouseEvent* event);
  const qs::Log2ErrorHistogram& current(const Series& s) const { return m_mode == Mode::Absolute ? s.abs : s.rel; }

  QVector<Series> m_series;
  Mode m_mode = Mode::Absolute;
  QVector<QCPGraph*> m_rounding, m_clipping;
  QCPTextElement* m_title = nullptr;
  QCPTextElement* m_subtitle = nullptr;
  QCPRange m_fullX{-12, 0}, m_fullY{1e-6, 1};
};
