// Untrusted JSON (safetensors headers, sharded-model indexes) parsed in linear time with the checks a DOM
// parse does not make: nesting depth, and keys given twice in one object (nlohmann keeps the last of two
// equal keys silently, so a tensor named twice would be resolved without a word). A SAX pass checks first;
// then json::parse builds the DOM without a callback (nlohmann's callback parser rescans the parent object
// after every child: quadratic in the number of tensors). Needs nlohmann-json (QS_HAVE_JSON).
// Exercise: tests/tst_tensorfile.cpp (safetensors and sharded bad-input rows, safetensorsManyTensors).
//   json j = qs::parse_checked_json(text, 32, {.too_deep = [&] { fail("nests too deep"); },
//                                             .duplicate = [&](const std::string& k, std::size_t, const std::string&) {
//                                               fail("key '" + k + "' twice"); }});
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/printable.h"

namespace qs {

struct JsonCheckHooks {
  // Both must throw. too_deep: the nesting passed max_depth. duplicate: `key` appears twice in one object;
  // `depth` counts the open objects (1 = the top-level one), `top_key` is the top-level key being read.
  std::function<void()> too_deep;
  std::function<void(const std::string& key, std::size_t depth, const std::string& top_key)> duplicate;
};

// nlohmann's message without its "[json.exception.parse_error.101] " prefix, on one printable line.
inline std::string json_error_text(const nlohmann::json::exception& e) {
  std::string_view what = e.what();
  if (const std::size_t p = what.find("] "); what.starts_with("[json.exception.") && p != std::string_view::npos)
    what.remove_prefix(p + 2);
  return printable(what, true, 300);
}

namespace detail {
class JsonShapeChecker : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonShapeChecker(int max_depth, const JsonCheckHooks& hooks) : max_depth_(max_depth), hooks_(hooks) {}
  bool start_object(std::size_t) override {
    enter();
    keys_.emplace_back();
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    enter();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (keys_.size() == 1) top_key_ = k;
    if (!keys_.back().insert(k).second) hooks_.duplicate(k, keys_.size(), top_key_);
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  // Rethrown so that syntax errors read as they do from json::parse.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override { throw e; }

 private:
  void enter() {
    if (depth_ >= max_depth_) hooks_.too_deep();
    ++depth_;
  }
  int max_depth_;
  const JsonCheckHooks& hooks_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  // one per open object
  std::string top_key_;
};
}  // namespace detail

// Checks, then parses. Syntax errors throw nlohmann::json::exception (json_error_text makes them readable).
inline nlohmann::json parse_checked_json(const std::string& text, int max_depth, const JsonCheckHooks& hooks) {
  detail::JsonShapeChecker checker(max_depth, hooks);
  nlohmann::json::sax_parse(text.begin(), text.end(), &checker);
  return nlohmann::json::parse(text.begin(), text.end());
}

}  // namespace qs
