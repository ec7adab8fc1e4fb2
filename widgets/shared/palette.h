// One colour per scheme, shared by the Error tab's plots, its metrics table and the SQNR heatmap's
// labels, so that a scheme reads the same everywhere (the palette of the Latency tab).
#pragma once

#include <QColor>

#include <iterator>

inline QColor schemeColor(int index) {
  static const QColor palette[] = {QColor(31, 119, 180), QColor(230, 110, 20), QColor(44, 160, 44),
                                   QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75),
                                   QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34),
                                   QColor(23, 190, 207)};
  const int n = int(std::size(palette));
  return palette[((index % n) + n) % n];
}
