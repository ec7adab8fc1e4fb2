// JobRunner: the background job of a panel, written once. The job runs on a QtConcurrent worker with a
// QPromise, in a thread pool of its own (threadPool(): never Qt's global pool, which Qt's painting needs);
// what it produces (rows) is posted from the worker, kept under a mutex and handed to the UI thread
// coalesced: one rowsReady() per ~40 ms however fast rows arrive, and a last one just before finished().
// Progress (QPromise's range and value) is forwarded as signals for a QProgressBar, Cancel
// reaches the worker through the QPromise and through an atomic flag the engine's loops check, Pause
// suspends the promise, and an exception that ends the job becomes error(). The UI thread never waits
// for the job, except in cancelAndWait() when the owner is destroyed.
// Live views (a tab that recomputes while the user edits: the Error tab, the data loader) use restart():
// the latest request wins. The running job is cancelled as superseded (its later rows, progress and its
// finished() are dropped; isCancelled() stays false) and the new job starts the moment the old one has
// returned; requests made meanwhile replace one another, so only the newest runs. This is STYLE.md's
// restartable worker (item 9) on the same runner: one background-job mechanism for every tab.
// Used by the Latency tab (GEMM rows), the Model tab (heatmap cells), the Training tab (steps), the Error
// tab (one ErrorView per scheme, restart()), and with one Result and no rows by the Block scales
// (progress, Cancel), Conventions and Observers (a batch) tabs, Help -> Conformance (progress, Cancel)
// and the shell's DataLoader (restart() for tensors). JobControls (jobcontrols.h) is its progress bar and
// Cancel button.
// Exercise: tests/tst_jobrunner.cpp; tst_latencypanel, tst_sqnrheatmap, tst_trainingpanel, tst_errorpanel.
//
//   JobRunner<Row> m_job;                          // a member of the panel
//   connect(&m_job, &JobRunnerBase::rowsReady, this, [this] { for (Row& r : m_job.takeRows()) ...; });
//   connect(&m_job, &JobRunnerBase::finished, this, &Panel::onFinished);
//   m_job.start([cfg](JobRunner<Row>::Sink& sink) { work(cfg, [&](Row r) { sink.post(std::move(r)); },
//                                                          [&](done, total) { sink.setProgress...; return !sink.isCanceled(); }); });
#pragma once

#include <QFutureWatcher>
#include <QMutex>
#include <QMutexLocker>
#include <QObject>
#include <QPromise>
#include <QString>
#include <QThreadPool>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

class JobRunnerBase : public QObject {
  Q_OBJECT

public:
  static constexpr int kCoalesceMs = 40;  // rows arriving closer than this become one update

  // The pool every job runs in (and any other long work of the widgets). Not QThreadPool::globalInstance():
  // Qt 6.4's raster engine and image conversion split large operations over that pool and wait for the
  // pieces on the UI thread, so jobs filling it (one on a one-core machine, two on two cores) froze every
  // repaint until one ended. One thread per job, up to 64 at once; the engine's own threads do the compute.
  static QThreadPool* threadPool();

  explicit JobRunnerBase(QObject* parent = nullptr);
  ~JobRunnerBase() override;

  // A job runs, or a superseded one is still returning with its successor waiting (restart()).
  bool isRunning() const { return m_running; }
  // cancel() was called for the job in progress (or the last one); cleared by the next start.
  bool isCancelled() const { return m_cancelled; }
  bool isPaused() const { return m_running && (m_watcher.isSuspending() || m_watcher.isSuspended()); }
  // Pause: the job stops at its next suspendIfRequested(); a cancel also wakes it.
  void setPaused(bool paused);
  // Asks the job to stop at its next check; rowsReady() and finished() follow as usual. A job waiting
  // behind a superseded one (restart()) is dropped and never starts.
  void cancel();
  // For destructors: drops the signals, cancels and blocks until the worker has returned.
  void cancelAndWait();
  // What ended the last job: an exception's message, empty when it returned normally or was cancelled.
  QString error() const;

signals:
  void progressRangeChanged(int minimum, int maximum);
  void progressValueChanged(int value);
  void rowsReady();  // coalesced; the derived class's takeRows() has them
  void finished();   // the job has returned; isRunning() is already false, the last rows were delivered
  // isRunning() changed: true when a job starts, false just before finished(). A restart() that replaces
  // a running job does not toggle it.
  void runningChanged(bool running);

protected:
  struct StateBase {
    QMutex mutex;
    QString error;
    std::atomic<bool> notified{false};  // a rowsReady is on its way: later rows need no new wake-up
    std::atomic<bool> cancel{false};    // for engine loops that take a cancel flag (Trainer::run)
    bool dropped = false;               // superseded by restart(): rows are discarded (under mutex)
  };
  void launch(std::shared_ptr<StateBase> state, QFuture<void> future);
  void wake(StateBase& state);  // worker thread: a row was posted
  // restart() of a running job: stop it as superseded; `next` starts its successor once it has returned.
  void supersede(std::function<void()> next);

  std::shared_ptr<StateBase> m_state;

private:
  void onWatcherFinished();

  QFutureWatcher<void> m_watcher;
  QTimer m_coalesce;
  std::function<void()> m_next;  // restart(): the newest request, waiting for the superseded job to return
  bool m_running = false;
  bool m_cancelled = false;
  bool m_superseded = false;  // the job in flight was replaced: its progress and finished() are dropped
  bool m_relaunching = false;  // starting a superseded job's successor: runningChanged stays quiet
};

// Row: what the worker streams to the UI; Result: what it hands back once at the end (setResult).
template <class Row, class Result = std::monostate>
class JobRunner : public JobRunnerBase {
  struct State : StateBase {
    std::vector<Row> pending;
    std::optional<Result> result;
  };

public:
  // The worker's side of the job. Lives for the job's call only.
  class Sink {
  public:
    void post(Row row) {
      {
        QMutexLocker lock(&m_state->mutex);
        if (m_state->dropped) return;  // superseded: nobody reads it
        m_state->pending.push_back(std::move(row));
      }
      m_runner->wake(*m_state);
    }
    void setResult(Result r) {
      QMutexLocker lock(&m_state->mutex);
      m_state->result = std::move(r);
    }
    void setProgressRange(int minimum, int maximum) { m_promise.setProgressRange(minimum, maximum); }
    void setProgressValue(int value) { m_promise.setProgressValue(value); }
    bool isCanceled() const { return m_promise.isCanceled(); }
    void suspendIfRequested() { m_promise.suspendIfRequested(); }  // Pause
    const std::atomic<bool>* cancelFlag() const { return &m_state->cancel; }

  private:
    friend class JobRunner;
    Sink(JobRunner* runner, State* state, QPromise<void>& promise) : m_runner(runner), m_state(state), m_promise(promise) {}
    JobRunner* m_runner;
    State* m_state;
    QPromise<void>& m_promise;
  };
  using Job = std::function<void(Sink&)>;

  explicit JobRunner(QObject* parent = nullptr) : JobRunnerBase(parent) {}
  ~JobRunner() override { cancelAndWait(); }

  // Runs `job` on a worker. false, doing nothing, while a job runs.
  bool start(Job job) {
    if (isRunning()) return false;
    auto state = std::make_shared<State>();
    QFuture<void> future = QtConcurrent::run(threadPool(), [this, state, job = std::move(job)](QPromise<void>& promise) {
      Sink sink(this, state.get(), promise);
      try {
        job(sink);
      } catch (const std::exception& e) {
        QMutexLocker lock(&state->mutex);
        state->error = QString::fromUtf8(e.what());
      }
    });
    launch(state, std::move(future));
    return true;
  }

  // Latest wins (live views): runs `job` now when idle; otherwise the running job is cancelled as
  // superseded and `job` runs as soon as it has returned, unless a newer restart() replaces it first.
  void restart(Job job) {
    if (!isRunning()) {
      start(std::move(job));
      return;
    }
    supersede([this, job = std::move(job)]() mutable { start(std::move(job)); });
  }

  // The rows posted since the last call, in order (UI thread).
  std::vector<Row> takeRows() {
    std::vector<Row> rows;
    if (State* s = state()) {
      QMutexLocker lock(&s->mutex);
      if (!s->dropped) rows.swap(s->pending);
      s->notified.store(false);
    }
    return rows;
  }
  // What the last job handed to setResult; empty when it threw, was cancelled before it started, or
  // never set one.
  std::optional<Result> result() const {
    if (State* s = state()) {
      QMutexLocker lock(&s->mutex);
      return s->result;
    }
    return std::nullopt;
  }

  // The same, moved out (a large result is not copied); result() is empty afterwards.
  std::optional<Result> takeResult() {
    std::optional<Result> out;
    if (State* s = state()) {
      QMutexLocker lock(&s->mutex);
      out.swap(s->result);
    }
    return out;
  }

private:
  State* state() const { return static_cast<State*>(m_state.get()); }
};
