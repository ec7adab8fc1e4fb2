// FormatGridPlot: every finite value a number format can represent, drawn as a number line with the
// spacing to the next value above it. Exercise: `quantscope --format fp16`, tests/tst_formatgridplot.cpp.
#pragma once

#include <QString>
#include <QStringList>
#include <QList>
#include <QPair>
#include <QVector>

#include <limits>

#include <qcustomplot.h>

#include "format/format.h"

class FormatGridPlot : public QCustomPlot {
  Q_OBJECT

public:
  explicit FormatGridPlot(QWidget* parent = nullptr);

  void setFormat(const qs::Format& format);
  const qs::Format& format() const { return m_format; }

  // Further formats drawn over the first one (own colour: a shorter rug and a spacing staircase),
  // for side-by-side comparisons such as E4M3 vs E5M2. Empty: only format().
  void setCompareFormats(const QList<qs::Format>& formats);
  const QList<qs::Format>& compareFormats() const { return m_compare; }
  QCPGraph* compareValueGraph(int i) const { return m_compareGraphs.value(i).first; }
  QCPGraph* compareSpacingGraph(int i) const { return m_compareGraphs.value(i).second; }

  // A vertical marker at `value` (the value inspector's input); NaN hides it.
  void setMarker(double value);
  double marker() const { return m_markerValue; }

  // Log axis of |value|: only the positive values are drawn (signed formats mirror them).
  void setLogScale(bool on);
  bool logScale() const { return m_logScale; }

  // The values on the current axis (all finite values, or the positive ones on the log axis),
  // ascending, and the spacing from each to the next (the last has none: NaN).
  const QVector<double>& plottedValues() const { return m_values; }
  const QVector<double>& plottedSpacings() const { return m_spacings; }

  QCPGraph* valueGraph() const { return m_valueGraph; }      // the rug of tick marks
  QCPGraph* spacingGraph() const { return m_spacingGraph; }  // spacing to the next value

  // Writes the plot by suffix: .png, .pdf, .svg (when built with Qt SVG), or .csv (columns
  // value,spacing of the plotted values). Atomic: on failure nothing is left at `path`, and
  // *error (if given) says why in one line.
  bool exportTo(const QString& path, QString* error = nullptr);
  static QStringList exportSuffixes();  // lower case, without the dot: "png", "pdf", ...
  // "value,spacing" rows of the plotted values; with compare formats "format,value,spacing" rows of all.
  QByteArray csv() const;

public slots:
  void resetView();  // back to the full range of the format (also on double-click)

signals:
  void formatChanged(const QString& name);
  void logScaleChanged(bool on);

private:
  void rebuild();
  void updateTitle();
  void showValueTip(QMouseEvent* event);

  qs::Format m_format;
  bool m_logScale = false;
  QVector<double> m_allFinite;  // every finite distinct value of m_format
  QVector<double> m_values, m_spacings;
  QCPRange m_fullX, m_fullY;
  QCPGraph* m_valueGraph = nullptr;
  QCPGraph* m_spacingGraph = nullptr;
  QCPTextElement* m_title = nullptr;
  QCPTextElement* m_subtitle = nullptr;
  QList<qs::Format> m_compare;
  QList<QPair<QCPGraph*, QCPGraph*>> m_compareGraphs;  // (rug, spacing) per compare format
  QCPItemStraightLine* m_marker = nullptr;
  double m_markerValue = std::numeric_limits<double>::quiet_NaN();
};
