// DataLoader: synthetic generation and tensor reading on a latest-wins JobRunner, file listings on a
// second one; results cross to the UI thread through the runners.
#include "dataloader.h"

#include "io/prequant.h"
#include "quant/requant_check.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFileInfo>
#include <QThread>

#include <stdexcept>

DataLoader::DataLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<TensorData>();
  qRegisterMetaType<std::vector<qs::TensorInfo>>();
  connect(&m_load, &JobRunnerBase::finished, this, [this] {
    // A superseded request never gets here (JobRunner drops it); a cancelled one delivers nothing.
    if (const QString e = m_load.error(); !e.isEmpty()) emit failed(e);
    else if (!m_load.isCancelled())
      if (std::optional<TensorData> d = m_load.takeResult()) emit loaded(*d);
    updateBusy();
  });
  connect(&m_list, &JobRunnerBase::rowsReady, this, [this] {
    for (Listing& l : m_list.takeRows()) {
      if (l.error.isEmpty()) emit fileListed(l.path, l.kind, l.tensors);
      else emit failed(l.error);
    }
  });
  connect(&m_list, &JobRunnerBase::finished, this, [this] {
    if (const QString e = m_list.error(); !e.isEmpty()) emit failed(e);
    if (!m_listQueue.isEmpty()) startListing();
    updateBusy();
  });
}

DataLoader::~DataLoader() {
  m_load.cancelAndWait();
  m_list.cancelAndWait();
}

bool DataLoader::waitForIdle(int ms) {
  QDeadlineTimer deadline(ms);
  while (m_busy && !deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  QCoreApplication::processEvents();
  return !m_busy;
}

void DataLoader::cancel() {
  m_listQueue.clear();
  m_load.cancel();
  m_list.cancel();
}

void DataLoader::updateBusy() {
  const bool busy = m_load.isRunning() || m_list.isRunning() || !m_listQueue.isEmpty();
  if (busy == m_busy) return;
  m_busy = busy;
  emit busyChanged(busy);
}

void DataLoader::loadSynthetic(const qs::SyntheticSpec& spec) {
  m_load.restart([spec](JobRunner<std::monostate, TensorData>::Sink& sink) {
    sink.setProgressRange(0, 1000);
    auto values = std::make_shared<std::vector<float>>(qs::make_synthetic(spec, 2, [&sink](std::size_t done, std::size_t total) {
      if (total) sink.setProgressValue(int(1000.0 * double(done) / double(total)));
      return !sink.isCanceled();
    }));
    if (sink.isCanceled()) return;  // superseded or cancelled: the vector is empty
    TensorData d;
    d.source = QStringLiteral("synthetic");
    d.name = QString::fromStdString(qs::describe(spec));
    d.shape = {int64_t(spec.n / spec.cols), int64_t(spec.cols)};
    d.values = std::move(values);
    sink.setResult(std::move(d));
  });
  updateBusy();
}

void DataLoader::loadTensor(const QString& path, const QString& tensor) {
  m_load.restart([path, tensor](JobRunner<std::monostate, TensorData>::Sink& sink) {
    sink.setProgressRange(0, 0);  // one read: busy, no steps
    const std::unique_ptr<qs::TensorFile> file = qs::open_tensor_file(path.toStdString());
    const auto& list = file->tensors();
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (QString::fromStdString(list[i].name) != tensor) continue;
      const qs::TensorInfo& info = list[i];
      if (!qs::dtype_is_float(info.dtype))
        throw qs::IoError(path.toStdString() + ": " + info.name + ": not a floating-point tensor (" +
                          qs::to_string(info.dtype) + ")");
      if (info.numel() > kMaxElements)
        throw qs::IoError(path.toStdString() + ": " + info.name + ": " + std::to_string(info.numel()) +
                          " elements, more than the explorer's limit of 2^28; use `quantscope-cli analyze`");
      auto values = std::make_shared<std::vector<float>>(info.numel());
      file->read_f32(i, values->data());  // straight into the floats: no second copy of the tensor
      TensorData d;
      d.source = path;
      d.name = tensor;
      d.shape = info.shape.empty() ? std::vector<int64_t>{1} : info.shape;
      d.values = std::move(values);
      // A pre-quantized weight: its stored scheme (the Error tab adds it as a row) and the re-quantization
      // check, as `analyze` prints it.
      if (const auto* pq = dynamic_cast<const qs::PrequantizedFile*>(file.get()))
        if (const qs::PrequantInfo* p = pq->prequant(i)) {
          d.storedScheme = QString::fromStdString(p->scheme);
          d.storedSummary = QString::fromStdString(qs::requant_summary(info.name, *p, qs::requantize_check(*pq, i)));
          // The codes' usage: how many elements hold each code (the code-usage plot of the Error tab).
          if (!p->code_values.empty()) {
            const std::vector<uint32_t> codes = pq->codes(i);
            QVector<double> counts(qsizetype(p->code_values.size()), 0.0);
            for (uint32_t c : codes)
              if (c < uint32_t(counts.size())) counts[qsizetype(c)] += 1;
            d.storedCodeValues = QVector<double>(p->code_values.begin(), p->code_values.end());
            d.storedCodeCounts = counts;
          }
        }
      sink.setResult(std::move(d));
      return;
    }
    throw qs::IoError(path.toStdString() + ": no tensor named '" + tensor.toStdString() + "'");
  });
  updateBusy();
}

void DataLoader::listFile(const QString& path) {
  m_listQueue << path;
  if (!m_list.isRunning()) startListing();
  updateBusy();
}

// Lists the queued files one after another, each delivered as it is done; a file that cannot be listed
// is a row with its one-line reason.
void DataLoader::startListing() {
  const QStringList paths = m_listQueue;
  m_listQueue.clear();
  m_list.start([paths](JobRunner<Listing>::Sink& sink) {
    sink.setProgressRange(0, int(paths.size()));
    int done = 0;
    for (const QString& path : paths) {
      if (sink.isCanceled()) return;
      Listing l;
      l.path = path;
      try {
        if (!QFileInfo(path).isFile())
          throw qs::IoError(path.toStdString() + (QFileInfo::exists(path) ? ": is not a regular file (a folder, device, FIFO or socket)"
                                                                          : ": no such file"));
        const std::unique_ptr<qs::TensorFile> file = qs::open_tensor_file(path.toStdString());
        l.kind = QString::fromStdString(file->kind());
        l.tensors = file->tensors();
      } catch (const std::exception& e) {
        l.error = QString::fromUtf8(e.what());
      } catch (...) {
        l.error = QStringLiteral("unexpected error while loading");
      }
      sink.post(std::move(l));
      sink.setProgressValue(++done);
    }
  });
}
