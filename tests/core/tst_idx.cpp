// IDX reader and the Fashion-MNIST loader (core/train/idx.h, core/train/dataset.h): good files plain and
// gzipped round-trip; corrupt ones (magic, type, rank, zero dimension, truncated, over-long, broken gzip,
// wrong shapes, labels >= 10, missing files) fail with one line naming the problem, and a gzip whose
// header claims 4 GiB costs only what it inflates (finding F6); the synthetic set is seeded.
// Fixtures are written by the test. Run: build/tests/core/tst_idx [--gtest_filter=Idx.Corrupt*]
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/dtype.h"
#include "test_files.h"
#include "test_rng.h"
#include "train/dataset.h"
#include "train/idx.h"

namespace {

using qs_test::contains;

std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b{0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(d >> s));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string error_of(const std::vector<uint8_t>& b) {
  try {
    qs::parse_idx(b.data(), b.size(), "fixture");
  } catch (const qs::IoError& e) {
    return e.what();
  }
  return {};
}

// A small valid Fashion-MNIST-shaped pair: n images of 28 x 28 with pixel (i + j) % 256, labels i % 10.
void write_fmnist(const std::string& dir, const std::string& prefix, uint32_t n, bool gzip, int bad_label_at = -1) {
  std::vector<uint8_t> px(std::size_t(n) * 784), lb(n);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i % 256);
  for (uint32_t i = 0; i < n; ++i) lb[i] = uint8_t(int(i) == bad_label_at ? 10 : i % 10);
  const std::string ext = gzip ? ".gz" : "";
  qs::write_idx(dir + "/" + prefix + "-images-idx3-ubyte" + ext, qs::IdxType::U8, {n, 28, 28}, px, gzip);
  qs::write_idx(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, qs::IdxType::U8, {n}, lb, gzip);
}

struct RoundTripCase {
  std::string name;  // also the seed of the data (Rng::from_tag)
  int type;
  std::vector<uint32_t> dims;
  bool gzip;
};

void checkRoundTrip(const RoundTripCase& c) {
  if (c.gzip && !qs::idx_gzip_available()) GTEST_SKIP() << "this build has no zlib";
  Rng rng = Rng::from_tag(c.name.c_str());
  std::size_t numel = 1;
  for (uint32_t v : c.dims) numel *= v;
  std::vector<uint8_t> data(numel * qs::idx_type_size(qs::IdxType(c.type)));
  for (auto& b : data) b = uint8_t(rng.next());
  qs_test::TempDir dir;
  const std::string path = dir.file("a.idx");
  qs::write_idx(path, qs::IdxType(c.type), c.dims, data, c.gzip);
  const std::string file = qs_test::read_file(path);
  ASSERT_GE(file.size(), 2u);
  EXPECT_EQ(uint8_t(file[0]) == 0x1f && uint8_t(file[1]) == 0x8b, c.gzip);  // really gzipped (or really not)
  const qs::IdxArray a = qs::read_idx(path);
  EXPECT_EQ(int(a.type), c.type);
  EXPECT_EQ(a.dims, c.dims);
  EXPECT_EQ(a.numel(), numel);
  EXPECT_TRUE(a.data == data);
}

}  // namespace

TEST(Idx, RoundTrip) {
  std::vector<RoundTripCase> cases;
  for (bool gz : {false, true}) {
    const std::string z = gz ? "/gz" : "/plain";
    cases.push_back({"ubyte_1d" + z, 0x08, {7}, gz});
    cases.push_back({"ubyte_3d" + z, 0x08, {3, 28, 28}, gz});
    cases.push_back({"float_2d" + z, 0x0D, {5, 3}, gz});
    cases.push_back({"short_4d" + z, 0x0B, {2, 1, 3, 2}, gz});
    cases.push_back({"double_big" + z, 0x0E, {1000, 40}, gz});
  }
  for (const RoundTripCase& c : cases) {
    SCOPED_TRACE(c.name);
    checkRoundTrip(c);
  }
}

TEST(Idx, Corrupt) {
  struct Case {
    const char* name;
    std::vector<uint8_t> bytes;
    const char* needle;
  };
  const std::vector<uint8_t> good = idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto with = [&](std::size_t at, uint8_t v) {
    auto b = good;
    b[at] = v;
    return b;
  };
  const Case cases[] = {
      {"empty", {}, "too short"},
      {"three_bytes", {0, 0, 8}, "too short"},
      {"bad_magic", with(0, 0x12), "not an IDX file"},
      {"bad_magic_second_byte", with(1, 0x01), "not an IDX file"},
      {"unknown_type", with(2, 0x07), "unknown IDX element type 0x07"},
      {"rank_0", with(3, 0), "rank 0"},
      {"rank_9", with(3, 9), "rank 9"},
      {"zero_dimension", idx_bytes(0x08, {2, 0}, {}), "dimension 1 is 0"},
      {"truncated_header", {0, 0, 8, 2, 0, 0, 0, 2, 0, 0}, "truncated IDX header"},
      {"truncated_data", idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5}), "truncated"},
      {"overlong_data", idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5, 6, 7}), "longer than its header says"},
      {"float_truncated", idx_bytes(0x0D, {2}, {0, 0, 0, 0, 0, 0, 0}), "needs 8 data bytes"},
      {"huge_dims", idx_bytes(0x0E, {0xffffffffu, 0xffffffffu}, {}), "more than 4 GiB"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string err = error_of(c.bytes);
    EXPECT_FALSE(err.empty()) << "corrupt IDX was accepted";
    EXPECT_TRUE(contains(err, c.needle)) << err;
    EXPECT_EQ(err.rfind("fixture: ", 0), 0u) << err;  // names the file
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

namespace {

struct GzipCase {
  const char* name;  // also the seed of the data
  const char* kind;
  const char* needle;
};

void checkCorruptGzip(const GzipCase& c) {
  const std::string kind = c.kind;
  std::vector<uint8_t> data(4000);
  Rng rng = Rng::from_tag(c.name);
  for (auto& b : data) b = uint8_t(rng.next() % 7);  // compressible, so the stream is short
  if (kind == "long" || kind == "short" || kind == "garbage") {
    // A valid gzip stream around IDX bytes that do not match their header (or are no IDX at all).
    std::vector<uint8_t> inner = kind == "garbage" ? std::vector<uint8_t>(64, 0x55) : idx_bytes(0x08, {40, 100}, data);
    if (kind == "long") inner.push_back(9);
    if (kind == "short") inner.erase(inner.end() - 10, inner.end());
    const std::vector<uint8_t> gz = qs::gzip_compress(inner.data(), inner.size());
    ASSERT_TRUE(gz.size() > 2 && gz[0] == 0x1f && gz[1] == 0x8b);
    const std::string err = error_of(gz);
    EXPECT_TRUE(contains(err, c.needle)) << err;
    return;
  }
  qs_test::TempDir dir;
  const std::string path = dir.file("a.gz");
  qs::write_idx(path, qs::IdxType::U8, {40, 100}, data, true);
  const std::string file = qs_test::read_file(path);
  std::vector<uint8_t> gz(file.begin(), file.end());
  ASSERT_GT(gz.size(), 30u);
  if (kind == "cut") gz.resize(gz.size() / 2);
  if (kind == "flip") gz[gz.size() / 2] ^= 0xff;
  const std::string err = error_of(gz);
  EXPECT_FALSE(err.empty()) << "corrupt gzip was accepted";
  EXPECT_TRUE(contains(err, c.needle) || (kind == "flip" && contains(err, "truncated"))) << err;
}

}  // namespace

TEST(Idx, CorruptGzip) {
  if (!qs::idx_gzip_available()) GTEST_SKIP() << "this build has no zlib";
  const GzipCase cases[] = {
      {"truncated_stream", "cut", "truncated"},
      {"flipped_payload_byte", "flip", "corrupt gzip data"},
      {"overlong_payload", "long", "longer than its header says"},
      {"short_payload", "short", "truncated"},
      {"gzip_of_garbage", "garbage", "not an IDX file"},
  };
  for (const GzipCase& c : cases) {
    SCOPED_TRACE(c.name);
    checkCorruptGzip(c);
  }
}

// F6: 106 gzipped bytes whose IDX header announces 65536 x 256 x 256 (4 GiB) but whose stream holds
// 64 KiB. The reader used to size its buffer by the claim (4 GiB zero-filled, 11 s) before inflating;
// memory must follow the bytes inflated, and the file is still refused as truncated.
TEST(Idx, GzipHeaderClaimsFourGiB) {
  if (!qs::idx_gzip_available()) GTEST_SKIP() << "this build has no zlib";
  const std::vector<uint8_t> inner = idx_bytes(0x08, {65536, 256, 256}, std::vector<uint8_t>(65536));
  const std::vector<uint8_t> gz = qs::gzip_compress(inner.data(), inner.size());
  EXPECT_LT(gz.size(), 200u);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const std::string err = error_of(gz);
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(err, "fixture: truncated: 65536x256x256 ubyte needs 4294967296 data bytes, the stream has 65536");
  const long grown_mb = (after.ru_maxrss - before.ru_maxrss) / 1024;  // ru_maxrss is in KiB
  EXPECT_LT(grown_mb, 256) << "peak memory grew by " << grown_mb << " MB";
}

TEST(Idx, FashionMnistFolder) {
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzipped" : "plain");
    if (gz && !qs::idx_gzip_available()) continue;
    qs_test::TempDir dir;
    const std::string d = dir.path().string();
    write_fmnist(d, "train", 30, gz);
    write_fmnist(d, "t10k", 12, gz);
    EXPECT_TRUE(qs::fashion_mnist_present(d));
    const qs::DataSplit s = qs::load_fashion_mnist(d);
    ASSERT_EQ(s.train->size(), 30u);
    ASSERT_EQ(s.test->size(), 12u);
    EXPECT_EQ(s.train->features(), 784);
    EXPECT_FALSE(s.synthetic);
    EXPECT_EQ(int(s.test->labels[11]), 1);
    std::vector<float> x(2 * 784);
    std::vector<int> y(2);
    const uint32_t idx[2] = {29, 3};
    s.train->gather(idx, 2, x.data(), y.data());
    EXPECT_EQ(y[0], 9);
    EXPECT_EQ(y[1], 3);
    // Pixels scale to [0, 1]; the loader multiplies by 1/255, which may differ from p / 255 by an ulp.
    EXPECT_FLOAT_EQ(x[5], float((29 * 784 + 5) % 256) / 255.0f);
    EXPECT_FLOAT_EQ(x[784], float((3 * 784) % 256) / 255.0f);
  }
}

TEST(Idx, FashionMnistBad) {
  struct Case {
    const char* name;
    const char* kind;
    const char* needle;
  };
  const Case cases[] = {
      {"count_mismatch", "count", "labels for"},
      {"label_10", "label", "label 10 at index 4"},
      {"images_not_28x28", "shape", "28x28"},
      {"labels_rank_2", "rank", "expected labels n of ubyte"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string kind = c.kind;
    qs_test::TempDir dir;
    const std::string d = dir.path().string();
    write_fmnist(d, "t10k", 12, false);
    if (kind == "count") {
      write_fmnist(d, "train", 30, false);
      qs::write_idx(d + "/train-labels-idx1-ubyte", qs::IdxType::U8, {29}, std::vector<uint8_t>(29, 1), false);
    } else if (kind == "label") {
      write_fmnist(d, "train", 30, false, 4);
    } else if (kind == "shape") {
      write_fmnist(d, "train", 30, false);
      qs::write_idx(d + "/train-images-idx3-ubyte", qs::IdxType::U8, {30, 27, 29},
                    std::vector<uint8_t>(30 * 27 * 29), false);
    } else {
      write_fmnist(d, "train", 30, false);
      qs::write_idx(d + "/train-labels-idx1-ubyte", qs::IdxType::U8, {30, 1}, std::vector<uint8_t>(30), false);
    }
    std::string err;
    try {
      qs::load_fashion_mnist(d);
    } catch (const qs::IoError& e) {
      err = e.what();
    }
    EXPECT_TRUE(contains(err, c.needle)) << err;
    EXPECT_TRUE(contains(err, "train-")) << err;  // names the file
  }
}

TEST(Idx, FashionMnistMissing) {
  qs_test::TempDir dir;
  const std::string d = dir.path().string();
  write_fmnist(d, "train", 3, false);  // the test files are missing
  std::string missing;
  EXPECT_FALSE(qs::fashion_mnist_present(d, &missing));
  EXPECT_TRUE(contains(missing, "t10k-images-idx3-ubyte")) << missing;
  std::string err;
  try {
    qs::load_fashion_mnist(d);
  } catch (const qs::IoError& e) {
    err = e.what();
  }
  EXPECT_TRUE(contains(err, "apt-get install dataset-fashion-mnist")) << err;
  EXPECT_TRUE(contains(err, "--dataset synthetic")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(Idx, InstalledFashionMnist) {
  if (!qs::fashion_mnist_present(qs::default_fashion_mnist_dir()))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const qs::DataSplit s = qs::load_fashion_mnist();
  EXPECT_EQ(s.train->size(), 60000u);
  EXPECT_EQ(s.test->size(), 10000u);
  std::vector<int> per_class(10, 0);
  for (uint8_t l : s.test->labels) {
    ASSERT_LT(l, 10);
    per_class[l]++;
  }
  for (int c : per_class) EXPECT_EQ(c, 1000);  // Fashion-MNIST's test set is balanced
}

TEST(Idx, Synthetic) {
  const qs::DataSplit a = qs::make_synthetic_dataset(200, 50, 7), b = qs::make_synthetic_dataset(200, 50, 7),
                      c = qs::make_synthetic_dataset(200, 50, 8);
  EXPECT_TRUE(a.synthetic);
  EXPECT_EQ(a.train->size(), 200u);
  EXPECT_EQ(a.test->size(), 50u);
  EXPECT_TRUE(a.train->pixels == b.train->pixels && a.test->labels == b.test->labels);
  EXPECT_TRUE(a.train->pixels != c.train->pixels);
  std::vector<int> per_class(10, 0);
  for (uint8_t l : a.train->labels) {
    ASSERT_LT(l, 10);
    per_class[l]++;
  }
  for (int n : per_class) EXPECT_GT(n, 5) << "a class is (almost) missing";
  EXPECT_THROW(qs::make_synthetic_dataset(0, 10, 1), std::invalid_argument);
}
