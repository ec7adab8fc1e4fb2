// ErrorWorker: the Error tab's restartable worker thread. request() copies the tensor (a shared pointer,
// no float copy), the schemes and the options under a mutex and sets `restart`; the thread computes one
// qs::ErrorView per scheme, checks restart/abort between chunks through the engine's progress hook, and
// emits each result by value. Changing schemes rapidly only ever restarts it; the UI never waits.
// Exercise: ErrorPanel, tests/tst_errorpanel.cpp.
#pragma once

#include <QMetaType>
#include <QMutex>
#include <QThread>
#include <QWaitCondition>

#include <vector>

#include "quant/error_view.h"
#include "shared/tensordata.h"

Q_DECLARE_METATYPE(qs::ErrorView)

class ErrorWorker : public QThread {
  Q_OBJECT

public:
  explicit ErrorWorker(QObject* parent = nullptr);
  ~ErrorWorker() override;  // aborts the computation and joins the thread

  // Starts (or restarts) a computation; returns its generation, which every signal carries so that the
  // receiver can drop results of superseded requests.
  int request(const TensorData& tensor, const std::vector<qs::Scheme>& schemes, const qs::ErrorViewOptions& options);
  // Stops the current computation after the chunk in progress; `cancelled` follows.
  void cancel();

signals:
  void started(int generation, int schemes);
  void progressed(int generation, int permille);  // of the whole request, throttled to ~50 ms
  void viewReady(int generation, int index, const qs::ErrorView& view);
  void failed(int generation, int index, const QString& message);  // e.g. a channel axis out of range
  void finished(int generation);
  void cancelled(int generation);

protected:
  void run() override;

private:
  QMutex m_mutex;
  QWaitCondition m_wake;
  TensorData m_tensor;
  std::vector<qs::Scheme> m_schemes;
  qs::ErrorViewOptions m_options;
  int m_generation = 0;
  bool m_restart = false;
  bool m_abort = false;
  bool m_cancel = false;
};
