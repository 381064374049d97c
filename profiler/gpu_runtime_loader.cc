// load_gpu_runtime (gpu_runtime.h): finds and opens libcalisim_cuda.so once per process.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/gpu_runtime.h"

namespace calisim::profiler {

namespace {

namespace fs = std::filesystem;

struct Loaded {
  const GpuRuntime* runtime = nullptr;
  std::string why;
  std::string path;  // the plugin loaded
};

#ifdef CALISIM_CUDA_PLUGIN_FILE

// Where the plugin may be, in the order gpu_runtime.h gives.
std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  // Named by the user: that file and no other (a wrong path is an error they want to see).
  if (const char* env = std::getenv("CALISIM_CUDA_PLUGIN"); env != nullptr && *env != '\0') return {fs::path(env)};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(exe.parent_path() / CALISIM_CUDA_PLUGIN_FILE);
    out.push_back(exe.parent_path().parent_path() / "lib" / "calisim" / CALISIM_CUDA_PLUGIN_FILE);
  }
#ifdef CALISIM_CUDA_PLUGIN_BUILD_PATH
  out.emplace_back(CALISIM_CUDA_PLUGIN_BUILD_PATH);
#endif
  return out;
}

Loaded load() {
  Loaded l;
  std::string tried;
  for (const fs::path& p : candidates()) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      tried += (tried.empty() ? "" : ", ") + p.string();
      continue;
    }
    // RTLD_LOCAL: the plugin's copies of calisim's static libraries stay its own.
    void* handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      l.why = "the CUDA half of calisim (" + p.string() + ") could not be loaded: " +
              (err != nullptr ? err : "unknown dlopen error") +
              " (are the CUDA libraries it links, cuBLASLt, cuDNN, NCCL, CUPTI and cudart, on this machine and "
              "in the loader's path?)";
      return l;
    }
    // Never dlclose'd: objects it creates live as long as the process.
    auto entry = reinterpret_cast<GpuRuntimeEntry>(dlsym(handle, kGpuRuntimeSymbol));
    if (entry == nullptr) {
      l.why = p.string() + " is not a calisim CUDA plugin (no symbol " + kGpuRuntimeSymbol + ")";
      return l;
    }
    l.runtime = entry(kGpuRuntimeAbi);
    if (l.runtime != nullptr) l.path = p.string();
    if (l.runtime == nullptr) {
      l.why = p.string() + " is the CUDA plugin of another calisim build (interface revision differs from " +
              std::to_string(kGpuRuntimeAbi) + "); rebuild, or point CALISIM_CUDA_PLUGIN at this build's";
    }
    return l;
  }
  l.why = "the CUDA half of calisim, " CALISIM_CUDA_PLUGIN_FILE ", was not found (looked at " + tried +
          "); install it beside the calisim executable or set CALISIM_CUDA_PLUGIN to its path";
  return l;
}

#else

Loaded load() {
  Loaded l;
  l.why =
      "this calisim was built without CUDA (CALISIM_CUDA=OFF or no toolkit), so it cannot run kernels. Build it on a "
      "machine with the CUDA toolkit (cuBLASLt, cuDNN, NCCL, CUPTI) with `cmake -S . -B build -DCALISIM_CUDA=ON`, or "
      "see docs/profiling.md for building here and running on a GPU machine";
  return l;
}

#endif

}  // namespace

const GpuRuntime* load_gpu_runtime(std::string* why, std::string* path) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (loaded.runtime == nullptr && why != nullptr) *why = loaded.why;
  if (path != nullptr) *path = loaded.path;
  return loaded.runtime;
}

}  // namespace calisim::profiler
