// ElidedLabel: the label for text that comes from users and files (tensor names, paths, demo titles and
// explanations, status lines that quote them). Whatever the text, it never asks the window for more width:
// one line is elided to the width it gets (the whole text in the tooltip); wrapped text has its
// unbreakable runs (a 20,000-character tensor name) shortened in the middle, and at most maximumLines()
// lines tall. The `elide` helpers do the same for text that goes elsewhere (plot titles, menus, tooltips).
// Exercise: tests/tst_mainwindow.cpp (longTextsKeepWindowSize), tests/tst_errorpanel.cpp (longTensorNameKeepsWidth).
#pragma once

#include <QLabel>
#include <QString>

namespace elide {

// Longest run without a break that wrapped text keeps whole; longer runs keep both ends.
constexpr int kMaxRun = 96;
constexpr QChar kEllipsis = QChar(0x2026);

// `text` cut to at most `maxChars` characters, the middle replaced by "…" (both ends kept: a tensor
// name's layer and its kind, a path's folder and its file).
QString middle(const QString& text, int maxChars);
// Plain text: every run of non-space characters longer than `maxRun` shortened with middle().
QString runs(const QString& text, int maxRun = kMaxRun);
// Rich text: runs() applied to the text between tags (entities count as one character).
QString richRuns(const QString& html, int maxRun = kMaxRun);
// A tooltip for any text: plain, at most a few thousand characters, long runs broken into lines so the
// tip fits on a screen.
QString toolTip(const QString& text);

}  // namespace elide

// One line: QLabel::text() keeps the text (up to a few thousand characters) and paintEvent draws it
// elided. Wrapped: QLabel draws what fits, shortened as above and, past maximumLines(), cut with "…".
// setText()/text()/setTextFormat() hide QLabel's (not virtual): call them through an ElidedLabel pointer.
class ElidedLabel : public QLabel {
  Q_OBJECT

public:
  explicit ElidedLabel(const QString& text = QString(), QWidget* parent = nullptr);

  // The whole text, as given (plain text on one line; plain or rich text when wrapped).
  void setText(const QString& text);
  QString text() const { return m_full; }
  void clear() { setText(QString()); }
  // What is on screen now (elided or cut), as plain text for one line.
  QString shownText() const;
  bool isElided() const { return shownText() != m_full; }

  // One line (default) is elided to the width; wrapped text breaks at spaces, as QLabel's word wrap.
  void setWordWrap(bool on);
  // Wrapped text only (one line is plain text): Qt::AutoText by default.
  void setTextFormat(Qt::TextFormat format);
  void setElideMode(Qt::TextElideMode mode);
  // Wrapped text: at most this many lines tall (0: no limit); the rest is cut, and in the tooltip.
  void setMaximumLines(int lines);
  int maximumLines() const { return m_maxLines; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;

private:
  QString oneLine() const;  // the text as one line, capped to what a screen could show
  QString elidedLine() const;
  bool isRich() const;
  void updateShown();
  void setAutoToolTip(bool elided);

  QString m_full;
  Qt::TextFormat m_format = Qt::AutoText;  // for wrapped text
  Qt::TextElideMode m_mode = Qt::ElideMiddle;
  int m_maxLines = 0;
  int m_naturalWidth = -1;  // cached width of the whole text on one line
  bool m_autoTip = false;   // the tooltip is ours (the whole text), not the caller's
};
