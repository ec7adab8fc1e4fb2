// Tests of JobRunner (widgets/shared/jobrunner.h), the background job every tab uses: rows arrive in order
// and coalesced, progress is forwarded, Cancel reaches both the QPromise and the cancel flag, Pause stops the
// worker at its next suspendIfRequested, an exception becomes error(), the destructor cancels and joins a
// running job, restart() lets the latest request win (live views), and JobControls (the shared Cancel
// button and progress bar) follows the job, and jobs leave Qt's global thread pool to Qt's own painting.
// Run: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_jobrunner` (ctest sets the platform itself).
#include <QElapsedTimer>
#include <QImage>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QThread>
#include <QThreadPool>
#include <QtTest>

#include <atomic>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "jobcontrols.h"
#include "jobrunner.h"

namespace {

// Spins the event loop until `done` or `ms` passed; returns done().
template <class F>
bool waitUntil(F done, int ms = 10000) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
  return done();
}

}  // namespace

class TestJobRunner : public QObject {
  Q_OBJECT

private slots:
  void rowsArriveInOrderCoalesced();
  void progressIsForwarded();
  void cancelReachesPromiseAndFlag();
  void pauseStopsTheWorker();
  void exceptionBecomesError();
  void startWhileRunningIsRefused();
  void destructorCancelsAndJoins();
  void restartSupersedesTheRunningJob();
  void restartWhenIdleStartsAtOnce();
  void cancelDropsTheWaitingRestart();
  void jobControlsFollowTheJob();
  void jobsLeaveQtsPoolToPainting();
};

// 20,000 rows in four bursts 150 ms apart: all of them, in order, and far fewer rowsReady than rows
// (each burst is posted in well under the 40 ms window), but more than one (rows stream while it runs).
void TestJobRunner::rowsArriveInOrderCoalesced() {
  JobRunner<int> job;
  std::vector<int> got;
  int updates = 0, updatesWhileRunning = 0;
  connect(&job, &JobRunnerBase::rowsReady, this, [&] {
    const std::vector<int> rows = job.takeRows();
    if (rows.empty()) return;
    ++updates;
    if (job.isRunning()) ++updatesWhileRunning;
    got.insert(got.end(), rows.begin(), rows.end());
  });
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  QVERIFY(job.start([](JobRunner<int>::Sink& sink) {
    int next = 0;
    for (int burst = 0; burst < 4; ++burst) {
      for (int i = 0; i < 5000; ++i) sink.post(next++);
      QThread::msleep(150);
    }
  }));
  QVERIFY(job.isRunning());
  QVERIFY(finished.wait(20000));
  QVERIFY(!job.isRunning());
  std::vector<int> want(20000);
  std::iota(want.begin(), want.end(), 0);
  QCOMPARE(got.size(), want.size());
  QVERIFY(got == want);
  QVERIFY2(updates < 200, qPrintable(QString::number(updates)));  // coalesced: not one update per row
  QVERIFY2(updatesWhileRunning >= 2, qPrintable(QString::number(updatesWhileRunning)));  // streamed
  QVERIFY(job.error().isEmpty());
  QVERIFY(!job.isCancelled());
}

void TestJobRunner::progressIsForwarded() {
  JobRunner<int> job;
  QSignalSpy range(&job, &JobRunnerBase::progressRangeChanged);
  QSignalSpy value(&job, &JobRunnerBase::progressValueChanged);
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  job.start([](JobRunner<int>::Sink& sink) {
    sink.setProgressRange(0, 7);
    for (int i = 1; i <= 7; ++i) sink.setProgressValue(i);
  });
  QVERIFY(finished.wait(10000));
  QVERIFY(!range.isEmpty());
  QCOMPARE(range.last().at(0).toInt(), 0);
  QCOMPARE(range.last().at(1).toInt(), 7);
  QVERIFY(!value.isEmpty());
  QCOMPARE(value.last().at(0).toInt(), 7);  // the final value always arrives (Qt throttles only the ones between)
}

// The job waits until it sees the cancel, through the promise and through the flag engine loops take;
// it hands back which it saw. A job that never saw it times out after 10 s and reports false.
void TestJobRunner::cancelReachesPromiseAndFlag() {
  JobRunner<int, bool> job;
  std::atomic<bool> started{false};
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  job.start([&started](JobRunner<int, bool>::Sink& sink) {
    started = true;
    QElapsedTimer t;
    t.start();
    while (!(sink.isCanceled() && sink.cancelFlag()->load()) && t.elapsed() < 10000) QThread::msleep(1);
    sink.setResult(sink.isCanceled() && sink.cancelFlag()->load());
  });
  QVERIFY(waitUntil([&] { return started.load(); }));
  job.cancel();
  QVERIFY(job.isCancelled());
  QVERIFY(finished.wait(20000));
  QVERIFY(job.result().has_value());
  QVERIFY(*job.result());
  QVERIFY(job.isCancelled());  // still true after finished, for the status line; cleared by the next start
  job.start([](JobRunner<int, bool>::Sink& sink) { sink.setResult(sink.isCanceled()); });
  QVERIFY(!job.isCancelled());
  QVERIFY(finished.wait(10000));
  QVERIFY(job.result() == std::optional<bool>(false));
}

// While paused, the worker posts nothing; after resuming it posts again; a cancel ends a paused job too.
void TestJobRunner::pauseStopsTheWorker() {
  JobRunner<int> job;
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  std::atomic<int> posted{0};
  job.start([&posted](JobRunner<int>::Sink& sink) {
    while (!sink.isCanceled()) {
      sink.post(posted++);
      QThread::msleep(2);
      sink.suspendIfRequested();
    }
  });
  QVERIFY(waitUntil([&] { return posted.load() > 5; }));
  job.setPaused(true);
  QVERIFY(job.isPaused());
  QThread::msleep(200);  // reaches its suspension point (one step: 2 ms)
  const int atPause = posted.load();
  QThread::msleep(300);
  QCOMPARE(posted.load(), atPause);
  job.setPaused(false);
  QVERIFY(waitUntil([&] { return posted.load() > atPause + 5; }));
  job.setPaused(true);
  QThread::msleep(100);
  job.cancel();  // wakes the suspended worker
  QVERIFY(finished.wait(10000));
  QVERIFY(!job.isPaused());
}

void TestJobRunner::exceptionBecomesError() {
  JobRunner<int, int> job;
  std::vector<int> got;
  connect(&job, &JobRunnerBase::rowsReady, this, [&] {
    for (int r : job.takeRows()) got.push_back(r);
  });
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  job.start([](JobRunner<int, int>::Sink& sink) {
    sink.post(1);
    sink.post(2);
    throw std::runtime_error("cannot read x.npy: truncated");
  });
  QVERIFY(finished.wait(10000));
  QCOMPARE(job.error(), QStringLiteral("cannot read x.npy: truncated"));
  QVERIFY(!job.result().has_value());
  QVERIFY(got == (std::vector<int>{1, 2}));  // rows posted before the exception are still delivered
}

void TestJobRunner::startWhileRunningIsRefused() {
  JobRunner<int> job;
  std::atomic<bool> release{false};
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  QVERIFY(job.start([&release](JobRunner<int>::Sink&) {
    while (!release) QThread::msleep(1);
  }));
  bool secondRan = false;
  QVERIFY(!job.start([&secondRan](JobRunner<int>::Sink&) { secondRan = true; }));
  release = true;
  QVERIFY(finished.wait(10000));
  QCOMPARE(finished.count(), 1);
  QVERIFY(!secondRan);
}

// Destroying the runner (its panel closing) while the job runs: the job sees the cancel flag and the
// destructor returns only after the worker has left the job.
void TestJobRunner::destructorCancelsAndJoins() {
  auto job = std::make_unique<JobRunner<int>>();
  auto left = std::make_shared<std::atomic<bool>>(false);
  auto sawCancel = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> started{false};
  job->start([left, sawCancel, &started](JobRunner<int>::Sink& sink) {
    started = true;
    QElapsedTimer t;
    t.start();
    while (!sink.cancelFlag()->load() && t.elapsed() < 10000) {
      sink.post(0);
      QThread::msleep(1);
    }
    *sawCancel = sink.cancelFlag()->load();
    QThread::msleep(50);  // the destructor must still be waiting
    *left = true;
  });
  QVERIFY(waitUntil([&] { return started.load(); }));
  job.reset();
  QVERIFY(left->load());
  QVERIFY(sawCancel->load());
  QCoreApplication::processEvents();  // queued wake-ups of the dead runner are dropped, not delivered
}

// restart() while a job runs (a slider dragged): the running job sees the cancel; what it posted and
// reported before the restart but the UI had not taken yet (a row -1, the range 0..1000 and the value 999:
// the UI thread does not turn its event loop in between) never reaches the UI; of two requests made while it stops only the newer
// runs; one finished() for the whole sequence, not counted as a user's cancel; running stays true
// throughout (runningChanged once each way).
void TestJobRunner::restartSupersedesTheRunningJob() {
  JobRunner<int> job;
  std::vector<int> got;
  connect(&job, &JobRunnerBase::rowsReady, this, [&] {
    for (int r : job.takeRows()) got.push_back(r);
  });
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  QSignalSpy running(&job, &JobRunnerBase::runningChanged);
  QSignalSpy value(&job, &JobRunnerBase::progressValueChanged);
  QSignalSpy range(&job, &JobRunnerBase::progressRangeChanged);
  std::atomic<bool> reported{false}, firstSawCancel{false}, secondRan{false}, thirdRan{false};
  job.restart([&](JobRunner<int>::Sink& sink) {
    sink.setProgressRange(0, 1000);
    QThread::msleep(60);  // past Qt's progress throttle (25 a second), so the 999 is really sent
    sink.setProgressValue(999);
    sink.post(-1);
    reported = true;
    QElapsedTimer t;
    t.start();
    while (!sink.isCanceled() && t.elapsed() < 10000) QThread::msleep(1);
    firstSawCancel = sink.isCanceled() && sink.cancelFlag()->load();
    QThread::msleep(100);  // still stopping: the later requests wait
  });
  QCOMPARE(running.count(), 1);
  QElapsedTimer t;
  t.start();
  while (!reported && t.elapsed() < 10000) QThread::msleep(1);  // no event loop: the row and progress stay queued
  QVERIFY(reported.load());
  job.restart([&](JobRunner<int>::Sink&) { secondRan = true; });
  job.restart([&](JobRunner<int>::Sink& sink) {
    thirdRan = true;
    sink.setProgressRange(0, 3);
    for (int i = 1; i <= 3; ++i) {
      sink.post(i);
      sink.setProgressValue(i);
    }
  });
  QVERIFY(job.isRunning());
  QVERIFY(finished.wait(10000));
  QVERIFY(!finished.wait(200));  // and no second one
  QCOMPARE(finished.count(), 1);
  QVERIFY(firstSawCancel.load());
  QVERIFY(thirdRan.load());
  QVERIFY(!secondRan.load());
  QVERIFY(got == (std::vector<int>{1, 2, 3}));
  for (const QList<QVariant>& v : value) QVERIFY2(v.at(0).toInt() != 999, "a superseded job's progress arrived");
  // The watcher reports each future's state when it starts watching it: (0, 0) when the successor has set no
  // range yet, which a bar shows as busy. The superseded job's (0, 1000) must never arrive.
  QVERIFY(!range.isEmpty());
  for (const QList<QVariant>& r : range)
    QVERIFY2(r.at(1).toInt() == 3 || (r.at(0).toInt() == 0 && r.at(1).toInt() == 0),
             qPrintable(QStringLiteral("a superseded job's progress range arrived: %1..%2").arg(r.at(0).toInt()).arg(r.at(1).toInt())));
  QCOMPARE(range.last().at(1).toInt(), 3);
  QVERIFY(!value.isEmpty());
  QCOMPARE(value.last().at(0).toInt(), 3);
  QVERIFY(!job.isCancelled());
  QVERIFY(!job.isRunning());
  QCOMPARE(running.count(), 2);
  QCOMPARE(running.at(0).at(0).toBool(), true);
  QCOMPARE(running.at(1).at(0).toBool(), false);
}

void TestJobRunner::restartWhenIdleStartsAtOnce() {
  JobRunner<int, int> job;
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  job.restart([](JobRunner<int, int>::Sink& sink) { sink.setResult(7); });
  QVERIFY(job.isRunning());
  QVERIFY(finished.wait(10000));
  QVERIFY(job.result() == std::optional<int>(7));
}

// Cancel while a superseded job is still stopping: the request waiting behind it never starts, and the
// one finished() says cancelled.
void TestJobRunner::cancelDropsTheWaitingRestart() {
  JobRunner<int> job;
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  std::atomic<bool> started{false}, release{false}, secondRan{false};
  job.start([&](JobRunner<int>::Sink&) {
    started = true;
    QElapsedTimer t;
    t.start();
    while (!release && t.elapsed() < 10000) QThread::msleep(1);
  });
  QVERIFY(waitUntil([&] { return started.load(); }));
  job.restart([&](JobRunner<int>::Sink&) { secondRan = true; });
  job.cancel();
  QVERIFY(job.isCancelled());
  release = true;
  QVERIFY(finished.wait(10000));
  QVERIFY(!finished.wait(200));
  QCOMPARE(finished.count(), 1);
  QVERIFY(!secondRan.load());
  QVERIFY(job.isCancelled());
  QVERIFY(!job.isRunning());
}

// The shared Cancel button and bar: Cancel is enabled only while a job runs; pressing it disables it at
// once, cancels the job (the job sees it) and says so (cancelled()); the bar follows the job's progress and,
// with HideBarWhenIdle, shows only while the job runs. Pressing it again, or while idle, does nothing.
void TestJobRunner::jobControlsFollowTheJob() {
  QWidget owner;
  JobRunner<int, bool> job;
  auto* controls = new JobControls(&job, &owner, JobControls::HideBarWhenIdle);
  QWidget* row = controls->row();
  QVERIFY(row->isAncestorOf(controls->cancelButton()) && row->isAncestorOf(controls->progressBar()));
  owner.show();
  QPushButton* cancel = controls->cancelButton();
  QProgressBar* bar = controls->progressBar();
  QVERIFY(!cancel->isEnabled());
  QVERIFY(!bar->isVisible());
  QSignalSpy cancelled(controls, &JobControls::cancelled);
  QSignalSpy finished(&job, &JobRunnerBase::finished);
  std::atomic<bool> reported{false};
  job.start([&reported](JobRunner<int, bool>::Sink& sink) {
    sink.setProgressRange(0, 10);
    sink.setProgressValue(4);
    reported = true;
    QElapsedTimer t;
    t.start();
    while (!sink.isCanceled() && t.elapsed() < 10000) QThread::msleep(1);
    sink.setResult(sink.isCanceled());
  });
  QVERIFY(cancel->isEnabled());
  QVERIFY(bar->isVisible());
  QVERIFY(waitUntil([&] { return reported.load() && bar->value() == 4; }));
  QCOMPARE(bar->maximum(), 10);
  cancel->click();
  QVERIFY(!cancel->isEnabled());
  QVERIFY(job.isCancelled());
  QCOMPARE(cancelled.count(), 1);
  controls->cancel();  // already cancelling: nothing more
  QCOMPARE(cancelled.count(), 1);
  QVERIFY(finished.wait(10000));
  QVERIFY(job.result() == std::optional<bool>(true));
  QVERIFY(!cancel->isEnabled());
  QVERIFY(!bar->isVisible());
  controls->cancel();  // idle: nothing
  QCOMPARE(cancelled.count(), 1);
}

// Qt 6.4's raster engine and image conversion split large operations over QThreadPool::globalInstance() and
// wait for the pieces on the UI thread. Jobs on that pool, as many as it has threads (one long job on a
// one-core machine; a training run and a latency sweep on two cores), froze every repaint until one of them
// ended: the Latency tab's Cancel never reached the sweep on one core. The runner's jobs have a pool of their
// own: more jobs than the global pool has threads all run at once, none on it, and meanwhile the UI thread
// converts a large image without waiting for them.
void TestJobRunner::jobsLeaveQtsPoolToPainting() {
  const int n = QThreadPool::globalInstance()->maxThreadCount() + 1;
  std::atomic<bool> release{false};
  std::atomic<int> started{0}, onGlobal{0};
  std::vector<std::unique_ptr<JobRunner<int>>> jobs;
  for (int i = 0; i < n; ++i) {
    jobs.push_back(std::make_unique<JobRunner<int>>());
    QVERIFY(jobs.back()->start([&](JobRunner<int>::Sink& sink) {
      onGlobal += QThreadPool::globalInstance()->contains(QThread::currentThread()) ? 1 : 0;
      ++started;
      while (!release && !sink.cancelFlag()->load()) QThread::msleep(1);
    }));
  }
  QVERIFY2(waitUntil([&] { return started.load() == n; }), qPrintable(QString::number(started.load())));
  QCOMPARE(onGlobal.load(), 0);
  std::thread releaser([&] {  // the jobs end in 3 s; the conversion must not wait for that
    QThread::msleep(3000);
    release = true;
  });
  QImage image(2048, 2048, QImage::Format_ARGB32);
  image.fill(Qt::darkCyan);
  QElapsedTimer t;
  t.start();
  const QImage converted = image.convertToFormat(QImage::Format_RGB888);
  const qint64 ms = t.elapsed();
  releaser.join();
  QCOMPARE(converted.pixelColor(7, 7), QColor(Qt::darkCyan));
  QVERIFY2(ms < 2000, qPrintable(QStringLiteral("the conversion waited %1 ms for the jobs").arg(ms)));
  for (auto& j : jobs) QVERIFY(waitUntil([&] { return !j->isRunning(); }));
}

QTEST_MAIN(TestJobRunner)
#include "tst_jobrunner.moc"
