#include "profiler/gzip_input.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace calisim::profiler {
namespace {

constexpr unsigned kBlockBytes = 1u << 20;

gzFile as_gz(void* f) { return static_cast<gzFile>(f); }

}  // namespace

GzipInput::GzipInput(const std::string& path) : path_(path), data_(kBlockBytes) {
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (!file_) {
    throw InputError(path, "", fmt::format("cannot open the file ({})", errno ? std::strerror(errno) : "gzopen failed"));
  }
  gzbuffer(as_gz(file_), kBlockBytes);
  // gzdirect answers only once a read has looked at the header.
  const int first = gzgetc(as_gz(file_));
  if (first != -1) gzungetc(first, as_gz(file_));
  compressed_ = gzdirect(as_gz(file_)) == 0;
  cur_ = lim_ = data_.data();
}

GzipInput::~GzipInput() {
  if (file_) gzclose(as_gz(file_));
}

GzipInput::Iterator GzipInput::begin() {
  if (cur_ == lim_) refill();
  return Iterator(this);
}

void GzipInput::refill() {
  const int n = gzread(as_gz(file_), data_.data(), static_cast<unsigned>(data_.size()));
  int code = Z_OK;
  const char* message = gzerror(as_gz(file_), &code);
  // Z_BUF_ERROR at the end: the compressed stream stopped inside a member (zlib's "unexpected end
  // of file"); the bytes decompressed before it are not worth parsing on.
  if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    throw InputError(path_, "",
                     fmt::format("gzip: {} (a truncated or damaged .gz file?)",
                                 code == Z_ERRNO ? std::strerror(errno) : message));
  }
  cur_ = data_.data();
  lim_ = cur_ + n;
}

}  // namespace calisim::profiler
