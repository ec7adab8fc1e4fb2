// JobRunner: the QFutureWatcher, the coalescing timer and the teardown shared by every panel's job.
#include "jobrunner.h"

namespace {
struct JobPool : QThreadPool {
  JobPool() {
    setMaxThreadCount(64);  // jobs mostly wait or run the engine's threads: one thread each
    setObjectName(QStringLiteral("QuantScope jobs"));
  }
};
Q_GLOBAL_STATIC(JobPool, g_jobPool)
}  // namespace

QThreadPool* JobRunnerBase::threadPool() { return g_jobPool(); }

JobRunnerBase::JobRunnerBase(QObject* parent) : QObject(parent) {
  m_coalesce.setSingleShot(true);
  m_coalesce.setInterval(kCoalesceMs);
  connect(&m_coalesce, &QTimer::timeout, this, &JobRunnerBase::rowsReady);
  // A superseded job's progress is not the request's any more: the bar waits for its successor's. (Qt
  // already drops the values a cancelled future reported, but not its range.)
  connect(&m_watcher, &QFutureWatcher<void>::progressRangeChanged, this, [this](int minimum, int maximum) {
    if (!m_superseded) emit progressRangeChanged(minimum, maximum);
  });
  connect(&m_watcher, &QFutureWatcher<void>::progressValueChanged, this, &JobRunnerBase::progressValueChanged);
  connect(&m_watcher, &QFutureWatcher<void>::finished, this, &JobRunnerBase::onWatcherFinished);
}

JobRunnerBase::~JobRunnerBase() { cancelAndWait(); }

void JobRunnerBase::launch(std::shared_ptr<StateBase> state, QFuture<void> future) {
  m_state = std::move(state);
  m_cancelled = false;
  m_superseded = false;
  m_running = true;
  m_watcher.setFuture(std::move(future));
  if (!m_relaunching) emit runningChanged(true);  // a superseded job's successor: it never stopped running
}

void JobRunnerBase::supersede(std::function<void()> next) {
  m_next = std::move(next);
  if (m_superseded) return;  // already stopping: the newer request simply waits instead
  m_superseded = true;
  m_coalesce.stop();
  if (m_state) {
    QMutexLocker lock(&m_state->mutex);
    m_state->dropped = true;
    m_state->cancel = true;
  }
  m_watcher.cancel();  // also wakes a paused worker
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
  m_next = nullptr;  // a request waiting behind a superseded job never starts
  m_superseded = false;  // the job in flight ends this request: its finished() is delivered
  if (m_state) m_state->cancel = true;  // ends an engine loop between two of its steps
  m_watcher.cancel();                   // also wakes a paused worker
}

void JobRunnerBase::cancelAndWait() {
  m_coalesce.stop();
  m_next = nullptr;
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
  m_watcher.setSuspended(false);
  if (m_superseded && m_next) {  // restart(): the superseded job has returned; its successor runs now
    std::function<void()> next = std::move(m_next);
    m_next = nullptr;
    m_running = false;  // start() needs an idle runner
    m_superseded = false;
    m_relaunching = true;
    next();
    m_relaunching = false;
    if (!m_running) {  // cannot happen (start() on an idle runner succeeds), but never leave it hanging
      emit runningChanged(false);
      emit finished();
    }
    return;
  }
  emit rowsReady();
  m_running = false;
  m_superseded = false;
  emit runningChanged(false);
  emit finished();
}
