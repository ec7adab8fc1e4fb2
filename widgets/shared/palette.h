// The one series palette of the app (the ten "tab10" colours): a scheme in the Error tab's plots, its
// metrics table and the SQNR heatmap's labels, a kernel in the Latency tab, a run in the Training tab,
// a rule in the Block scales and Observers tabs, a convention in the Conventions tab, and the Formats
// tab's number line (colour 0) and compared formats (2, 4, 3, 5). So a scheme reads the same everywhere.
#pragma once

#include <QColor>

#include <iterator>

namespace palette {

inline constexpr int kSize = 10;

// Colour `index` of the palette; any integer, wrapping around (negative too).
inline QColor color(int index) {
  static const QColor colors[kSize] = {QColor(31, 119, 180), QColor(230, 110, 20), QColor(44, 160, 44),
                                       QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75),
                                       QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34),
                                       QColor(23, 190, 207)};
  return colors[((index % kSize) + kSize) % kSize];
}

}  // namespace palette
