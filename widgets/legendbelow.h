// Moves a QCustomPlot's legend from the inset of its axis rect into a row of its own under the plot,
// so long legends (scheme, grid, scale) never cover the data. Used by the Error tab's two plots.
#pragma once

#include <qcustomplot.h>

inline void placeLegendBelow(QCustomPlot* plot, int columns = 1) {  // entries fill `columns` columns, row by row
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
