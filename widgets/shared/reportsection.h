// ReportSection: what one part of the window contributes to File → Export report and
// `quantscope --report DIR`. Each tab implements it for its own files; the shell's ReportWriter walks
// the sections it is given (MainWindow::reportSections(): the tabs in report order, then settings.json)
// and knows no panel. A section writes into a staging folder; the writer moves the whole report into
// place only when every section succeeded.
// Exercise: tests/tst_mainwindow.cpp (report*), `QT_QPA_PLATFORM=offscreen quantscope --report /tmp/r`.
#pragma once

#include <QSize>
#include <QString>

#include <functional>

class ReportSection {
public:
  struct Context {
    QString dir;                                  // the staging folder: write this section's files here
    QSize size;                                   // the report's figure size in points
    std::function<void(const QString&)> message;  // one line for the log ("report: format-grid written")
  };

  virtual ~ReportSection() = default;

  // The progress stage this section opens ("format grid"), or empty when the section belongs to the
  // stage opened before it (the Model and Block scales tabs write under "error histograms").
  virtual QString reportStage() const = 0;
  // Writes the section's files into ctx.dir (a section with nothing to show writes nothing and returns
  // true). false with *error naming the file and the reason; the report is then not written.
  virtual bool writeReportSection(const Context& ctx, QString* error) = 0;
};
