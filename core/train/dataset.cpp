// Fashion-MNIST loading (IDX, gzipped or plain) with shape checks, and the seeded synthetic fallback.
#include "train/dataset.h"
#include "util/mix64.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io/dtype.h"
#include "train/idx.h"

namespace qs {

namespace {

namespace fs = std::filesystem;

const char* const kFiles[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                               "t10k-labels-idx1-ubyte"};

// The existing spelling of `base` in dir (".gz" first), or empty.
std::string find_file(const std::string& dir, const std::string& base) {
  for (const char* ext : {".gz", ""}) {
    const fs::path p = fs::path(dir) / (base + ext);
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

std::shared_ptr<Dataset> load_pair(const std::string& images_path, const std::string& labels_path,
                                   const std::string& name) {
  const IdxArray im = read_idx(images_path);
  const IdxArray lb = read_idx(labels_path);
  if (im.type != IdxType::U8 || im.dims.size() != 3)
    throw IoError(images_path + ": expected images n x rows x cols of ubyte, found rank " +
                  std::to_string(im.dims.size()) + " " + to_string(im.type));
  if (lb.type != IdxType::U8 || lb.dims.size() != 1)
    throw IoError(labels_path + ": expected labels n of ubyte, found rank " + std::to_string(lb.dims.size()) + " " +
                  to_string(lb.type));
  if (im.dims[0] != lb.dims[0])
    throw IoError(labels_path + ": " + std::to_string(lb.dims[0]) + " labels for " + std::to_string(im.dims[0]) +
                  " images in " + images_path);
  if (im.dims[1] != 28 || im.dims[2] != 28)
    throw IoError(images_path + ": images are " + std::to_string(im.dims[1]) + "x" + std::to_string(im.dims[2]) +
                  ", Fashion-MNIST has 28x28");
  auto d = std::make_shared<Dataset>();
  d->name = name;
  d->rows = 28;
  d->cols = 28;
  d->classes = 10;
  for (std::size_t i = 0; i < lb.data.size(); ++i)
    if (lb.data[i] >= 10)
      throw IoError(labels_path + ": label " + std::to_string(lb.data[i]) + " at index " + std::to_string(i) +
                    " is not a class 0..9");
  d->pixels = im.data;
  d->labels = lb.data;
  return d;
}

// SplitMix64: a small seeded stream for the synthetic set (the same numbers on every platform).
struct Mix {
  uint64_t s;
  uint64_t next() {
    return mix64(s += 0x9e3779b97f4a7c15ULL);
  }
  double unit() { return double(next() >> 11) * 0x1p-53; }
  double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
  double normal() {
    const double u1 = (double(next() >> 11) + 0.5) * 0x1p-53, u2 = unit();
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

using Image = std::vector<float>;  // 28 x 28 in [0, 1]

// Three soft strokes (segments with a Gaussian profile) per class.
Image make_template(Mix& rng) {
  Image t(28 * 28, 0.0f);
  for (int s = 0; s < 3; ++s) {
    const double x0 = rng.between(5, 22), y0 = rng.between(5, 22), x1 = rng.between(5, 22), y1 = rng.between(5, 22);
    const double width = rng.between(1.0, 2.2);
    const double dx = x1 - x0, dy = y1 - y0, len2 = std::max(dx * dx + dy * dy, 1e-9);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const double u = std::clamp(((c - x0) * dx + (r - y0) * dy) / len2, 0.0, 1.0);
        const double ex = c - (x0 + u * dx), ey = r - (y0 + u * dy);
        const double v = std::exp(-(ex * ex + ey * ey) / (2 * width * width));
        t[std::size_t(r * 28 + c)] = std::max(t[std::size_t(r * 28 + c)], float(v));
      }
  }
  return t;
}

float shifted(const Image& t, int r, int c, int dy, int dx) {
  r -= dy;
  c -= dx;
  return (r < 0 || r >= 28 || c < 0 || c >= 28) ? 0.0f : t[std::size_t(r * 28 + c)];
}

std::shared_ptr<Dataset> synth(const std::vector<Image>& templates, std::size_t n, Mix& rng, const std::string& name) {
  auto d = std::make_shared<Dataset>();
  d->name = name;
  d->pixels.resize(n * 784);
  d->labels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(rng.next() % 10);
    int other = int(rng.next() % 9);
    if (other >= label) ++other;
    const int dy = int(rng.next() % 7) - 3, dx = int(rng.next() % 7) - 3;
    const double bright = rng.between(0.5, 1.0), mix = rng.between(0.2, 0.45);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const double v = bright * ((1 - mix) * shifted(templates[std::size_t(label)], r, c, dy, dx) +
                                   mix * shifted(templates[std::size_t(other)], r, c, dy, dx)) +
                         0.2 * rng.normal();
        d->pixels[i * 784 + std::size_t(r * 28 + c)] = uint8_t(std::lround(std::clamp(v, 0.0, 1.0) * 255));
      }
    d->labels[i] = uint8_t(label);
  }
  return d;
}

}  // namespace

void Dataset::gather(const uint32_t* idx, std::size_t n, float* x, int* y) const {
  const std::size_t f = std::size_t(features());
  constexpr float k = 1.0f / 255.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const uint8_t* src = pixels.data() + std::size_t(idx[i]) * f;
    float* dst = x + i * f;
    for (std::size_t j = 0; j < f; ++j) dst[j] = float(src[j]) * k;
    if (y) y[i] = labels[idx[i]];
  }
}

void Dataset::gather_range(std::size_t first, std::size_t n, float* x, int* y) const {
  std::vector<uint32_t> idx(n);
  for (std::size_t i = 0; i < n; ++i) idx[i] = uint32_t(first + i);
  gather(idx.data(), n, x, y);
}

const char* default_fashion_mnist_dir() { return "/usr/share/datasets/fashion-mnist"; }

const char* fashion_mnist_install_hint() {
  return "install it with `sudo apt-get install dataset-fashion-mnist` (files in /usr/share/datasets/fashion-mnist), "
         "point --data-dir at a folder with the four IDX files, or use `--dataset synthetic`";
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

bool fashion_mnist_present(const std::string& dir, std::string* missing) {
  for (const char* f : kFiles)
    if (find_file(dir, f).empty()) {
      if (missing) *missing = (fs::path(dir) / (std::string(f) + ".gz")).string();
      return false;
    }
  return true;
}

DataSplit load_fashion_mnist(const std::string& dir) {
  std::string missing;
  if (!fashion_mnist_present(dir, &missing))
    throw IoError("Fashion-MNIST not found (" + missing + " is missing): " + fashion_mnist_install_hint());
  DataSplit s;
  s.train = load_pair(find_file(dir, kFiles[0]), find_file(dir, kFiles[1]), "fashion-mnist/train");
  s.test = load_pair(find_file(dir, kFiles[2]), find_file(dir, kFiles[3]), "fashion-mnist/test");
  s.source = dir;
  return s;
}

DataSplit make_synthetic_dataset(std::size_t train, std::size_t test, uint64_t seed) {
  if (train == 0 || test == 0) throw std::invalid_argument("synthetic data set: train and test sizes must be >= 1");
  Mix rng{seed * 0x2545f4914f6cdd1dULL + 0x1234567};
  std::vector<Image> templates;
  for (int c = 0; c < 10; ++c) templates.push_back(make_template(rng));
  DataSplit s;
  s.train = synth(templates, train, rng, "synthetic/train");
  s.test = synth(templates, test, rng, "synthetic/test");
  s.source = "synthetic";
  s.synthetic = true;
  return s;
}

}  // namespace qs
