// JobControls: the progress bar and Cancel button of a tab's JobRunner, made and wired once so that Cancel
// looks and behaves the same in every tab: enabled exactly while a request is in flight, disabled the
// moment it is pressed (the job stops at its next check), the bar fed by the runner's progress. The tab
// places the two widgets in its own layout (or row() side by side) and names them for its tests.
// Exercise: tests/tst_jobrunner.cpp (jobControls), and every tab's suite through its Cancel.
//
//   m_controls = new JobControls(&m_job, this, JobControls::HideBarWhenIdle);
//   bar->addWidget(m_controls->row());
//   connect(m_controls, &JobControls::cancelled, this, [this] { setStatus("Cancelling…"); });
#pragma once

#include <QObject>

class JobRunnerBase;
class QProgressBar;
class QPushButton;
class QWidget;

class JobControls : public QObject {
  Q_OBJECT

public:
  enum BarMode { KeepBar, HideBarWhenIdle };
  // The widgets are parented to `owner` once a layout takes them. By default they follow the runner
  // (active while it runs); setFollowsJob(false) leaves setActive to the tab.
  JobControls(JobRunnerBase* job, QWidget* owner, BarMode mode = KeepBar);

  QPushButton* cancelButton() const { return m_cancel; }
  QProgressBar* progressBar() const { return m_bar; }
  // The bar and the button side by side in one widget (no margins), for a tab's tool row.
  QWidget* row();

  bool isActive() const { return m_active; }
  // A request is in flight: Cancel enabled and, with HideBarWhenIdle, the bar shown.
  void setActive(bool active);
  void setFollowsJob(bool follow) { m_follow = follow; }

public slots:
  // What the button does: the runner's cancel(), the button disabled until the next request; cancelled()
  // follows. Does nothing while idle or already cancelling.
  void cancel();

signals:
  void cancelled();  // for the tab's status line ("Cancelling after …")

private:
  JobRunnerBase* m_job;
  QWidget* m_owner;
  QProgressBar* m_bar;
  QPushButton* m_cancel;
  BarMode m_mode;
  bool m_active = false;
  bool m_follow = true;
};
