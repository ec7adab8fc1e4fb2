// ErrorWorker: Qt's Mandelbrot-example worker pattern around qs::compute_error_view.
// Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel`.
#include "errorworker.h"

#include <QElapsedTimer>

#include <algorithm>
#include <exception>

ErrorWorker::ErrorWorker(QObject* parent) : QThread(parent) { qRegisterMetaType<qs::ErrorView>(); }

ErrorWorker::~ErrorWorker() {
  {
    QMutexLocker lock(&m_mutex);
    m_abort = true;
    m_wake.wakeOne();
  }
  wait();
}

int ErrorWorker::request(const TensorData& tensor, const std::vector<qs::Scheme>& schemes,
                         const qs::ErrorViewOptions& options) {
  QMutexLocker lock(&m_mutex);
  m_tensor = tensor;
  m_schemes = schemes;
  m_options = options;
  m_cancel = false;
  const int generation = ++m_generation;
  if (!isRunning()) {
    start(QThread::LowPriority);
  } else {
    m_restart = true;
    m_wake.wakeOne();
  }
  return generation;
}

void ErrorWorker::cancel() {
  QMutexLocker lock(&m_mutex);
  m_cancel = true;
}

void ErrorWorker::run() {
  std::vector<float> scratch;  // the quantized tensor, reused between requests
  for (;;) {
    TensorData tensor;
    std::vector<qs::Scheme> schemes;
    qs::ErrorViewOptions options;
    int generation;
    {
      QMutexLocker lock(&m_mutex);
      tensor = m_tensor;
      schemes = m_schemes;
      options = m_options;
      generation = m_generation;
      m_restart = false;
    }
    emit started(generation, int(schemes.size()));

    // Between chunks: stop for a newer request, an abort, or Cancel.
    bool stopped = false, userCancel = false;
    QElapsedTimer sinceEmit;
    sinceEmit.start();
    int lastPermille = -1;
    const double perScheme = schemes.empty() ? 0.0 : 1000.0 / double(schemes.size());
    for (std::size_t i = 0; i < schemes.size() && !stopped; ++i) {
      auto progress = [&](std::size_t done, std::size_t total) {
        {
          QMutexLocker lock(&m_mutex);
          if (m_abort || m_restart || m_cancel) {
            userCancel = m_cancel && !m_abort && !m_restart;
            return false;
          }
        }
        const int permille = int(perScheme * (double(i) + (total ? double(done) / double(total) : 1.0)));
        if (permille != lastPermille && sinceEmit.elapsed() >= 50) {
          lastPermille = permille;
          sinceEmit.restart();
          emit progressed(generation, permille);
        }
        return true;
      };
      try {
        const std::vector<float>* values = tensor.values.get();
        static const float none = 0.0f;
        std::vector<int64_t> shape = tensor.shape;
        std::size_t numel = 1;
        for (int64_t d : shape) numel *= std::size_t(std::max<int64_t>(d, 0));
        if (!values || values->empty()) shape = {0};
        else if (shape.empty() || numel != values->size()) shape = {int64_t(values->size())};  // flat: never read past the end
        qs::ErrorView view = qs::compute_error_view(schemes[i], values && !values->empty() ? values->data() : &none,
                                                    shape, options, progress, &scratch);
        if (view.cancelled) {
          stopped = true;
          break;
        }
        emit viewReady(generation, int(i), view);
      } catch (const std::exception& e) {
        emit failed(generation, int(i), QString::fromUtf8(e.what()));
      }
    }
    if (stopped) {
      if (userCancel) emit cancelled(generation);
    } else {
      emit progressed(generation, 1000);
      emit finished(generation);
    }

    QMutexLocker lock(&m_mutex);
    if (m_abort) return;
    if (userCancel) m_cancel = false;
    while (!m_restart && !m_abort) m_wake.wait(&m_mutex);  // spurious wake-ups change nothing
    if (m_abort) return;
  }
}
