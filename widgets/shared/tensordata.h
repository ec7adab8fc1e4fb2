// TensorData: the tensor the explorer is looking at (synthetic or read from a file), shared by value
// between the setup dock, the Error tab and its workers without copying the floats.
#pragma once

#include <QMetaType>
#include <QString>
#include <QVector>

#include <cstdint>
#include <memory>
#include <vector>

struct TensorData {
  QString source;  // file path, or "synthetic"
  QString name;    // tensor name in the file, or the synthetic description
  std::shared_ptr<const std::vector<float>> values;  // float32, C order
  std::vector<int64_t> shape;
  // A weight of a pre-quantized checkpoint (io/prequant.h): the stored scheme in QuantScope's spelling
  // ("e4m3fn/block:128x128"; empty otherwise or when QuantScope has no matching scheme) and the line that
  // says whether re-quantizing it gives the stored codes and scales back.
  QString storedScheme, storedSummary;
  // Its stored codes: each code's value before scaling (the element grid) and how many elements use it.
  QVector<double> storedCodeValues, storedCodeCounts;

  bool isEmpty() const { return !values || values->empty(); }
  std::size_t size() const { return values ? values->size() : 0; }
};
Q_DECLARE_METATYPE(TensorData)
