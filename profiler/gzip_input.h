// Reading a file that may be gzip-compressed, as a stream of bytes: PyTorch's profiler writes its
// traces as .json.gz when asked (tensorboard_trace_handler(use_gzip=True),
// export_chrome_trace("x.json.gz")), and those are what users keep — a 1 GB trace compresses to
// about 60 MB.
//
// Contract: GzipInput opens `path` through zlib's gz interface, which decompresses gzip members
// (several concatenated members too) and passes any other file through unchanged, so one reader
// serves both. begin() / end() are input iterators over the decompressed bytes (what
// nlohmann::json::sax_parse(first, last, ...) reads; an iterator is cheaper per byte than an
// std::istream, whose streambuf calls are out of line); begin() may be called once. A file that
// cannot be opened throws InputError(path, "", "cannot open the file (...)"); a read error or a
// gzip stream that ends early (a truncated download or copy) throws InputError(path, "",
// "gzip: ...") from the read that meets it, so a parser reading the bytes stops there with that
// message. `compressed()` says whether the file was gzip. Not copyable; one reader per file.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

namespace calisim::profiler {

class GzipInput {
 public:
  explicit GzipInput(const std::string& path);
  ~GzipInput();
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  bool compressed() const { return compressed_; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    Iterator() = default;  // the end
    reference operator*() const { return *in_->cur_; }
    Iterator& operator++() {
      if (++in_->cur_ == in_->lim_) in_->refill();
      return *this;
    }
    void operator++(int) { ++*this; }
    // Only comparisons with the end are meaningful (an input iterator): equal when both are
    // exhausted.
    bool operator==(const Iterator& o) const { return exhausted() == o.exhausted(); }

   private:
    friend class GzipInput;
    explicit Iterator(GzipInput* in) : in_(in) {}
    bool exhausted() const { return !in_ || in_->cur_ == in_->lim_; }
    GzipInput* in_ = nullptr;
  };

  Iterator begin();
  Iterator end() { return Iterator(); }

 private:
  void refill();  // the next block into data_; cur_ == lim_ after it at the end of the file

  std::string path_;
  void* file_ = nullptr;  // gzFile, closed by the destructor
  bool compressed_ = false;
  std::vector<char> data_;
  const char* cur_ = nullptr;
  const char* lim_ = nullptr;
};

}  // namespace calisim::profiler
