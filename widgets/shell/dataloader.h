// DataLoader: makes the tensor the explorer looks at, off the UI thread — a synthetic distribution, or
// one tensor read from a file (converted to float32) — and lists the tensors of a file. Both run on
// JobRunners (shared/jobrunner.h): tensors in its latest-wins mode (a new request supersedes the one in
// flight: a synthetic tensor stops between chunks, a file read is dropped when it returns), listings one
// file after another, each delivered. Exercise: tests/tst_mainwindow.cpp.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <variant>
#include <vector>

#include "io/tensor_file.h"
#include "quant/synthetic.h"
#include "shared/jobrunner.h"
#include "shared/tensordata.h"

class DataLoader : public QObject {
  Q_OBJECT

public:
  explicit DataLoader(QObject* parent = nullptr);
  ~DataLoader() override;  // cancels and waits for running jobs

  void loadSynthetic(const qs::SyntheticSpec& spec);
  void loadTensor(const QString& path, const QString& tensor);
  // Opens `path` and lists its tensors (fileListed), or says why it cannot (failed).
  void listFile(const QString& path);
  bool isBusy() const { return m_busy; }
  // Stops the tensor in flight (nothing is delivered for it) and the listings not yet done.
  void cancel();
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
  struct Listing {
    QString path, kind, error;
    std::vector<qs::TensorInfo> tensors;
  };
  void startListing();
  void updateBusy();

  JobRunner<std::monostate, TensorData> m_load;
  JobRunner<Listing> m_list;
  QStringList m_listQueue;  // files asked for while a listing ran
  bool m_busy = false;
};
