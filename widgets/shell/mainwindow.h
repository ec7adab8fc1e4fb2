// MainWindow: the QuantScope window. It assembles the panels — setup dock (data + schemes), tabs
// (Formats, Error, Model, Training, Latency), log dock, demo explanation bar, status bar with the CPU
// features and the GPU — and wires them; every panel lives in its own file.
// Exercise: `quantscope`, `quantscope --preset outliers-int8`, tests/tst_mainwindow.cpp.
#pragma once

#include <functional>

#include <QMainWindow>
#include <QStringList>

#include "shared/reportsection.h"
#include "shared/tensordata.h"
#include "viewsettings.h"

class QLabel;
class ElidedLabel;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTabWidget;
class DataLoader;
class ErrorPanel;
class FormatGridPlot;
class FormatsPanel;
class LatencyPanel;
class ObserversPanel;
class BlockScalesPanel;
class ConventionsPanel;
class SetupDock;
class SqnrHeatmap;
class TrainingPanel;

class MainWindow : public QMainWindow, public ReportSection {
  Q_OBJECT

public:
  // persistent: restore and save QSettings (recent files, schemes, layout). Scripts, tests and the
  // headless report run without, so they start from the defaults and leave nothing behind.
  explicit MainWindow(QWidget* parent = nullptr, bool persistent = false);
  ~MainWindow() override;

  // Shows `spec` in the Formats tab (a table name or a custom spec). false + the parser's reason.
  bool selectFormat(const QString& spec, QString* error = nullptr);

  // The whole view as a value, and back (presets, settings.json, QSettings). applySettings checks
  // everything first and changes nothing when it returns false.
  ViewSettings currentSettings() const;
  bool applySettings(const ViewSettings& settings, QString* error = nullptr);
  bool applyPreset(const QString& name, QString* error = nullptr);

  // Lists the file's tensors in the setup dock (asynchronously; a load error shows a message box
  // naming the file, or only the log when `quiet`).
  void openFile(const QString& path);
  // The files of the command line (`quantscope a.npz b.onnx`, the desktop entry's %F): each is opened as
  // with File → Open, and the first float tensor of the first one is shown in the Error tab.
  void openFiles(const QStringList& paths);
  // Writes the report folder (see reportwriter.h). Waits for running work first.
  // With `interactive`, a progress dialog names the stage and offers Cancel.
  bool exportReport(const QString& dir, QString* error = nullptr, bool interactive = false);
  // What the report writes, in order: each tab's section (Formats, Error, Model, Block scales, Observers,
  // Training, Latency), then this window's, settings.json (the view, reloadable with --settings).
  QList<ReportSection*> reportSections();
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;
  // Spins the event loop until data loading and the Error tab are idle; false on timeout.
  bool waitForIdle(int ms);
  // Messages go to the log dock with a time stamp (and to stderr in headless runs).
  void log(const QString& message);

  FormatGridPlot* formatPlot() const;
  FormatsPanel* formatsPanel() const { return m_formats; }
  ErrorPanel* errorPanel() const { return m_error; }
  SqnrHeatmap* heatmap() const { return m_heatmap; }
  LatencyPanel* latencyPanel() const { return m_latency; }
  TrainingPanel* trainingPanel() const { return m_training; }
  ObserversPanel* observersPanel() const { return m_observers; }
  BlockScalesPanel* blockScalesPanel() const { return m_blockScales; }
  ConventionsPanel* conventionsPanel() const { return m_conventions; }
  SetupDock* setupDock() const { return m_setup; }
  QTabWidget* tabs() const { return m_tabs; }
  const TensorData& currentTensor() const { return m_tensor; }
  QStringList recentFiles() const { return m_recent; }
  // Message boxes for errors (off in tests and headless runs: errors then go to the log only).
  void setInteractive(bool on) { m_interactive = on; }
  QString lastError() const { return m_lastError; }
  // What would be lost by quitting now ("a training run and a model analysis"; empty when nothing runs),
  // and whether the window may close: asks the user (Yes/No, No by default) while something runs.
  // Tests replace the question with a function of their own.
  QString workInProgress() const;
  static QString guideHtml();  // the guide's text (resources/guide.html)
  bool mayClose();
  void setCloseConfirmation(std::function<bool(const QString& question)> ask) { m_confirmClose = std::move(ask); }

public slots:
  void setLogScale(bool on);
  void exportPlot();  // the current tab's main plot, by file dialog
  void exportReportInteractive();
  void openFileDialog();
  void showGuide();  // Help -> Guide (F1): what each tab answers, the glossary, the keys
  void showConformance();  // Help -> Conformance: runs the conformance suite in a dialog
  // The Model tab: every tensor of `path` under the Setup dock's schemes (false, with the reason shown,
  // when a scheme row is invalid).
  bool analyseFile(const QString& path);

signals:
  void tensorLoaded(const TensorData& data);

protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

private:
  void buildMenus();
  void buildStatusBar();
  QWidget* buildDemoBar();
  void showDemo(const ViewSettings& s);
  void reloadData();
  void applySchemes();
  void onTensorLoaded(const TensorData& d);
  void showError(const QString& title, const QString& message);
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void setBusy(bool busy);
  void restorePersistent();
  void savePersistent();

  bool m_persistent = false;
  bool m_interactive = true;
  QTabWidget* m_tabs = nullptr;
  FormatsPanel* m_formats = nullptr;
  ErrorPanel* m_error = nullptr;
  SqnrHeatmap* m_heatmap = nullptr;
  TrainingPanel* m_training = nullptr;
  LatencyPanel* m_latency = nullptr;
  ObserversPanel* m_observers = nullptr;
  BlockScalesPanel* m_blockScales = nullptr;
  ConventionsPanel* m_conventions = nullptr;
  SetupDock* m_setup = nullptr;
  QPlainTextEdit* m_log = nullptr;
  QWidget* m_demoBar = nullptr;
  ElidedLabel* m_demoTitle = nullptr;  // both from presets or any settings.json: elided, never widen the window
  ElidedLabel* m_demoText = nullptr;
  QProgressBar* m_progress = nullptr;
  QPushButton* m_cancel = nullptr;
  QMenu* m_recentMenu = nullptr;
  DataLoader* m_loader = nullptr;
  TensorData m_tensor;
  QString m_pendingFile, m_pendingTensor;  // applySettings with a file source waits for its listing
  QList<SchemeSetting> m_heatmapSchemes;   // the scheme rows the Model tab's map was computed with
  QStringList m_recent;
  QString m_lastError;
  QString m_demoPreset;
  std::function<bool(const QString&)> m_confirmClose;
};
