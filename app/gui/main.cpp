// quantscope: the GUI entry point. Run `quantscope --format fp16`; headless:
// `QT_QPA_PLATFORM=offscreen quantscope --format e4m3fn --screenshot out.png` (or under `xvfb-run -a`).
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QSaveFile>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mainwindow.h"

#ifndef QS_VERSION
#define QS_VERSION "0.0.0"
#endif

namespace {

void setupParser(QCommandLineParser& parser) {
  parser.setApplicationDescription(QStringLiteral("QuantScope: explore number formats and quantization."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addOption({QStringLiteral("format"),
                    QStringLiteral("Initial format: a table name (e4m3fn, fp16, int8, ...) or a custom spec "
                                   "e<E>m<M>[:bias=B][:specials=ieee|fn|fnuz|none][:unsigned]."),
                    QStringLiteral("SPEC"), QStringLiteral("e4m3fn")});
  parser.addOption({QStringLiteral("log-scale"), QStringLiteral("Start with the log axis of |value|.")});
  parser.addOption({QStringLiteral("screenshot"),
                    QStringLiteral("Render the window once it is shown, save it to FILE (PNG) and exit."),
                    QStringLiteral("FILE")});
}

bool envSet(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// Without a display Qt aborts with a long xcb message; say plainly what to do instead.
bool displayAvailable(int argc, char** argv) {
#if defined(Q_OS_UNIX) && !defined(Q_OS_MACOS)
  if (envSet("DISPLAY") || envSet("WAYLAND_DISPLAY") || envSet("QT_QPA_PLATFORM")) return true;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "-platform") || !std::strcmp(argv[i], "--platform")) return true;
  return false;
#else
  (void)argc, (void)argv;
  return true;
#endif
}

bool asksForHelpOrVersion(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* opt : {"-h", "--help", "-?", "--help-all", "-v", "--version"})
      if (!std::strcmp(argv[i], opt)) return true;
  return false;
}

bool saveScreenshot(QWidget& window, const QString& path, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    *error = file.errorString();
    return false;
  }
  const QByteArray format = QFileInfo(path).suffix().isEmpty() ? QByteArray("PNG")
                                                                : QFileInfo(path).suffix().toLatin1();
  if (!window.grab().save(&file, format.constData())) {
    file.cancelWriting();
    *error = QStringLiteral("could not encode the image as %1").arg(QString::fromLatin1(format));
    return false;
  }
  if (!file.commit()) {
    *error = file.errorString();
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication::setApplicationName(QStringLiteral("quantscope"));
  QCoreApplication::setApplicationVersion(QStringLiteral(QS_VERSION));

  if (!displayAvailable(argc, argv)) {
    if (asksForHelpOrVersion(argc, argv)) {  // --help and --version need no display
      QCoreApplication app(argc, argv);
      QCommandLineParser parser;
      setupParser(parser);
      parser.process(app);  // prints and exits
    }
    std::fputs("quantscope: no display found (DISPLAY/WAYLAND_DISPLAY unset). Run it under a desktop session, "
               "or headless: `xvfb-run ./build/quantscope`, `QT_QPA_PLATFORM=offscreen ./build/quantscope "
               "--screenshot out.png`, or use the command-line tool `./build/quantscope-cli --help`.\n",
               stderr);
    return 2;
  }

  QApplication app(argc, argv);
  QCommandLineParser parser;
  setupParser(parser);
  parser.process(app);

  MainWindow window;
  QString error;
  if (!window.selectFormat(parser.value(QStringLiteral("format")), &error)) {
    std::fprintf(stderr, "quantscope: --format: %s\n", qPrintable(error));
    return 2;
  }
  window.setLogScale(parser.isSet(QStringLiteral("log-scale")));
  window.show();

  if (parser.isSet(QStringLiteral("screenshot"))) {
    const QString path = parser.value(QStringLiteral("screenshot"));
    // A short delay lets the layout settle and the plot's queued replot run before grabbing.
    QTimer::singleShot(300, &window, [&window, path] {
      QString why;
      if (!saveScreenshot(window, path, &why)) {
        std::fprintf(stderr, "quantscope: --screenshot: cannot write %s: %s\n", qPrintable(path), qPrintable(why));
        QCoreApplication::exit(1);
        return;
      }
      QCoreApplication::exit(0);
    });
  }
  return app.exec();
}
