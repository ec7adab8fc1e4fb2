// DataLoader: makes the tensor the explorer looks at, off the UI thread — a synthetic distribution, or
// one tensor read from a file (converted to float32) — and lists the tensors of a file. The latest
// request wins: results of superseded requests are dropped. Exercise: tests/tst_mainwindow.cpp.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

#include "io/tensor_file.h"
#include "quant/synthetic.h"
#include "shared/tensordata.h"

class DataLoader : public QObject {
  Q_OBJECT

public:
  explicit DataLoader(QObject* parent = nullptr);
  ~DataLoader() override;  // waits for running jobs

  void loadSynthetic(const qs::SyntheticSpec& spec);
  void loadTensor(const QString& path, const QString& tensor);
  // Opens `path` and lists its tensors (fileListed), or says why it cannot (failed).
  void listFile(const QString& path);
  bool isBusy() const { return m_running.load() > 0; }
  // For scripts and tests: spins the event loop until no job runs (false on timeout).
  bool waitForIdle(int ms);

  // Largest tensor the explorer reads from a file (elements): bigger ones are refused with a message.
  static constexpr std::size_t kMaxElements = std::size_t(1) << 28;

signals:
  void loaded(const TensorData& data);
  void fileListed(const QString& path, const QString& kind, const std::vector<qs::TensorInfo>& tensors);
  void failed(const QString& message);  // "PATH: reason" — one line
  void busyChanged(bool busy);

private:
  // Runs job() (returning the UI-thread delivery, or throwing) on a worker thread.
  template <class Job>
  void start(Job job, bool supersede = true);

  std::shared_ptr<std::atomic<int>> m_generation = std::make_shared<std::atomic<int>>(0);
  std::atomic<int> m_running{0};  // requests not yet delivered (UI thread)
  std::shared_ptr<std::atomic<int>> m_jobs = std::make_shared<std::atomic<int>>(0);  // worker functions still running
};
