// ElidedLabel and the elide helpers: text from files and users that cannot widen the window.
#include "elidedlabel.h"

#include <QEvent>
#include <QFontMetrics>
#include <QPainter>
#include <QResizeEvent>
#include <QStyle>
#include <QTextDocumentFragment>

#include <algorithm>
#include <vector>

namespace elide {

namespace {

// Nothing wider than this many characters fits on a screen; pixel elision starts from at most this.
constexpr int kMaxLineChars = 2000;
constexpr int kToolTipChars = 4000;
constexpr int kToolTipLine = 100;

// Shortens the runs of non-space characters of `text` to `maxRun` units. With `rich`, tags are copied
// as they are and end a run, and an entity (&amp;) is one unit.
QString shortenRuns(const QString& text, int maxRun, bool rich) {
  maxRun = std::max(maxRun, 3);
  QString out;
  out.reserve(std::min<qsizetype>(text.size(), 64 * 1024));
  std::vector<qsizetype> units;  // start of each unit of the current run
  qsizetype runStart = 0;
  auto flush = [&](qsizetype end) {
    if (qsizetype(units.size()) <= maxRun) {
      out += QStringView(text).mid(runStart, end - runStart);
    } else {
      const int keep = maxRun - 1, head = (keep + 1) / 2, tail = keep / 2;
      out += QStringView(text).mid(runStart, units[std::size_t(head)] - runStart);
      out += kEllipsis;
      out += QStringView(text).mid(units[units.size() - std::size_t(tail)], end - units[units.size() - std::size_t(tail)]);
    }
    units.clear();
  };
  const qsizetype n = text.size();
  qsizetype i = 0;
  while (i < n) {
    const QChar c = text[i];
    if (c.isSpace() || (rich && c == u'<')) {
      flush(i);
      qsizetype end = i + 1;
      if (c == u'<') {
        end = text.indexOf(u'>', i);
        end = end < 0 ? n : end + 1;
      }
      out += QStringView(text).mid(i, end - i);
      i = end;
      runStart = i;
      continue;
    }
    units.push_back(i);
    qsizetype len = 1;
    if (c.isHighSurrogate() && i + 1 < n && text[i + 1].isLowSurrogate()) len = 2;
    if (rich && c == u'&') {
      const qsizetype semi = text.indexOf(u';', i);
      if (semi > i && semi - i <= 10) len = semi - i + 1;
    }
    i += len;
  }
  flush(n);
  return out;
}

}  // namespace

QString middle(const QString& text, int maxChars) {
  if (text.size() <= maxChars) return text;
  if (maxChars <= 1) return QString(kEllipsis);
  const qsizetype keep = maxChars - 1;
  qsizetype head = (keep + 1) / 2, tail = keep / 2;
  if (head > 0 && text[head - 1].isHighSurrogate()) --head;  // never half a surrogate pair
  if (tail > 0 && text[text.size() - tail].isLowSurrogate()) --tail;
  return text.left(head) + kEllipsis + text.right(tail);
}

QString runs(const QString& text, int maxRun) { return shortenRuns(text, maxRun, false); }
QString richRuns(const QString& html, int maxRun) { return shortenRuns(html, maxRun, true); }

QString toolTip(const QString& text) {
  // Plain text in a tooltip is not wrapped: break it here, at spaces where there are some.
  const QString shown = middle(text, kToolTipChars);
  QString out;
  out.reserve(shown.size() + shown.size() / kToolTipLine + 1);
  qsizetype lineStart = 0, lastSpace = -1;
  for (qsizetype i = 0; i < shown.size(); ++i) {
    const QChar c = shown[i];
    if (c == u'\n') {
      out += QStringView(shown).mid(lineStart, i + 1 - lineStart);
      lineStart = i + 1;
      lastSpace = -1;
      continue;
    }
    if (c == u' ') lastSpace = i;
    if (i - lineStart >= kToolTipLine) {
      const qsizetype cut = lastSpace > lineStart ? lastSpace : i;
      out += QStringView(shown).mid(lineStart, cut - lineStart);
      out += u'\n';
      lineStart = cut == lastSpace ? cut + 1 : cut;
      lastSpace = -1;
    }
  }
  out += QStringView(shown).mid(lineStart);
  return out;
}

}  // namespace elide

ElidedLabel::ElidedLabel(const QString& text, QWidget* parent) : QLabel(parent) {
  QLabel::setTextFormat(Qt::PlainText);
  setText(text);
}

void ElidedLabel::setText(const QString& text) {
  m_full = text;
  m_naturalWidth = -1;
  updateShown();
  updateGeometry();
}

void ElidedLabel::setWordWrap(bool on) {
  QLabel::setWordWrap(on);
  QLabel::setTextFormat(on ? m_format : Qt::PlainText);  // one elided line is plain text
  m_naturalWidth = -1;
  updateShown();
  updateGeometry();
}

void ElidedLabel::setTextFormat(Qt::TextFormat format) {
  m_format = format;
  if (wordWrap()) QLabel::setTextFormat(format);
  updateShown();
}

void ElidedLabel::setElideMode(Qt::TextElideMode mode) {
  m_mode = mode;
  updateShown();
}

void ElidedLabel::setMaximumLines(int lines) {
  m_maxLines = std::max(0, lines);
  if (m_maxLines > 0) {
    setAlignment(Qt::AlignLeft | Qt::AlignTop);
    setMaximumHeight(m_maxLines * fontMetrics().lineSpacing() + 2 * (margin() + frameWidth()) + 2);
  } else {
    setMaximumHeight(QWIDGETSIZE_MAX);
  }
  updateShown();
}

bool ElidedLabel::isRich() const {
  return m_format == Qt::RichText || (m_format == Qt::AutoText && Qt::mightBeRichText(m_full));
}

QString ElidedLabel::oneLine() const {
  QString line = elide::middle(m_full, elide::kMaxLineChars);
  line.replace(u'\n', u' ');
  return line;
}

QString ElidedLabel::elidedLine() const {
  const int width = std::max(0, contentsRect().width() - 2 * margin() - std::max(indent(), 0));
  return fontMetrics().elidedText(oneLine(), m_mode, width);
}

QString ElidedLabel::shownText() const { return wordWrap() ? QLabel::text() : elidedLine(); }

void ElidedLabel::setAutoToolTip(bool elided) {
  if (elided) {
    setToolTip(elide::toolTip(wordWrap() && isRich() ? QTextDocumentFragment::fromHtml(m_full).toPlainText() : m_full));
    m_autoTip = true;
  } else if (m_autoTip) {
    setToolTip(QString());
    m_autoTip = false;
  }
}

void ElidedLabel::updateShown() {
  if (!wordWrap()) {
    // QLabel keeps the text (QLabel::text() is the message, for whoever reads it); paintEvent elides.
    QLabel::setText(oneLine());
    setAutoToolTip(elidedLine() != m_full);
    update();
    return;
  }
  const QString shortened = isRich() ? elide::richRuns(m_full) : elide::runs(m_full);
  QLabel::setTextFormat(m_format);
  QLabel::setText(shortened);
  bool cut = shortened != m_full;
  if (m_maxLines > 0 && width() > 0 && heightForWidth(width()) > maximumHeight()) {
    // Past the last line: the longest start (as plain text) that fits, ending at a space where one is
    // near, and "…". Rich text loses its formatting only when it is this long.
    const QString plain = isRich() ? QTextDocumentFragment::fromHtml(shortened).toPlainText() : shortened;
    QLabel::setTextFormat(Qt::PlainText);
    auto fits = [&](qsizetype n) {
      QLabel::setText(plain.left(n) + elide::kEllipsis);
      return heightForWidth(width()) <= maximumHeight();
    };
    qsizetype lo = 0, hi = plain.size();
    while (lo < hi) {
      const qsizetype mid = (lo + hi + 1) / 2;
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    const qsizetype space = plain.lastIndexOf(u' ', lo);
    if (space > 0 && lo - space < 24) lo = space;
    QLabel::setText(plain.left(lo) + elide::kEllipsis);
    cut = true;
  }
  setAutoToolTip(cut);
}

QSize ElidedLabel::sizeHint() const {
  const QFontMetrics fm = fontMetrics();
  const int cap = fm.averageCharWidth() * 80;
  const int extra = 2 * (margin() + frameWidth()) + std::max(indent(), 0);
  if (!wordWrap()) {
    if (m_naturalWidth < 0) const_cast<ElidedLabel*>(this)->m_naturalWidth = fm.horizontalAdvance(oneLine());
    return QSize(std::min(m_naturalWidth, cap) + extra, fm.height() + 2 * (margin() + frameWidth()));
  }
  QSize s = QLabel::sizeHint();
  s.setWidth(std::min(s.width(), cap + extra));
  if (m_maxLines > 0) s.setHeight(std::min(s.height(), maximumHeight()));
  return s;
}

QSize ElidedLabel::minimumSizeHint() const {
  const int extra = 2 * (margin() + frameWidth());
  const int narrow = fontMetrics().averageCharWidth() * (wordWrap() ? 12 : 6) + extra;
  if (!wordWrap()) return QSize(std::min(sizeHint().width(), narrow), sizeHint().height());
  QSize s = QLabel::minimumSizeHint();
  s.setWidth(std::min({s.width(), sizeHint().width(), narrow}));
  if (m_maxLines > 0) s.setHeight(std::min(s.height(), maximumHeight()));
  return s;
}

void ElidedLabel::paintEvent(QPaintEvent* event) {
  if (wordWrap()) return QLabel::paintEvent(event);
  QPainter painter(this);
  drawFrame(&painter);
  const QRect r = contentsRect().adjusted(margin() + std::max(indent(), 0), margin(), -margin(), -margin());
  style()->drawItemText(&painter, r, int(QStyle::visualAlignment(layoutDirection(), alignment())), palette(), isEnabled(),
                        elidedLine(), foregroundRole());
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
  QLabel::resizeEvent(event);
  if (event->size().width() != event->oldSize().width()) updateShown();
}

void ElidedLabel::changeEvent(QEvent* event) {
  QLabel::changeEvent(event);
  if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) {
    m_naturalWidth = -1;
    if (m_maxLines > 0) setMaximumLines(m_maxLines);
    else updateShown();
  }
}
