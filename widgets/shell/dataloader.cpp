// DataLoader: synthetic generation and tensor reading in QtConcurrent jobs; results return by value
// through queued signals, and only the newest request's result is delivered.
#include "dataloader.h"

#include "io/prequant.h"
#include "quant/requant_check.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFileInfo>
#include <QPointer>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>

#include <stdexcept>

DataLoader::DataLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<TensorData>();
  qRegisterMetaType<std::vector<qs::TensorInfo>>();
}

DataLoader::~DataLoader() {
  ++*m_generation;  // nothing more is delivered
  while (m_jobs->load() > 0) QThread::msleep(5);  // the workers touch no member after posting
}

bool DataLoader::waitForIdle(int ms) {
  QDeadlineTimer deadline(ms);
  while (m_running.load() > 0 && !deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  QCoreApplication::processEvents();
  return m_running.load() == 0;
}

template <class Job>
void DataLoader::start(Job job, bool supersede) {
  // A superseding request (a tensor) makes older ones stale; a listing is always delivered.
  const int generation = supersede ? ++*m_generation : -1;
  if (m_running.fetch_add(1) == 0) emit busyChanged(true);
  QPointer<DataLoader> self(this);
  auto gen = m_generation;
  auto jobs = m_jobs;
  ++*jobs;
  (void)QtConcurrent::run([self, gen, jobs, generation, job = std::move(job), this]() mutable {
    // The job returns a function to run on the UI thread (emitting the result), or throws.
    std::function<void()> deliver;
    try {
      deliver = job();
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      deliver = [this, message] { emit failed(message); };
    } catch (...) {
      deliver = [this] { emit failed(QStringLiteral("unexpected error while loading")); };
    }
    QMetaObject::invokeMethod(
        qApp,
        [self, gen, generation, deliver = std::move(deliver)] {
          if (!self) return;
          if (generation < 0 || gen->load() == generation) deliver();
          if (self->m_running.fetch_sub(1) == 1) emit self->busyChanged(false);
        },
        Qt::QueuedConnection);
    --*jobs;
  });
}

void DataLoader::loadSynthetic(const qs::SyntheticSpec& spec) {
  start([this, spec]() -> std::function<void()> {
    auto values = std::make_shared<std::vector<float>>(qs::make_synthetic(spec, 2));
    TensorData d;
    d.source = QStringLiteral("synthetic");
    d.name = QString::fromStdString(qs::describe(spec));
    d.shape = {int64_t(spec.n / spec.cols), int64_t(spec.cols)};
    d.values = std::move(values);
    return [this, d] { emit loaded(d); };
  });
}

void DataLoader::loadTensor(const QString& path, const QString& tensor) {
  start([this, path, tensor]() -> std::function<void()> {
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
      return [this, d] { emit loaded(d); };
    }
    throw qs::IoError(path.toStdString() + ": no tensor named '" + tensor.toStdString() + "'");
  });
}

void DataLoader::listFile(const QString& path) {
  start(
      [this, path]() -> std::function<void()> {
        if (!QFileInfo(path).isFile())
          throw qs::IoError(path.toStdString() + (QFileInfo::exists(path) ? ": is not a regular file (a folder, device, FIFO or socket)"
                                                                          : ": no such file"));
        const std::unique_ptr<qs::TensorFile> file = qs::open_tensor_file(path.toStdString());
        const QString kind = QString::fromStdString(file->kind());
        std::vector<qs::TensorInfo> tensors = file->tensors();
        return [this, path, kind, tensors] { emit fileListed(path, kind, tensors); };
      },
      false);
}
