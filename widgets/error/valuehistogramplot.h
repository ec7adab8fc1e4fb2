// ValueHistogramPlot: the histogram of a tensor's values with each scheme's format grid drawn under it as
// a rug of ticks, one band and one colour per scheme, so one sees where the representable values fall
// on the data. Exercise: the Error tab of `quantscope`, tests/tst_errorpanel.cpp.
#pragma once

#include <QString>
#include <QVector>

#include <qcustomplot.h>

#include "quant/error_view.h"

class ValueHistogramPlot : public QCustomPlot {
  Q_OBJECT

public:
  struct Grid {
    QString scheme;
    QColor color;
    QVector<double> values;  // grid positions on the data (qs::GridOverlay::values)
    QString note;            // which scale (qs::GridOverlay::note)
  };

  explicit ValueHistogramPlot(QWidget* parent = nullptr);

  // The histogram of one tensor; `name` goes in the title, the NaN/inf counts in the subtitle.
  void setHistogram(const qs::LinearHistogram& h, const QString& name);
  void clearHistogram(const QString& why);  // an empty plot with the reason as its subtitle
  void setGrids(const QVector<Grid>& grids);
  const QVector<Grid>& grids() const { return m_grids; }
  const qs::LinearHistogram& histogram() const { return m_hist; }

  void setLogCounts(bool on);  // log count axis: the tails and outliers become visible
  bool logCounts() const { return m_log; }

  QCPGraph* histogramGraph() const { return m_histGraph; }
  QCPGraph* gridGraph(int index) const;  // the rug of grids()[index]

  // "series,bin_lo,bin_hi,count": the bins, then below/above/nan/+inf/-inf, then one "grid:<scheme>"
  // row per grid value (bin_lo = bin_hi = the value).
  QByteArray csv() const;

public slots:
  void resetView();

protected:
  void resizeEvent(QResizeEvent* event) override;

private:
  void rebuildRange();
  void updateTitle();  // "Values of <name>", the name elided to the plot's width
  void showTip(QMouseEvent* event);

  qs::LinearHistogram m_hist;
  QString m_name;
  QVector<Grid> m_grids;
  bool m_log = false;
  QCPGraph* m_histGraph = nullptr;
  QVector<QCPGraph*> m_gridGraphs;
  QVector<QCPAxis*> m_rugAxes;  // hidden axes, one per band, reused
  QCPTextElement* m_title = nullptr;
  QCPTextElement* m_subtitle = nullptr;
  double m_maxCount = 0;
};
