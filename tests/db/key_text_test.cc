#include "db/key_text.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace calisim::db {
namespace {

TEST(KeyText, RoundTripsEveryKind) {
  const GemmKey g{4096, 1536, 5120, 1, DType::bf16, GemmLayout::NT, true};
  EXPECT_EQ(parse_gemm_key(to_string(g)), g);
  AttentionKey a;
  a.batch = 2, a.heads_q = 64, a.heads_kv = 8, a.seq_q = 4096, a.seq_kv = 8192, a.head_dim_qk = 192;
  a.causal = false, a.dtype = DType::fp8_e4m3, a.direction = AttentionDirection::backward;
  EXPECT_EQ(parse_attention_key(to_string(a)), a);
  const CollectiveKey c{CollectiveOp::reduce_scatter, 1 << 26, 16, 8, DType::fp32};
  EXPECT_EQ(parse_collective_key(to_string(c)), c);
  const MemoryOpKey m{"rmsnorm_fwd", 123456};
  EXPECT_EQ(parse_memory_key(to_string(m)), m);

  CollectiveFit cf;
  cf.op = CollectiveOp::all_to_all, cf.tier = LinkTier::inter_node, cf.ranks = 0;
  const CollectiveFit back = parse_collective_fit_key(fit_key(cf));
  EXPECT_EQ(back.op, cf.op);
  EXPECT_EQ(back.tier, cf.tier);
  EXPECT_EQ(parse_memory_fit_key("memfit kind=default").kind, "default");
}

TEST(KeyText, KindsByFirstWord) {
  EXPECT_EQ(key_kind("gemm m=1"), KeyKind::gemm);
  EXPECT_EQ(key_kind("collfit op=all_reduce"), KeyKind::collective_fit);
  EXPECT_THROW(key_kind("conv n=1"), std::invalid_argument);
}

TEST(KeyText, ErrorsNameTheField) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { parse_gemm_key("gemm m=1 n=2 k=3 batch=1 dtype=bf16 layout=TN"); }).find("'acc' is missing"),
            std::string::npos);
  EXPECT_NE(message([] { parse_gemm_key("gemm m=x n=2 k=3 batch=1 dtype=bf16 layout=TN acc=0"); }).find("'m'"),
            std::string::npos);
  EXPECT_NE(message([] { parse_gemm_key("gemm m=1 m=1 n=2 k=3 batch=1 dtype=bf16 layout=TN acc=0"); })
                .find("twice"),
            std::string::npos);
  EXPECT_NE(message([] { parse_memory_key("mem kind=a bytes=1 color=red"); }).find("unknown field 'color'"),
            std::string::npos);
  EXPECT_NE(message([] { parse_collective_key("coll op=bcast bytes=1 ranks=2 per_node=2 dtype=bf16"); })
                .find("field 'op'"),
            std::string::npos);
}

}  // namespace
}  // namespace calisim::db
