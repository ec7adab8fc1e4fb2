// TensorData: the tensor the explorer is looking at (synthetic or read from a file), shared by value
// between the setup dock, the Error tab and its workers without copying the floats.
#pragma once

#include <QMetaType>
#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

struct TensorData {
  QString source;  // file path, or "synthetic"
  QString name;    // tensor name in the file, or the synthetic description
  std::shared_ptr<const std::vector<float>> values;  // float32, C order
  std::vector<int64_t> shape;

  bool isEmpty() const { return !values || values->empty(); }
  std::size_t size() const { return values ? values->size() : 0; }
};
Q_DECLARE_METATYPE(TensorData)
