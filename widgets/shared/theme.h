// Colours for text the widgets draw in their own colour (errors, hints, warnings, the demo banner), chosen
// by the palette in use so that they stay readable on a dark desktop as on a light one. Plots keep their
// own white background (figures look the same in the app and in papers), so they need nothing here.
// Exercise: tests/tst_mainwindow.cpp (darkPaletteReadable).
#pragma once

#include <QColor>
#include <QPalette>
#include <QString>
#include <QWidget>

#include <algorithm>
#include <cmath>

namespace theme {

// A palette is dark when its window colour is (the usual dark desktop themes: Breeze Dark, Adwaita-dark).
inline bool isDark(const QPalette& p) { return p.color(QPalette::Window).lightnessF() < 0.5; }
inline bool isDark(const QWidget* w) { return isDark(w ? w->palette() : QPalette()); }

inline QColor errorColor(const QWidget* w) { return isDark(w) ? QColor(255, 138, 128) : QColor(198, 40, 40); }
inline QColor hintColor(const QWidget* w) { return isDark(w) ? QColor(170, 170, 170) : QColor(119, 119, 119); }
inline QColor warningColor(const QWidget* w) { return isDark(w) ? QColor(255, 183, 77) : QColor(179, 92, 0); }

inline QString css(const QColor& c) { return QStringLiteral("color: %1;").arg(c.name()); }
inline QString errorCss(const QWidget* w) { return css(errorColor(w)); }
inline QString hintCss(const QWidget* w) { return css(hintColor(w)); }
inline QString warningCss(const QWidget* w) { return css(warningColor(w)); }

// The demo banner: a pale yellow band with dark text in a light palette, a dark amber band with light
// text in a dark one (its text used to take the palette's white on the pale band).
inline QString demoBarCss(const QWidget* w) {
  return isDark(w) ? QStringLiteral("#demoBar { background: #3a3220; border-bottom: 1px solid #6b5a2a; } "
                                    "#demoBar QLabel { color: #f3e9c6; }")
                   : QStringLiteral("#demoBar { background: #fff8e1; border-bottom: 1px solid #e0c97f; } "
                                    "#demoBar QLabel { color: #2b2410; }");
}

// WCAG contrast ratio of two colours (1 .. 21); 4.5 is the usual floor for text.
inline double contrast(const QColor& a, const QColor& b) {
  auto lum = [](const QColor& c) {
    auto ch = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF());
  };
  const double la = lum(a), lb = lum(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

}  // namespace theme
