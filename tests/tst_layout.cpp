// The window fits a laptop (issue 19 item 1): built offscreen at 1280 x 720 with every demo preset,
// every tab is shown and checked: the window's minimum fits the screen, no plot title or subtitle loses
// a word (they wrap to the plot's width, each line inside it), the value inspector's columns are all
// inside its table and wide enough for their text, and every visible table header reads whole. At
// 1024 x 700 the window still fits once the Setup dock is hidden.
#include <QDockWidget>
#include <QHeaderView>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>

#include <qcustomplot.h>

#include "mainwindow.h"
#include "plotstyle.h"
#include "valueinspector.h"
#include "viewsettings.h"

class TestLayout : public QObject {
  Q_OBJECT

private slots:
  void fitsAt1280x720_data();
  void fitsAt1280x720();
  void fitsAt1024x700WithoutSetupDock();
  void wrapKeepsEveryWord();
};

namespace {

// The words of a text, separators (·, —, |) left out: what wrapping may move between lines but not lose.
QStringList words(const QString& text) {
  QStringList out;
  for (const QString& w : text.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts))
    if (w != u"·" && w != u"—" && w != u"|") out << w;
  return out;
}

// Every problem found on the visible widgets of the current tab, as readable lines.
QStringList layoutProblems(QWidget* root, const QString& where) {
  QStringList problems;
  for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
    if (!plot->isVisible()) continue;
    plot->replot();
    // Room for the data: a plot squeezed until its titles and legend eat the axis rect shows nothing.
    if (plot->axisRect()->height() < 40)
      problems << QStringLiteral("%1: plot '%2' has a %3 px high data area").arg(where, plot->objectName()).arg(plot->axisRect()->height());
    for (QCPLayoutElement* el : plot->plotLayout()->elements(true)) {
      auto* t = qobject_cast<QCPTextElement*>(el);
      if (!t || !t->visible()) continue;
      const QString full = plotstyle::fullText(t);
      if (full.isEmpty()) continue;
      if (words(t->text()) != words(full))
        problems << QStringLiteral("%1: plot '%2' title shows '%3' for '%4'").arg(where, plot->objectName(), t->text(), full);
      const QFontMetrics fm(t->font());
      for (const QString& line : t->text().split(u'\n'))
        if (fm.horizontalAdvance(line) > t->outerRect().width())
          problems << QStringLiteral("%1: plot '%2' title line '%3' is %4 px in %5 px")
                          .arg(where, plot->objectName(), line)
                          .arg(fm.horizontalAdvance(line))
                          .arg(t->outerRect().width());
    }
  }
  // Legend entries set through plotstyle::setLegendName: wrapped, every word kept, every line inside the plot.
  for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
    if (!plot->isVisible() || !plot->legend || !plot->legend->visible()) continue;
    const QFontMetrics fm(plot->legend->font());
    for (int i = 0; i < plot->plottableCount(); ++i) {
      const QCPAbstractPlottable* pl = plot->plottable(i);
      if (!pl->property(plotstyle::kFullTextProperty).isValid()) continue;
      if (words(pl->name()) != words(plotstyle::legendName(pl)))
        problems << QStringLiteral("%1: plot '%2' legend shows '%3' for '%4'").arg(where, plot->objectName(), pl->name(),
                                                                                plotstyle::legendName(pl));
      for (const QString& line : pl->name().split(u'\n'))
        if (fm.horizontalAdvance(line) + plot->legend->iconSize().width() + 20 > plot->width())
          problems << QStringLiteral("%1: plot '%2' legend line '%3' is wider than the plot").arg(where, plot->objectName(), line);
    }
  }
  for (QTableView* table : root->findChildren<QTableView*>()) {
    if (!table->isVisible() || !table->model()) continue;
    QHeaderView* h = table->horizontalHeader();
    const QFontMetrics fm(h->font());
    int right = 0;
    for (int c = 0; c < table->model()->columnCount(); ++c) {
      if (h->isSectionHidden(c)) continue;
      right = std::max(right, h->sectionViewportPosition(c) + h->sectionSize(c));
      const QString label = table->model()->headerData(c, Qt::Horizontal).toString();
      int labelWidth = 0;
      for (const QString& line : label.split(u'\n')) labelWidth = std::max(labelWidth, fm.horizontalAdvance(line));
      if (labelWidth + 8 > h->sectionSize(c))
        problems << QStringLiteral("%1: table '%2' header '%3' is cut (%4 px in %5 px)")
                        .arg(where, table->objectName(), label)
                        .arg(labelWidth)
                        .arg(h->sectionSize(c));
    }
    if (table->horizontalScrollBarPolicy() == Qt::ScrollBarAlwaysOff && right > table->viewport()->width() + 1)
      problems << QStringLiteral("%1: table '%2' columns end at %3 px in a %4 px view, with no scroll bar")
                      .arg(where, table->objectName())
                      .arg(right)
                      .arg(table->viewport()->width());
  }
  // The inspector's cells: every line of the narrow columns inside its column.
  for (ValueInspector* inspector : root->findChildren<ValueInspector*>()) {
    if (!inspector->isVisible()) continue;
    QTableWidget* t = inspector->modeTable();
    const QFontMetrics fm(t->font());
    for (int r = 0; r < t->rowCount(); ++r)
      for (int c = 0; c < t->columnCount(); ++c) {
        const QTableWidgetItem* item = t->item(r, c);
        if (!item) continue;
        const QRect cell = t->visualRect(t->model()->index(r, c));
        const QRect need = fm.boundingRect(QRect(0, 0, cell.width() - 6, 10000), Qt::TextWordWrap, item->text());
        if (need.height() > cell.height() || (c < 3 && need.width() > cell.width()))
          problems << QStringLiteral("%1: inspector cell (%2, %3) '%4' needs %5 x %6 px, has %7 x %8")
                          .arg(where)
                          .arg(r)
                          .arg(c)
                          .arg(item->text())
                          .arg(need.width())
                          .arg(need.height())
                          .arg(cell.width())
                          .arg(cell.height());
      }
  }
  return problems;
}

}  // namespace

void TestLayout::fitsAt1280x720_data() {
  QTest::addColumn<QString>("preset");
  QTest::newRow("defaults") << QString();
  for (const Preset& p : builtinPresets()) QTest::newRow(qPrintable(p.name)) << p.name;
}

void TestLayout::fitsAt1280x720() {
  QFETCH(QString, preset);
  MainWindow w;
  w.setInteractive(false);
  QString why;
  if (!preset.isEmpty()) QVERIFY2(w.applyPreset(preset, &why), qPrintable(why));
  QVERIFY(w.waitForIdle(60000));
  w.resize(1280, 720);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY2(w.minimumSizeHint().width() <= 1280 && w.minimumSizeHint().height() <= 720,
           qPrintable(QStringLiteral("minimum %1 x %2").arg(w.minimumSizeHint().width()).arg(w.minimumSizeHint().height())));
  QCOMPARE(w.size(), QSize(1280, 720));
  QStringList problems;
  for (int i = 0; i < w.tabs()->count(); ++i) {
    w.tabs()->setCurrentIndex(i);
    QVERIFY(w.waitForIdle(60000));
    QTest::qWait(30);  // queued replots and layouts
    QWidget* tab = w.tabs()->widget(i);
    const QSize min = tab->minimumSizeHint();
    if (min.width() > tab->width() || min.height() > tab->height())
      problems << QStringLiteral("tab %1: minimum %2 x %3 in %4 x %5")
                      .arg(w.tabs()->tabText(i))
                      .arg(min.width())
                      .arg(min.height())
                      .arg(tab->width())
                      .arg(tab->height());
    problems << layoutProblems(tab, w.tabs()->tabText(i));
  }
  QVERIFY2(problems.isEmpty(), qPrintable(problems.join(u'\n')));
}

void TestLayout::fitsAt1024x700WithoutSetupDock() {
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(60000));
  auto* setup = w.findChild<QDockWidget*>(QStringLiteral("setupDock"));
  QVERIFY(setup);
  setup->hide();
  w.resize(1024, 700);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY2(w.minimumSizeHint().width() <= 1024 && w.minimumSizeHint().height() <= 700,
           qPrintable(QStringLiteral("minimum %1 x %2").arg(w.minimumSizeHint().width()).arg(w.minimumSizeHint().height())));
  QCOMPARE(w.size(), QSize(1024, 700));
  QStringList problems;
  for (int i = 0; i < w.tabs()->count(); ++i) {
    w.tabs()->setCurrentIndex(i);
    QTest::qWait(30);
    problems << layoutProblems(w.tabs()->widget(i), w.tabs()->tabText(i));
  }
  QVERIFY2(problems.isEmpty(), qPrintable(problems.join(u'\n')));
}

// The wrapping itself: every word kept in order, lines inside the width, separators never at a line's end.
void TestLayout::wrapKeepsEveryWord() {
  const QFontMetrics fm(QFont(QStringLiteral("DejaVu Sans"), 10));
  const QString text = QStringLiteral("max 57344   ·   min normal 2⁻¹⁴ = 6.103515625e-05   ·   min subnormal 2⁻²⁴ = "
                                      "5.960464477539063e-08   ·   123 distinct values (121 finite + ±inf)");
  for (int width : {220, 300, 600, 2000}) {  // every single word fits 220 px
    const QStringList lines = plotstyle::wrapLines(text, fm, width, 0);
    QCOMPARE(words(lines.join(u' ')), words(text));
    for (const QString& l : lines) {
      QVERIFY2(l.isEmpty() || fm.horizontalAdvance(l) <= width || !l.contains(u' '), qPrintable(l));
      QVERIFY2(!l.endsWith(u'·') && !l.startsWith(u'·'), qPrintable(l));
    }
    if (width == 2000) QCOMPARE(lines.size(), 1);
  }
  // Lines break at the separators when a fact fits whole: "253 distinct values" is not split.
  const QStringList facts = plotstyle::wrapLines(
      QStringLiteral("max 448   ·   min normal 2⁻⁶ = 0.015625   ·   min subnormal 2⁻⁹ = 0.001953125   ·   253 distinct values"),
      fm, fm.horizontalAdvance(QStringLiteral("max 448   ·   min normal 2⁻⁶ = 0.015625   ·   min subnormal 2⁻⁹ = 0.001953125   ·   253")), 0);
  QCOMPARE(facts.size(), 2);
  QCOMPARE(facts.back(), QStringLiteral("253 distinct values"));
  // A single word wider than the plot is shortened in the middle, with both ends kept.
  const QStringList one = plotstyle::wrapLines(QString(500, u'x') + QStringLiteral("END"), fm, 200, 0);
  QCOMPARE(one.size(), 1);
  QVERIFY(one.front().endsWith(QStringLiteral("END")) && one.front().contains(QChar(0x2026)));
  // At most maxLines lines, the last one cut with "…".
  const QStringList capped = plotstyle::wrapLines(QStringLiteral("word ").repeated(200), fm, 100, 3);
  QCOMPARE(capped.size(), 3);
  QVERIFY(capped.back().endsWith(QChar(0x2026)));
}

QTEST_MAIN(TestLayout)
#include "tst_layout.moc"
