// analyze_file (quant/analyze.h) over an in-memory TensorFile: the rows and the summary are the same for 1, 2
// and 3 threads (with 2 or more the next tensor is read ahead on a thread of its own, or, for a file that
// reads in parts, each tensor's read split between the threads), tensors that are not
// selected are never read, a read error of a tensor read ahead surfaces as it does without read-ahead (after
// the rows of the tensors before it), and a cancel while a read is in flight returns cleanly.
// Run: ninja -C build tst_analyze && build/tests/core/tst_analyze
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "io/tensor_file.h"
#include "quant/analyze.h"
#include "quant/scheme.h"
#include "test_rng.h"

namespace {

// Tensors held in memory; records which were read and can fail one read.
class MemFile : public qs::TensorFile {
 public:
  MemFile() {
    path_ = "mem.safetensors";
    kind_ = "safetensors";
  }
  void add(const std::string& name, qs::DType t, std::vector<int64_t> shape, Rng& rng) {
    qs::TensorInfo info;
    info.name = name;
    info.dtype = t;
    info.shape = std::move(shape);
    std::vector<uint8_t> bytes(info.nbytes());
    if (t == qs::DType::F32) {
      std::vector<float> v(info.numel());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(rng.between(-1, 1) * (i % 97 == 0 ? 30 : 1));
      std::memcpy(bytes.data(), v.data(), bytes.size());
    }
    tensors_.push_back(info);
    data_.push_back(std::move(bytes));
  }
  qs::TensorBytes read(std::size_t index) const override {
    note(index);
    qs::TensorBytes b;
    b.data = data_[index].data();
    b.size = data_[index].size();
    return b;
  }
  void read_f32(std::size_t index, float* out) const override {
    note(index);
    if (tensors_[index].name == fail_) throw qs::IoError(path_ + ": " + fail_ + ": unreadable (test)");
    std::memcpy(out, data_[index].data(), data_[index].size());
  }
  // Reads in parts (as the .safetensors reader does): analyze_file then splits each read between its threads.
  bool reads_f32_in_parts() const override { return parts_; }
  void read_f32_part(std::size_t index, std::size_t begin, std::size_t count, float* out) const override {
    note(index);
    EXPECT_TRUE(parts_) << "read_f32_part on a file that does not read in parts";
    EXPECT_EQ(begin % 8, 0u);
    EXPECT_LE(begin + count, tensors_[index].numel());
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++part_reads_;
    }
    if (tensors_[index].name == fail_ && begin + count == tensors_[index].numel()) throw qs::IoError(path_ + ": " + fail_ + ": unreadable (test)");
    std::memcpy(out, data_[index].data() + begin * 4, count * 4);
  }
  std::string fail_;  // read_f32 fails for this tensor, read_f32_part for its last piece
  bool parts_ = false;
  std::size_t part_reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return part_reads_;
  }
  std::set<std::string> read_names() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }

 private:
  void note(std::size_t index) const {
    std::lock_guard<std::mutex> lock(mu_);
    reads_.insert(tensors_[index].name);
  }
  std::vector<std::vector<uint8_t>> data_;
  mutable std::mutex mu_;
  mutable std::set<std::string> reads_;
  mutable std::size_t part_reads_ = 0;
};

void fill(MemFile& f) {
  Rng rng = Rng::from_tag("analyze-file");
  f.add("a", qs::DType::F32, {64, 100}, rng);
  f.add("ids", qs::DType::I32, {10}, rng);   // skipped: not a float tensor
  f.add("one", qs::DType::F32, {1}, rng);    // skipped: one element
  f.add("b", qs::DType::F32, {37, 129}, rng);
  f.add("c", qs::DType::F32, {256, 256}, rng);
  f.add("d", qs::DType::F32, {3, 5}, rng);
  f.add("e", qs::DType::F32, {3, 300000}, rng);  // several pieces when read in parts
}

std::string row_text(const qs::AnalyzeRow& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s n=%llu e2=%a x2=%a max=%a clipped=%llu ovf=%llu unf=%llu amax=%a",
                r.tensor->name.c_str(), r.scheme->text.c_str(), static_cast<unsigned long long>(r.metrics.count),
                r.metrics.sum_e2, r.metrics.sum_x2, r.metrics.max_abs_e,
                static_cast<unsigned long long>(r.metrics.clipped), static_cast<unsigned long long>(r.out.stats.overflow),
                static_cast<unsigned long long>(r.out.stats.underflow), r.out.amax);
  return buf;
}

// analyze_file reads in parts only where no core is spare for a reader thread; these tests take that branch on
// any machine (QS_ANALYZE_READ=parts), so a file with parts_ = true reads in parts with 2 or 3 threads.
const bool kForceParts = [] {
  setenv("QS_ANALYZE_READ", "parts", 1);
  return true;
}();

const std::vector<qs::Scheme>& schemes() {
  static const std::vector<qs::Scheme> s = {qs::parse_scheme("e4m3fn/tensor"), qs::parse_scheme("int8/channel:0")};
  return s;
}

TEST(AnalyzeFile, SameRowsForAnyThreadCount) {
  std::vector<std::string> want;
  qs::AnalyzeSummary want_sum;
  for (bool parts : {false, true})
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(parts ? "parts, " : "whole, ") + std::to_string(threads));
      MemFile f;
      fill(f);
      f.parts_ = parts;
      std::vector<std::string> rows;
      const qs::AnalyzeSummary s = qs::analyze_file(
          f, schemes(), {}, [&](const qs::AnalyzeRow& r) { rows.push_back(row_text(r)); }, threads);
      EXPECT_EQ(s.analysed, 5u);
      EXPECT_EQ(s.skipped, 2u);
      EXPECT_EQ(rows.size(), 10u);
      // One thread reads every tensor whole (that path is unchanged); more split a file that reads in
      // parts: "e" alone is 4 pieces.
      if (threads == 1 || !parts) EXPECT_EQ(f.part_reads(), 0u);
      else EXPECT_GE(f.part_reads(), 5u + 3u);
      if (!parts && threads == 1) {
        want = rows;
        want_sum = s;
        continue;
      }
      EXPECT_EQ(rows, want);
      EXPECT_EQ(s.bytes, want_sum.bytes);
    }
}

TEST(AnalyzeFile, UnselectedTensorsAreNeverRead) {
  for (bool parts : {false, true})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(parts ? "parts, " : "whole, ") + std::to_string(threads));
      MemFile f;
      fill(f);
      f.parts_ = parts;
      std::vector<std::string> names;
      const qs::AnalyzeSummary s = qs::analyze_file(
          f, schemes(), [](const std::string& n) { return n != "b" && n != "ids"; },
          [&](const qs::AnalyzeRow& r) { names.push_back(r.tensor->name); }, threads);
      EXPECT_EQ(s.analysed, 4u);
      EXPECT_EQ(s.skipped, 1u);  // "one"; "ids" was not selected
      EXPECT_EQ(f.read_names().count("b"), 0u) << "a tensor that is not selected was read (ahead)";
      EXPECT_EQ(names, (std::vector<std::string>{"a", "a", "c", "c", "d", "d", "e", "e"}));
    }
}

// With parts, "e"'s failing piece is its last of 4, read by whichever thread claims it.
TEST(AnalyzeFile, ReadErrorAheadSurfacesInOrder) {
  for (bool parts : {false, true})
    for (const char* bad : {"c", "e"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(parts ? "parts, " : "whole, ") + bad + ", " + std::to_string(threads));
        MemFile f;
        fill(f);
        f.parts_ = parts;
        f.fail_ = bad;
        std::vector<std::string> names;
        try {
          qs::analyze_file(f, schemes(), {}, [&](const qs::AnalyzeRow& r) { names.push_back(r.tensor->name); },
                           threads);
          ADD_FAILURE() << "no error";
        } catch (const qs::IoError& e) {
          EXPECT_EQ(std::string(e.what()), "mem.safetensors: " + std::string(bad) + ": unreadable (test)");
        }
        // Every row before the bad tensor, none after.
        const std::vector<std::string> before_c = {"a", "a", "b", "b"};
        const std::vector<std::string> before_e = {"a", "a", "b", "b", "c", "c", "d", "d"};
        EXPECT_EQ(names, std::string(bad) == "c" ? before_c : before_e);
      }
}

TEST(AnalyzeFile, CancelWithAReadInFlight) {
  for (bool parts : {false, true}) {
    SCOPED_TRACE(parts ? "parts" : "whole");
    MemFile f;
    fill(f);
    f.parts_ = parts;
    int calls = 0;
    const qs::AnalyzeSummary s =
        qs::analyze_file(f, schemes(), {}, {}, 2, [&](std::size_t, std::size_t) { return ++calls < 4; });
    EXPECT_TRUE(s.cancelled);
    EXPECT_EQ(s.analysed, 1u);  // "a" (index 0); cancelled before index 3 ("b"), which was being read ahead
    if (parts) {  // in parts nothing is read ahead
      EXPECT_EQ(f.read_names().count("b"), 0u);
    }
  }
}

}  // namespace
