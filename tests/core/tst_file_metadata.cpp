// TensorFile::metadata(): what `quantscope-cli info` shows besides the tensors — a safetensors header's
// __metadata__ string map (values that are not strings as their JSON text), in header order.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "io/tensor_file.h"
#include "test_files.h"

TEST(FileMetadata, SafetensorsMetadataMap) {
  const std::string header = R"({"__metadata__":{"format":"pt","note":"a\tb"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string bytes(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(bytes.data(), &len, 8);
  bytes += header;
  const float w[2] = {1.5f, -2.0f};
  bytes.append(reinterpret_cast<const char*>(w), 8);
  qs_test::TempDir dir;
  qs_test::write_file(dir.file("m.safetensors"), bytes);
  const auto f = qs::open_tensor_file(dir.file("m.safetensors"));
  ASSERT_EQ(f->tensors().size(), 1u);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "format");
  EXPECT_EQ(f->metadata()[0].second, "pt");
  EXPECT_EQ(f->metadata()[1].first, "note");
  EXPECT_EQ(f->metadata()[1].second.find('\t'), std::string::npos);  // made printable: one line, no raw tab
}
