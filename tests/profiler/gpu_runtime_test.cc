// The CUDA half of calisim is a plugin (profiler/gpu_runtime.h): the `calisim` executable links no
// CUDA library, the plugin links them, and a plugin that cannot be found or loaded is named in a
// refusal that says why.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/command_output.h"

namespace {

using calisim::testing_support::expect_refused;
using calisim::testing_support::run_shell;

// The DT_NEEDED entries of an ELF64 file (the shared libraries the loader maps with it).
std::vector<std::string> needed_libraries(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (b.size() < sizeof(Elf64_Ehdr) || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64) {
    ADD_FAILURE() << path << " is not an ELF64 file";
    return {};
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, b.data() + eh.e_shoff + i * eh.e_shentsize, sizeof sh);
    return sh;
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr dyn = section(i);
    if (dyn.sh_type != SHT_DYNAMIC) continue;
    const Elf64_Shdr str = section(dyn.sh_link);
    for (std::size_t off = 0; off + sizeof(Elf64_Dyn) <= dyn.sh_size; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, b.data() + dyn.sh_offset + off, sizeof d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) out.emplace_back(b.data() + str.sh_offset + d.d_un.d_val);
    }
  }
  return out;
}

bool needs(const std::vector<std::string>& libs, const std::string& prefix) {
  for (const auto& l : libs) {
    if (l.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

const char* const kCudaLibraries[] = {"libcudart", "libcublas", "libcudnn", "libnccl", "libcupti", "libcuda."};

TEST(GpuRuntime, TheExecutableLinksNoCudaLibrary) {
  const std::vector<std::string> exe = needed_libraries(CALISIM_EXE);
  ASSERT_TRUE(needs(exe, "libc.so")) << "the reader found no DT_NEEDED entry in " << CALISIM_EXE;
  for (const char* lib : kCudaLibraries) EXPECT_FALSE(needs(exe, lib)) << CALISIM_EXE << " links " << lib;
#ifdef CALISIM_CUDA_PLUGIN_PATH
  const std::vector<std::string> plugin = needed_libraries(CALISIM_CUDA_PLUGIN_PATH);
  for (const char* lib : {"libcudart", "libcublasLt", "libcudnn", "libnccl", "libcupti"}) {
    EXPECT_TRUE(needs(plugin, lib)) << CALISIM_CUDA_PLUGIN_PATH << " does not link " << lib;
  }
#endif
}

std::string with_plugin(const std::string& plugin, const std::string& args) {
  return "CALISIM_CUDA_PLUGIN='" + plugin + "' " + CALISIM_EXE + " " + args + " 2>&1";
}

// CALISIM_CUDA_PLUGIN names the one file tried; what is wrong with it is said, with the command's
// alternative. A build without CUDA says so whatever the variable holds.
TEST(GpuRuntime, APluginThatCannotBeUsedIsNamedWithTheReason) {
  const std::string db = ::testing::TempDir() + "gpu_runtime.db";
  const std::string missing = ::testing::TempDir() + "no_such_plugin.so";
  const std::string garbage = calisim::testing_support::write_temp_file("not_a_plugin.so", "not an ELF file\n");
  const auto not_found = run_shell(with_plugin(missing, "profile run --sweep memory --db " + db));
  const auto bad = run_shell(with_plugin(garbage, "profile run --sweep memory --db " + db));
  const auto seq = run_shell(with_plugin(missing, "profile sequence --model llama3-8b --strategy llama3-8b-8gpu"));
  const auto check = run_shell(with_plugin(missing, "profile check"));
#ifdef CALISIM_CUDA_PLUGIN_PATH
  expect_refused(not_found, "libcalisim_cuda.so, was not found (looked at " + missing + ")");
  expect_refused(check, "was not found (looked at " + missing + ")");
  EXPECT_NE(not_found.out.find("`calisim profile plan` works in every build"), std::string::npos) << not_found.out;
  expect_refused(bad, "(" + garbage + ") could not be loaded: ");
  expect_refused(seq, "was not found (looked at " + missing + ")");
  // The build's own plugin, named explicitly, loads: the refusal is then about the machine.
  const auto own = run_shell(with_plugin(CALISIM_CUDA_PLUGIN_PATH, "profile run --sweep memory --db " + db));
  const auto own_check = run_shell(with_plugin(CALISIM_CUDA_PLUGIN_PATH, "profile check --json"));
  if (own.code == 0) {
    // A GPU is present: the check names the plugin and describes the devices.
    ASSERT_EQ(own_check.code, 0) << own_check.out;
    EXPECT_NE(own_check.out.find(std::string("\"plugin\": \"") + CALISIM_CUDA_PLUGIN_PATH), std::string::npos)
        << own_check.out;
    EXPECT_NE(own_check.out.find("\"sm_count\""), std::string::npos) << own_check.out;
    GTEST_SKIP() << "a GPU is present: the sweep ran";
  }
  expect_refused(own, "no CUDA device");
  expect_refused(own_check, "libcalisim_cuda.so loads, but there is no CUDA device");
#else
  for (const auto* r : {&not_found, &bad, &seq, &check}) expect_refused(*r, "built without CUDA");
#endif
  EXPECT_NE(seq.out.find("--dry-run"), std::string::npos) << seq.out;
}

}  // namespace
