// The house style of QuantScope's plots, in one place: a bold title row (and an optional grey subtitle)
// above the axis rect, the framed legend, dotted grids, and placeLegendBelow for long legends.
// Used by every plot of the window, so figures exported from different tabs match.
#pragma once

#include <QFont>
#include <QPen>
#include <utility>

#include <qcustomplot.h>

namespace plotstyle {

// Inserts a title row at the top (row 0) and returns it. pointSize 11 for the panels' plots, 13 for
// the main format grid.
inline QCPTextElement* addTitle(QCustomPlot* p, const QString& text, int pointSize = 11, QMargins margins = {0, 6, 0, 2}) {
  p->plotLayout()->insertRow(0);
  auto* t = new QCPTextElement(p, text, QFont(p->font().family(), pointSize, QFont::Bold));
  t->setObjectName(QStringLiteral("title"));
  t->setMargins(margins);
  p->plotLayout()->addElement(0, 0, t);
  return t;
}

// A title and a grey subtitle under it (rows 0 and 1).
inline std::pair<QCPTextElement*, QCPTextElement*> addTitleAndSubtitle(QCustomPlot* p, int titlePt = 11, int subtitlePt = 9) {
  const bool large = titlePt >= 13;
  QCPTextElement* title = addTitle(p, QString(), titlePt, large ? QMargins(0, 8, 0, 0) : QMargins(0, 6, 0, 0));
  p->plotLayout()->insertRow(1);
  auto* sub = new QCPTextElement(p, QString(), QFont(p->font().family(), subtitlePt));
  sub->setObjectName(QStringLiteral("subtitle"));
  sub->setTextColor(QColor(70, 70, 70));
  sub->setMargins(large ? QMargins(0, 2, 0, 4) : QMargins(0, 1, 0, 3));
  p->plotLayout()->addElement(1, 0, sub);
  return {title, sub};
}

inline void styleLegend(QCustomPlot* p, int pointSize = 8) {
  p->legend->setVisible(true);
  p->legend->setBrush(QColor(255, 255, 255, 222));
  p->legend->setBorderPen(QPen(QColor(200, 200, 200)));
  p->legend->setFont(QFont(p->font().family(), pointSize));
}

inline void styleGrid(QCPAxis* a, int labelPt = 9) {
  a->grid()->setPen(QPen(QColor(222, 222, 222), 0, Qt::DotLine));
  a->setLabelFont(QFont(a->parentPlot()->font().family(), labelPt));
}

// Moves the legend from the inset of the axis rect into a row of its own under the plot, so long
// legends (scheme, grid, scale) never cover the data. Entries fill `columns` columns, row by row.
inline void placeLegendBelow(QCustomPlot* plot, int columns = 1) {
  plot->axisRect()->insetLayout()->take(plot->legend);
  plot->axisRect()->insetLayout()->simplify();
  auto* row = new QCPLayoutGrid;
  const int at = plot->plotLayout()->rowCount();
  plot->plotLayout()->addElement(at, 0, row);
  plot->plotLayout()->setRowStretchFactor(at, 0.001);
  row->setMargins(QMargins(6, 0, 6, 6));
  row->addElement(0, 0, plot->legend);
  plot->legend->setWrap(columns);
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot->legend->setRowSpacing(0);
  plot->legend->setColumnSpacing(14);
}

}  // namespace plotstyle
