// The house style of QuantScope's plots, in one place: a bold title row (and an optional grey subtitle)
// above the axis rect, the framed legend, dotted grids, and placeLegendBelow for long legends.
// Used by every plot of the window, so figures exported from different tabs match.
#pragma once

#include <QFont>
#include <QFontMetrics>
#include <QPen>
#include <QStringList>
#include <algorithm>
#include <utility>

#include <qcustomplot.h>

namespace plotstyle {

// Titles and subtitles keep their whole text: set through plotstyle::setText, a text element is wrapped
// to the width it has (at its own separators " · ", " — ", ", " and spaces) before every replot, so a
// 1280 x 720 window shows every number of "max 57344 · min normal 2⁻¹⁴ …" on two lines instead of cutting
// the line. Only a single word wider than the plot (a 20,000-character tensor name) is elided, in the
// middle. fullText() gives the unwrapped text (CSV captions, tests).
inline const char* const kFullTextProperty = "qsFullText";

// Greedy line filling: whitespace runs between words are kept inside a line and dropped at a break, as
// is a lone separator word ("·", "—") left at either end of a line.
inline QStringList wrapLines(const QString& text, const QFontMetrics& fm, int width, int maxLines = 4) {
  QStringList out;
  const auto isSep = [](const QString& w) { return w == u"·" || w == u"—" || w == u"|"; };
  for (const QString& paragraph : text.split(u'\n')) {
    struct Word {
      QString space, text;
    };
    QList<Word> words;
    QString space, word;
    for (QChar c : paragraph) {
      if (c.isSpace()) {
        if (!word.isEmpty()) words.append({space, word}), space.clear(), word.clear();
        space += c;
      } else {
        word += c;
      }
    }
    if (!word.isEmpty()) words.append({space, word});
    QList<Word> line;  // the words of the line being filled, with the whitespace before each
    const auto joined = [](const QList<Word>& l) {
      QString t;
      for (qsizetype i = 0; i < l.size(); ++i) t += (i ? l[i].space : QString()) + l[i].text;
      return t;
    };
    const auto flush = [&] {
      while (!line.isEmpty() && isSep(line.back().text)) line.removeLast();
      if (!line.isEmpty()) out << joined(line);
      line.clear();
    };
    for (Word w : words) {
      if (fm.horizontalAdvance(w.text) > width) w.text = fm.elidedText(w.text, Qt::ElideMiddle, width);
      if (line.isEmpty() && isSep(w.text)) continue;
      line.append(w);
      if (line.size() > 1 && fm.horizontalAdvance(joined(line)) > width) {
        line.removeLast();
        // Break at the last separator when the words after it (one fact: "253 distinct values") fit on
        // the next line together with this one; else between words.
        qsizetype sep = line.size() - 1;
        while (sep >= 0 && !isSep(line[sep].text)) --sep;
        QList<Word> carry;
        if (sep >= 0 && sep + 1 < line.size()) {
          carry = line.mid(sep + 1);
          carry.append(w);
          if (fm.horizontalAdvance(joined(carry)) <= width) {
            line.resize(sep + 1);
          } else {
            carry.clear();
          }
        }
        flush();
        if (!carry.isEmpty()) line = carry;
        else if (!isSep(w.text)) line.append(w);
      }
    }
    flush();
    if (words.isEmpty()) out << QString();
  }
  if (maxLines > 0 && out.size() > maxLines) {
    QString last = out.mid(maxLines - 1).join(u' ');
    out = out.mid(0, maxLines - 1);
    out << fm.elidedText(last, Qt::ElideRight, width);
  }
  return out;
}

inline QString fullText(const QCPTextElement* e) {
  const QVariant v = e->property(kFullTextProperty);
  return v.isValid() ? v.toString() : e->text();
}

// Re-wraps every text element set through setText (and every legend name set through setLegendName)
// to the width the last layout gave it.
inline void fitTexts(QCustomPlot* p) {
  const int plotWidth = p->viewport().width();
  if (p->legend && plotWidth > 0) {
    const QFontMetrics fm(p->legend->font());
    const int width = std::max(80, plotWidth - p->legend->iconSize().width() - 60);
    for (int i = 0; i < p->plottableCount(); ++i) {
      QCPAbstractPlottable* pl = p->plottable(i);
      const QVariant full = pl->property(kFullTextProperty);
      if (!full.isValid()) continue;
      const QString wrapped = wrapLines(full.toString(), fm, width, 3).join(QStringLiteral("\n    "));
      if (wrapped != pl->name()) pl->setName(wrapped);
    }
  }
  for (QCPLayoutElement* el : p->plotLayout()->elements(true)) {
    auto* t = qobject_cast<QCPTextElement*>(el);
    if (!t) continue;
    const QVariant full = t->property(kFullTextProperty);
    if (!full.isValid()) continue;
    // A title over a one-column layout spans the plot (whatever size it is drawn at: an export at 1200 px
    // of a plot shown at 400); elsewhere, the width its cell had in the last layout.
    const bool spans = t->layout() == p->plotLayout() && p->plotLayout()->columnCount() == 1;
    int w = !spans && t->outerRect().width() > 40 ? std::min(t->outerRect().width(), plotWidth) : plotWidth;
    w -= t->margins().left() + t->margins().right() + 8;
    const QString wrapped = wrapLines(full.toString(), QFontMetrics(t->font()), std::max(w, 40)).join(u'\n');
    if (wrapped != t->text()) t->setText(wrapped);
  }
}

// Tick spacing that follows the axis length: about one label per 90 px across and per 34 px up, so a
// small plot at 1280 x 720 never runs its labels together and a large one gets more. Text and fixed
// tickers (named categories, chosen steps) are left alone.
inline void fitTicks(QCustomPlot* p) {
  for (QCPAxisRect* rect : p->axisRects())
    for (QCPAxis* axis : rect->axes()) {
      const QSharedPointer<QCPAxisTicker> ticker = axis->ticker();
      if (!ticker || ticker.dynamicCast<QCPAxisTickerText>() || ticker.dynamicCast<QCPAxisTickerFixed>()) continue;
      const bool across = axis->orientation() == Qt::Horizontal;
      const int length = across ? rect->width() : rect->height();
      if (length <= 0) continue;
      const int count = std::clamp(length / (across ? 90 : 34), 2, 10);
      if (ticker->tickCount() != count) ticker->setTickCount(count);
    }
}

inline void installTextFitting(QCustomPlot* p) {
  if (p->property("qsFitsTexts").toBool()) return;
  p->setProperty("qsFitsTexts", true);
  QObject::connect(p, &QCustomPlot::beforeReplot, p, [p] {
    fitTexts(p);
    fitTicks(p);
  });
}

inline void installTextFitting(QCustomPlot* p);

// A legend entry's text that keeps every word: wrapped (continuation lines indented) to the plot's width.
inline void setLegendName(QCPAbstractPlottable* pl, const QString& text) {
  pl->setProperty(kFullTextProperty, text);
  pl->setName(text);
  installTextFitting(pl->parentPlot());
}
inline QString legendName(const QCPAbstractPlottable* pl) {
  const QVariant v = pl->property(kFullTextProperty);
  return v.isValid() ? v.toString() : pl->name();
}

inline void setText(QCPTextElement* e, const QString& text) {
  e->setProperty(kFullTextProperty, text);
  installTextFitting(e->parentPlot());
  if (e->parentPlot()->viewport().width() > 0) {
    const QString wrapped = wrapLines(text, QFontMetrics(e->font()), std::max(40, e->parentPlot()->viewport().width() - 16)).join(u'\n');
    e->setText(wrapped);
  } else {
    e->setText(text);
  }
}

// Inserts a title row at the top (row 0) and returns it. pointSize 11 for the panels' plots, 13 for
// the main format grid.
inline QCPTextElement* addTitle(QCustomPlot* p, const QString& text, int pointSize = 11, QMargins margins = {0, 6, 0, 2}) {
  p->plotLayout()->insertRow(0);
  auto* t = new QCPTextElement(p, text, QFont(p->font().family(), pointSize, QFont::Bold));
  t->setObjectName(QStringLiteral("title"));
  t->setMargins(margins);
  p->plotLayout()->addElement(0, 0, t);
  setText(t, text);
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
  setText(sub, QString());
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
