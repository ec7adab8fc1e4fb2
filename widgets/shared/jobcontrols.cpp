// JobControls: one Cancel button and progress bar, bound to a JobRunner (shared/jobrunner.h).
#include "jobcontrols.h"

#include <QHBoxLayout>
#include <QProgressBar>
#include <QPushButton>
#include <QWidget>

#include "jobrunner.h"

JobControls::JobControls(JobRunnerBase* job, QWidget* owner, BarMode mode)
    : QObject(owner), m_job(job), m_owner(owner), m_mode(mode) {
  m_bar = new QProgressBar(owner);
  m_bar->setRange(0, 1);
  m_bar->setValue(0);
  m_cancel = new QPushButton(QStringLiteral("Cancel"), owner);
  m_cancel->setToolTip(QStringLiteral("Stop after the step in progress; what is done so far stays shown"));
  connect(m_cancel, &QPushButton::clicked, this, &JobControls::cancel);
  connect(job, &JobRunnerBase::progressRangeChanged, m_bar, &QProgressBar::setRange);
  connect(job, &JobRunnerBase::progressValueChanged, m_bar, &QProgressBar::setValue);
  connect(job, &JobRunnerBase::runningChanged, this, [this](bool running) {
    if (m_follow) setActive(running);
  });
  setActive(false);
}

QWidget* JobControls::row() {
  auto* w = new QWidget(m_owner);
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(m_bar);
  l->addWidget(m_cancel);
  return w;
}

void JobControls::setActive(bool active) {
  m_active = active;
  m_cancel->setEnabled(active);
  if (m_mode == HideBarWhenIdle) m_bar->setVisible(active);
}

void JobControls::cancel() {
  if (!m_active || !m_cancel->isEnabled()) return;
  m_cancel->setEnabled(false);
  m_job->cancel();
  emit cancelled();
}
