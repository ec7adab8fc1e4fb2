// quantscope: the GUI entry point. Run `quantscope --format fp16`, `quantscope --preset outliers-int8`;
// headless: `quantscope --report DIR [--preset NAME]` (no display needed),
// `QT_QPA_PLATFORM=offscreen quantscope --format e4m3fn --screenshot out.png` (or under `xvfb-run -a`).
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QUrl>
#include <QTabWidget>
#include <QTextStream>
#include <QSaveFile>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>

#include "error/errorpanel.h"
#include "shell/mainwindow.h"
#include "shell/uibench.h"
#include "shell/viewsettings.h"

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
  parser.addOption({QStringLiteral("preset"),
                    QStringLiteral("Start with a teaching demo: e4m3-vs-e5m2, outliers-int8, mx-fp4, stochastic-rounding, "
                                   "saturate-vs-ieee, fp8-sweep (the Demos menu)."),
                    QStringLiteral("NAME")});
  parser.addOption({QStringLiteral("settings"), QStringLiteral("Start with the view saved in FILE (a report's settings.json)."),
                    QStringLiteral("FILE")});
  parser.addOption({QStringLiteral("tab"), QStringLiteral("Show this tab first: Formats, Error, Model, Training, Latency."),
                    QStringLiteral("NAME")});
  parser.addOption({QStringLiteral("report"),
                    QStringLiteral("Write every view (format-grid, error-histogram, flip-counts, latency as PNG/PDF/SVG/CSV) "
                                   "and settings.json into DIR, then exit. Needs no display."),
                    QStringLiteral("DIR")});
  parser.addOption({QStringLiteral("bench-ui"),
                    QStringLiteral("Benchmark: the largest event-loop stall while a 16 M-value analysis runs (CSV on stdout).")});
  parser.addOption({QStringLiteral("bench-startup"),
                    QStringLiteral("Benchmark: milliseconds from start until the window is shown (CSV on stdout).")});
  parser.addPositionalArgument(QStringLiteral("files"),
                               QStringLiteral("Tensor files to open (.npy, .npz, .safetensors, .onnx); the first "
                                              "float tensor of the first is shown in the Error tab."),
                               QStringLiteral("[FILE...]"));
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

bool headlessRun(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* opt : {"--report", "-report", "--bench-ui", "-bench-ui"})
      if (!std::strncmp(argv[i], opt, std::strlen(opt))) return true;
  return false;
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
  QElapsedTimer sinceStart;
  sinceStart.start();
  QCoreApplication::setApplicationName(QStringLiteral("quantscope"));
  QCoreApplication::setOrganizationName(QStringLiteral("QuantScope"));
  QCoreApplication::setApplicationVersion(QStringLiteral(QS_VERSION));

  // Reports and benchmarks need no screen: draw offscreen when there is none.
  if (!displayAvailable(argc, argv) && headlessRun(argc, argv)) qputenv("QT_QPA_PLATFORM", "offscreen");

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
  // The desktop entry (resources/quantscope.desktop) and the window icon, for task bars and docks.
  QGuiApplication::setDesktopFileName(QStringLiteral("quantscope"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/quantscope.svg")));
  QCommandLineParser parser;
  setupParser(parser);
  parser.process(app);

  if (parser.isSet(QStringLiteral("bench-ui"))) {
    QTextStream out(stdout);
    const int error = runUiBenchmark(out);
    out << '\n';
    const int observers = runObserversUiBenchmark(out);  // the Observers tab streaming at full speed
    return std::max(error, observers);
  }

  const bool report = parser.isSet(QStringLiteral("report"));
  const bool scripted = report || parser.isSet(QStringLiteral("screenshot")) || parser.isSet(QStringLiteral("bench-startup"));
  // Scripted runs start from the defaults and leave the user's saved settings alone.
  MainWindow window(nullptr, !scripted && !parser.isSet(QStringLiteral("settings")) && !parser.isSet(QStringLiteral("preset")));
  window.setInteractive(!report);
  QString error;
  if (parser.isSet(QStringLiteral("format"))) {
    if (!window.selectFormat(parser.value(QStringLiteral("format")), &error)) {
      std::fprintf(stderr, "quantscope: --format: %s\n", qPrintable(error));
      return 2;
    }
  }
  if (parser.isSet(QStringLiteral("log-scale"))) window.setLogScale(true);
  if (parser.isSet(QStringLiteral("settings"))) {
    const QString path = parser.value(QStringLiteral("settings"));
    QFile f(path);
    ViewSettings s;
    if (!f.open(QIODevice::ReadOnly)) {
      std::fprintf(stderr, "quantscope: --settings: cannot read %s: %s\n", qPrintable(path), qPrintable(f.errorString()));
      return 2;
    }
    // Not JSON, JSON but not one object ('[1]': it once said "no error occurred"), or a bad value.
    if (!ViewSettings::fromJsonText(f.readAll(), &s, &error) || !window.applySettings(s, &error)) {
      std::fprintf(stderr, "quantscope: --settings: %s: %s\n", qPrintable(path), qPrintable(error));
      return 2;
    }
  }
  if (parser.isSet(QStringLiteral("preset")) && !window.applyPreset(parser.value(QStringLiteral("preset")), &error)) {
    std::fprintf(stderr, "quantscope: --preset: %s\n", qPrintable(error));
    return 2;
  }
  // Files named on the command line (or by the desktop's %F, which may pass file:// URLs).
  QStringList files;
  for (const QString& arg : parser.positionalArguments()) {
    const QUrl url(arg);
    files << (url.isLocalFile() ? url.toLocalFile() : arg);
  }
  if (!files.isEmpty()) {
    if (parser.isSet(QStringLiteral("settings")) || parser.isSet(QStringLiteral("preset"))) {
      // The view comes from the settings or the preset: the files are opened beside it, nothing replaced.
      for (const QString& f : files) window.openFile(QFileInfo(f).absoluteFilePath());
    } else {
      window.openFiles(files);
      window.tabs()->setCurrentWidget(window.errorPanel());
    }
  }
  if (parser.isSet(QStringLiteral("tab"))) {
    const QString tab = parser.value(QStringLiteral("tab"));
    int index = -1;
    for (int i = 0; i < window.tabs()->count(); ++i)
      if (window.tabs()->tabText(i).compare(tab, Qt::CaseInsensitive) == 0) index = i;
    if (index < 0) {
      std::fprintf(stderr, "quantscope: --tab: no tab named '%s'\n", qPrintable(tab));
      return 2;
    }
    window.tabs()->setCurrentIndex(index);
  }

  if (report) {
    const QString dir = parser.value(QStringLiteral("report"));
    window.resize(1400, 860);
    if (!window.waitForIdle(300000)) {
      std::fprintf(stderr, "quantscope: --report: the views did not finish computing\n");
      return 1;
    }
    if (!window.lastError().isEmpty()) {
      std::fprintf(stderr, "quantscope: --report: %s\n", qPrintable(window.lastError()));
      return 1;
    }
    if (!window.exportReport(dir, &error)) {
      std::fprintf(stderr, "quantscope: --report: %s\n", qPrintable(error));
      return 1;
    }
    std::printf("report written to %s\n", qPrintable(dir));
    return 0;
  }

  window.show();
  if (parser.isSet(QStringLiteral("bench-startup"))) {
    QTimer::singleShot(0, &window, [&sinceStart] {
      const double ms = double(sinceStart.nsecsElapsed()) / 1e6;
      std::printf("startup_ms,budget_ms,ratio\n%.1f,1500,%.3f\n", ms, ms / 1500.0);
      QCoreApplication::exit(0);
    });
  }

  if (parser.isSet(QStringLiteral("screenshot"))) {
    const QString path = parser.value(QStringLiteral("screenshot"));
    // Let the data load and the views compute, then let the layout settle and queued replots run.
    QTimer::singleShot(50, &window, [&window, path] {
      window.waitForIdle(60000);
      QTimer::singleShot(400, &window, [&window, path] {
        QString why;
        if (!saveScreenshot(window, path, &why)) {
          std::fprintf(stderr, "quantscope: --screenshot: cannot write %s: %s\n", qPrintable(path), qPrintable(why));
          QCoreApplication::exit(1);
          return;
        }
        QCoreApplication::exit(0);
      });
    });
  }
  return app.exec();
}
