#include "profiler/gzip_input.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace calisim::profiler {
namespace {

constexpr unsigned kBufferBytes = 1u << 20;

gzFile as_gz(void* f) { return static_cast<gzFile>(f); }

}  // namespace

GzipInput::Buffer::Buffer(std::string path, void* file)
    : path_(std::move(path)), file_(file), data_(kBufferBytes) {
  setg(data_.data(), data_.data(), data_.data());
}

GzipInput::Buffer::int_type GzipInput::Buffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  const int n = gzread(as_gz(file_), data_.data(), static_cast<unsigned>(data_.size()));
  int code = Z_OK;
  const char* message = gzerror(as_gz(file_), &code);
  // Z_BUF_ERROR at the end: the compressed stream stopped inside a member (zlib's "unexpected
  // end of file"); the bytes decompressed before it are not worth parsing on.
  if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    throw InputError(path_, "",
                     fmt::format("gzip: {} (a truncated or damaged .gz file?)",
                                 code == Z_ERRNO ? std::strerror(errno) : message));
  }
  if (n == 0) return traits_type::eof();
  setg(data_.data(), data_.data(), data_.data() + n);
  return traits_type::to_int_type(*gptr());
}

GzipInput::GzipInput(const std::string& path) : stream_(nullptr) {
  file_ = gzopen(path.c_str(), "rb");
  if (!file_) {
    throw InputError(path, "", fmt::format("cannot open the file ({})", errno ? std::strerror(errno) : "gzopen failed"));
  }
  gzbuffer(as_gz(file_), kBufferBytes);
  // gzdirect answers only after the first read has looked at the header.
  const int first = gzgetc(as_gz(file_));
  if (first != -1) gzungetc(first, as_gz(file_));
  compressed_ = gzdirect(as_gz(file_)) == 0;
  buffer_ = std::make_unique<Buffer>(path, file_);
  stream_.rdbuf(buffer_.get());
}

GzipInput::~GzipInput() {
  if (file_) gzclose(as_gz(file_));
}

}  // namespace calisim::profiler
