// JobRunner: the QFutureWatcher, the coalescing timer and the teardown shared by every panel's job.
#include "jobrunner.h"

JobRunnerBase::JobRunnerBase(QObject* parent) : QObject(parent) {
  m_coalesce.setSingleShot(true);
  m_coalesce.setInterval(kCoalesceMs);
  connect(&m_coalesce, &QTimer::timeout, this, &JobRunnerBase::rowsReady);
  connect(&m_watcher, &QFutureWatcher<void>::progressRangeChanged, this, &JobRunnerBase::progressRangeChanged);
  connect(&m_watcher, &QFutureWatcher<void>::progressValueChanged, this, &JobRunnerBase::progressValueChanged);
  connect(&m_watcher, &QFutureWatcher<void>::finished, this, &JobRunnerBase::onWatcherFinished);
}

JobRunnerBase::~JobRunnerBase() { cancelAndWait(); }

void JobRunnerBase::launch(std::shared_ptr<StateBase> state, QFuture<void> future) {
  m_state = std::move(state);
  m_cancelled = false;
  m_running = true;
  m_watcher.setFuture(std::move(future));
}

void JobRunnerBase::wake(StateBase& state) {
  // The runner waits for the job before it is destroyed, so it outlives this queued call.
  if (!state.notified.exchange(true))
    QMetaObject::invokeMethod(this, [this] {
      if (!m_coalesce.isActive()) m_coalesce.start();
    }, Qt::QueuedConnection);
}

void JobRunnerBase::setPaused(bool paused) {
  if (m_running) m_watcher.setSuspended(paused);
}

void JobRunnerBase::cancel() {
  if (!m_running) return;
  m_cancelled = true;
  if (m_state) m_state->cancel = true;  // ends an engine loop between two of its steps
  m_watcher.cancel();                   // also wakes a paused worker
}

void JobRunnerBase::cancelAndWait() {
  m_coalesce.stop();
  if (!m_running) return;
  m_watcher.disconnect(this);
  if (m_state) m_state->cancel = true;
  m_watcher.cancel();
  m_watcher.waitForFinished();
  m_running = false;
}

QString JobRunnerBase::error() const {
  if (!m_state) return {};
  QMutexLocker lock(&m_state->mutex);
  return m_state->error;
}

void JobRunnerBase::onWatcherFinished() {
  m_coalesce.stop();
  emit rowsReady();
  m_running = false;
  m_watcher.setSuspended(false);
  emit finished();
}
