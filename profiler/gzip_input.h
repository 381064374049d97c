// Reading a file that may be gzip-compressed, as a stream: PyTorch's profiler writes its traces
// as .json.gz when asked (tensorboard_trace_handler(use_gzip=True), export_chrome_trace("x.json.gz")),
// and those are what users keep — a 1 GB trace compresses to about 60 MB.
//
// Contract: GzipInput opens `path` through zlib's gz interface, which decompresses gzip members
// (several concatenated members too) and passes any other file through unchanged, so one reader
// serves both. `stream()` yields the decompressed bytes. A file that cannot be opened throws
// InputError(path, "", "cannot open ..."); a read error or a gzip stream that ends early (a
// truncated download or copy) throws InputError(path, "", "gzip: ...") from the read that meets it,
// so a parser reading the stream stops there with that message. `compressed()` says whether the
// file was gzip. Not copyable; one reader per file.
#pragma once

#include <istream>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

namespace calisim::profiler {

class GzipInput {
 public:
  explicit GzipInput(const std::string& path);
  ~GzipInput();
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  std::istream& stream() { return stream_; }
  bool compressed() const { return compressed_; }

 private:
  class Buffer : public std::streambuf {
   public:
    Buffer(std::string path, void* file);
   protected:
    int_type underflow() override;
   private:
    std::string path_;
    void* file_;  // gzFile
    std::vector<char> data_;
  };

  void* file_ = nullptr;  // gzFile, closed by the destructor
  bool compressed_ = false;
  std::unique_ptr<Buffer> buffer_;
  std::istream stream_;
};

}  // namespace calisim::profiler
