// Image classification data for the training lab: Fashion-MNIST from IDX files (Debian's
// dataset-fashion-mnist package or any folder holding the four files) and a small seeded synthetic set
// of the same shape, so demos and tests run without the download. Exercise: tests/tst_idx.cpp,
// `quantscope-cli train --dataset synthetic --epochs 1`.
//
//   qs::DataSplit d = qs::fashion_mnist_present(dir) ? qs::load_fashion_mnist(dir) : qs::make_synthetic_dataset();
//   std::vector<float> x(n * d.train.features()); std::vector<int> y(n);
//   d.train.gather(indices.data(), n, x.data(), y.data());   // pixels / 255 in [0, 1]
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qs {

struct Dataset {
  std::string name;             // e.g. "fashion-mnist/train"
  int rows = 28, cols = 28;     // image size
  int classes = 10;
  std::vector<uint8_t> pixels;  // size() x features(), row-major, 0..255
  std::vector<uint8_t> labels;  // size() values < classes

  std::size_t size() const { return labels.size(); }
  int features() const { return rows * cols; }
  // Images idx[0..n) as float32 pixel / 255 into x (n x features(), row-major) and their labels into y
  // (y may be null). Indices must be < size().
  void gather(const uint32_t* idx, std::size_t n, float* x, int* y) const;
  // Images [first, first + n) (no index list).
  void gather_range(std::size_t first, std::size_t n, float* x, int* y) const;
};

struct DataSplit {
  std::shared_ptr<const Dataset> train, test;
  std::string source;           // folder the files came from, or "synthetic"
  bool synthetic = false;
};

// Debian's dataset-fashion-mnist puts the files here.
const char* default_fashion_mnist_dir();
// One sentence on how to get the files, for messages: names `apt-get install dataset-fashion-mnist`.
const char* fashion_mnist_install_hint();
// The ten class names, index = label.
const std::vector<std::string>& fashion_mnist_class_names();

// Whether `dir` holds train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each plain or with ".gz". *missing gets the first file not found.
bool fashion_mnist_present(const std::string& dir, std::string* missing = nullptr);

// Loads and checks the four files: images n x 28 x 28 ubyte, labels n ubyte < 10, the counts equal.
// Throws IoError naming the file and what is wrong; for missing files the message names
// `apt-get install dataset-fashion-mnist`, --data-dir and `--dataset synthetic`.
DataSplit load_fashion_mnist(const std::string& dir = default_fashion_mnist_dir());

// A seeded 28 x 28, 10-class set: each class is three soft strokes; each image is its class template shifted
// by up to 3 pixels, scaled in brightness, mixed 20-45% with another class's template, with noise added.
// Learnable but not trivial: the default MLP with Adam reaches about 0.87 test accuracy after 5 epochs.
// `train`, `test` >= 1 (std::invalid_argument otherwise).
DataSplit make_synthetic_dataset(std::size_t train = 6000, std::size_t test = 1000, uint64_t seed = 1);

}  // namespace qs
