// The embedding-bag operator: one test body per property, run against every implementation and
// compared with the reference over a grid of dims, poolings, batch sizes, table counts, weight
// and index types (include/embshard/kernels/embedding_bag.h has the semantics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/kernels/cuda_embedding_bag.h"
#include "embshard/kernels/embedding_bag.h"

namespace embshard::kernels {
namespace {

/** splitmix64: a small portable generator, so the data never depends on the standard library. */
struct TestRng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f; }
};

/** Owns one table's storage; view() is what the kernels see. */
struct TestTable {
  std::int64_t rows = 0;
  std::int32_t dim = 0;
  WeightDtype dtype = WeightDtype::kF32;
  std::vector<float> f32;
  std::vector<std::uint16_t> f16;
  std::vector<float> momentum;

  TableView view() {
    void* weights = dtype == WeightDtype::kF32 ? static_cast<void*>(f32.data()) : f16.data();
    return {weights, rows, dim, dtype, momentum.data()};
  }
  float weight(std::size_t i) const { return dtype == WeightDtype::kF32 ? f32[i] : half_to_float(f16[i]); }
};

TestTable make_table(std::int64_t rows, std::int32_t dim, WeightDtype dtype, TestRng& rng) {
  TestTable table{rows, dim, dtype, {}, {}, {}};
  const auto n = static_cast<std::size_t>(rows * dim);
  for (std::size_t i = 0; i < n; ++i) {
    const float w = rng.uniform(-1.0f, 1.0f);
    if (dtype == WeightDtype::kF32)
      table.f32.push_back(w);
    else
      table.f16.push_back(float_to_half(w));
  }
  for (std::int64_t r = 0; r < rows; ++r) table.momentum.push_back(rng.uniform(0.0f, 0.5f));
  return table;
}

/** CSR lookups, table-major; both index types hold the same values. */
struct TestBatch {
  std::int64_t batch_size = 0;
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int32_t> idx32;
  std::vector<std::int64_t> idx64;
  bool use_i32 = false;

  BagBatch view() const {
    return use_i32 ? BagBatch::of(batch_size, offsets, idx32) : BagBatch::of(batch_size, offsets, idx64);
  }
  void push(std::int64_t index) {
    idx32.push_back(static_cast<std::int32_t>(index));
    idx64.push_back(index);
  }
};

/** Bags of `pooling` lookups, every 4th bag empty; half the lookups hit three hot rows. */
TestBatch make_batch(const std::vector<TestTable>& tables, std::int64_t batch_size, int pooling, bool use_i32,
                     TestRng& rng) {
  TestBatch batch;
  batch.batch_size = batch_size;
  batch.use_i32 = use_i32;
  for (const TestTable& table : tables) {
    const std::int64_t hot[3] = {0, table.rows / 2, table.rows - 1};
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const int length = b % 4 == 3 ? 0 : pooling;
      for (int l = 0; l < length; ++l) {
        batch.push(rng.next() % 2 == 0 ? hot[rng.below(3)] : rng.below(table.rows));
      }
      batch.offsets.push_back(static_cast<std::int64_t>(batch.idx64.size()));
    }
  }
  return batch;
}

std::vector<TableView> views(std::vector<TestTable>& tables) {
  std::vector<TableView> v;
  for (TestTable& t : tables) v.push_back(t.view());
  return v;
}

std::int64_t total_dim(const std::vector<TestTable>& tables) {
  std::int64_t sum = 0;
  for (const TestTable& t : tables) sum += t.dim;
  return sum;
}

void expect_close(float actual, float expected, const std::string& what) {
  EXPECT_LE(std::fabs(actual - expected), 1e-5f * std::max(1.0f, std::fabs(expected)))
      << what << ": " << actual << " vs " << expected;
}

/** Distance in units of binary16 ulps (monotone integer mapping of the bits). */
int half_ulps(std::uint16_t a, std::uint16_t b) {
  const auto ordered = [](std::uint16_t h) { return h & 0x8000 ? -(h & 0x7fff) : static_cast<int>(h); };
  return std::abs(ordered(a) - ordered(b));
}

void expect_same_tables(const std::vector<TestTable>& actual, const std::vector<TestTable>& expected,
                        bool check_momentum) {
  for (std::size_t t = 0; t < actual.size(); ++t) {
    const TestTable& a = actual[t];
    const TestTable& e = expected[t];
    for (std::size_t i = 0; i < static_cast<std::size_t>(a.rows * a.dim); ++i) {
      if (a.dtype == WeightDtype::kF32) {
        expect_close(a.f32[i], e.f32[i], "table " + std::to_string(t) + " weight " + std::to_string(i));
      } else {
        EXPECT_LE(half_ulps(a.f16[i], e.f16[i]), 1) << "table " << t << " weight " << i;
      }
      if (::testing::Test::HasFailure()) return;
    }
    if (!check_momentum) continue;
    for (std::size_t r = 0; r < a.momentum.size(); ++r) {
      expect_close(a.momentum[r], e.momentum[r], "table " + std::to_string(t) + " momentum " + std::to_string(r));
    }
  }
}

struct Shape {
  std::int64_t batch_size;
  int num_tables;
  WeightDtype dtype;
  bool use_i32;
};

std::string describe(const Shape& s) {
  return "B=" + std::to_string(s.batch_size) + " T=" + std::to_string(s.num_tables) +
         (s.dtype == WeightDtype::kF32 ? " fp32" : " fp16") + (s.use_i32 ? " i32" : " i64");
}

/** T = 1: a 50-row table. T = 3: a one-row table, a 7-row table of dim 4, a 1000-row table. */
std::vector<TestTable> make_tables(int dim, const Shape& s, TestRng& rng) {
  if (s.num_tables == 1) return {make_table(50, dim, s.dtype, rng)};
  return {make_table(1, dim, s.dtype, rng), make_table(7, 4, s.dtype, rng), make_table(1000, dim, s.dtype, rng)};
}

/**
 * Backward + SGD and backward + row-wise Adagrad of `impl` on copies of `tables` against the
 * reference's; with `nothing_to_update`, the tables must also come back unchanged.
 */
void check_backward_against_reference(EmbeddingBagImpl impl, const std::vector<TestTable>& tables,
                                      const TestBatch& batch, const std::vector<float>& grad, float learning_rate,
                                      bool nothing_to_update) {
  for (const OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kRowwiseAdagrad}) {
    SCOPED_TRACE(kind == OptimizerKind::kSgd ? "sgd" : "rowwise adagrad");
    const OptimizerConfig optimizer{kind, learning_rate, 1e-6f};
    std::vector<TestTable> ref_tables = tables, impl_tables = tables;
    std::vector<TableView> ref_views = views(ref_tables), impl_views = views(impl_tables);
    ASSERT_TRUE(embedding_bag_backward(EmbeddingBagImpl::kReference, ref_views, batch.view(), grad, optimizer).ok());
    ASSERT_TRUE(embedding_bag_backward(impl, impl_views, batch.view(), grad, optimizer).ok());
    expect_same_tables(impl_tables, ref_tables, kind == OptimizerKind::kRowwiseAdagrad);
    if (nothing_to_update) expect_same_tables(impl_tables, tables, true);
    if (::testing::Test::HasFailure()) return;
  }
}

/** The one body: forward, backward+SGD and backward+Adagrad of `impl` against the reference. */
void check_against_reference(EmbeddingBagImpl impl, int dim, int pooling, const Shape& shape) {
  SCOPED_TRACE(describe(shape));
  TestRng rng{static_cast<std::uint64_t>(dim * 1000003 + pooling * 101 + shape.batch_size)};
  std::vector<TestTable> tables = make_tables(dim, shape, rng);
  const TestBatch batch = make_batch(tables, shape.batch_size, pooling, shape.use_i32, rng);
  const auto out_size = static_cast<std::size_t>(shape.batch_size * total_dim(tables));

  std::vector<float> expected(out_size, -7.0f), actual(out_size, -7.0f);
  std::vector<TableView> v = views(tables);
  ASSERT_TRUE(embedding_bag_forward(EmbeddingBagImpl::kReference, v, batch.view(), expected).ok());
  ASSERT_TRUE(embedding_bag_forward(impl, v, batch.view(), actual).ok());
  for (std::size_t i = 0; i < out_size; ++i) {
    expect_close(actual[i], expected[i], "forward output " + std::to_string(i));
    if (::testing::Test::HasFailure()) return;
  }

  std::vector<float> grad(out_size);
  for (float& g : grad) g = rng.uniform(-1.0f, 1.0f);
  check_backward_against_reference(impl, tables, batch, grad, 0.05f, /*nothing_to_update=*/pooling == 0);
}

/** kCuda is listed whenever it is built; without a visible GPU its tests skip. */
bool runnable(EmbeddingBagImpl impl) { return impl != EmbeddingBagImpl::kCuda || cuda_device_available(); }

using GridParam = std::tuple<EmbeddingBagImpl, int, int>;  // impl, dim, pooling

class EmbeddingBagGrid : public ::testing::TestWithParam<GridParam> {};

TEST_P(EmbeddingBagGrid, MatchesReference) {
  const auto [impl, dim, pooling] = GetParam();
  if (!runnable(impl)) GTEST_SKIP() << "no CUDA device visible";
  for (const std::int64_t batch_size : {1, 3, 64, 257}) {
    for (const int num_tables : {1, 3}) {
      for (const WeightDtype dtype : {WeightDtype::kF32, WeightDtype::kF16}) {
        for (const bool use_i32 : {false, true}) {
          check_against_reference(impl, dim, pooling, {batch_size, num_tables, dtype, use_i32});
          if (HasFailure()) return;
        }
      }
    }
  }
}

std::string grid_name(const ::testing::TestParamInfo<GridParam>& info) {
  return std::string(to_string(std::get<0>(info.param))) + "_dim" + std::to_string(std::get<1>(info.param)) + "_pool" +
         std::to_string(std::get<2>(info.param));
}

/** Every implementation but the reference, which the grid compares them with. */
std::vector<EmbeddingBagImpl> fast_impls() {
  std::vector<EmbeddingBagImpl> impls;
  for (const EmbeddingBagImpl impl : embedding_bag_impls()) {
    if (impl != EmbeddingBagImpl::kReference) impls.push_back(impl);
  }
  return impls;
}

INSTANTIATE_TEST_SUITE_P(All, EmbeddingBagGrid,
                         ::testing::Combine(::testing::ValuesIn(fast_impls()),
                                            ::testing::Values(4, 8, 12, 16, 64, 128, 132),
                                            ::testing::Values(0, 1, 5, 40)),
                         grid_name);

// ---- the reference against numbers worked by hand from the header's semantics ---------------------

/**
 * Table 0: 3 rows × dim 2, fp32, W = [[1,2],[3,4],[5,6]]; table 1: 2 rows × dim 1, fp16,
 * W = [[0.5],[-1]]. B = 2, bags (table-major): (0,0) = {0,2,0}, (0,1) = {}, (1,0) = {1},
 * (1,1) = {0,1}. grad_out = [[1,-1,2],[0.5,0.25,-4]], lr 0.5.
 */
struct HandWorkedCall {
  std::vector<float> w0{1, 2, 3, 4, 5, 6};
  std::vector<std::uint16_t> w1{float_to_half(0.5f), float_to_half(-1.0f)};
  std::vector<float> m0{0, 0, 0}, m1{0, 0};
  std::vector<std::int64_t> offsets{0, 3, 3, 4, 6};
  std::vector<std::int64_t> indices{0, 2, 0, 1, 0, 1};
  std::vector<float> grad{1, -1, 2, 0.5f, 0.25f, -4};

  std::vector<TableView> views() {
    return {{w0.data(), 3, 2, WeightDtype::kF32, m0.data()}, {w1.data(), 2, 1, WeightDtype::kF16, m1.data()}};
  }
  BagBatch batch() const { return BagBatch::of(2, offsets, indices); }
  std::vector<float> w1_floats() const { return {half_to_float(w1[0]), half_to_float(w1[1])}; }
};

TEST(EmbeddingBagReference, ComputesTheHandWorkedSums) {
  HandWorkedCall call;
  std::vector<float> out(6, -7.0f);
  const std::vector<TableView> views = call.views();
  ASSERT_TRUE(embedding_bag_forward(EmbeddingBagImpl::kReference, views, call.batch(), out).ok());
  // bag (0,0) = row0 + row2 + row0; (0,1) empty; (1,0) = -1; (1,1) = 0.5 + -1
  EXPECT_EQ(out, (std::vector<float>{7, 10, -1, 0, 0, -0.5f}));
}

TEST(EmbeddingBagReference, UpdatesEachRowOnceWithItsSummedGradient) {
  HandWorkedCall sgd;
  std::vector<TableView> sgd_views = sgd.views();
  ASSERT_TRUE(embedding_bag_backward(EmbeddingBagImpl::kReference, sgd_views, sgd.batch(), sgd.grad,
                                     {OptimizerKind::kSgd, 0.5f, 0.0f})
                  .ok());
  // table 0: row 0 twice in bag (0,0): g = [2,-2]; row 2: g = [1,-1]; row 1 untouched
  EXPECT_EQ(sgd.w0, (std::vector<float>{0, 3, 3, 4, 4.5f, 6.5f}));
  // table 1: row 1 in (1,0) and (1,1): g = 2 - 4 = -2; row 0 in (1,1): g = -4
  EXPECT_EQ(sgd.w1_floats(), (std::vector<float>{2.5f, 0}));
  EXPECT_EQ(sgd.m0, (std::vector<float>{0, 0, 0}));  // SGD keeps no state

  HandWorkedCall adagrad;
  std::vector<TableView> adagrad_views = adagrad.views();
  ASSERT_TRUE(embedding_bag_backward(EmbeddingBagImpl::kReference, adagrad_views, adagrad.batch(), adagrad.grad,
                                     {OptimizerKind::kRowwiseAdagrad, 0.5f, 0.0f})
                  .ok());
  // M ← mean of g²: row 0: 4 → step lr·g/2; row 2: 1; table 1 row 0: 16, row 1: 4
  EXPECT_EQ(adagrad.m0, (std::vector<float>{4, 0, 1}));
  EXPECT_EQ(adagrad.m1, (std::vector<float>{16, 4}));
  EXPECT_EQ(adagrad.w0, (std::vector<float>{0.5f, 2.5f, 3, 4, 4.5f, 6.5f}));
  EXPECT_EQ(adagrad.w1_floats(), (std::vector<float>{1.0f, -0.5f}));
}

// ---- bad input: a status, no crash, weights untouched by the backward ----------------------------

class EmbeddingBagBadInput : public ::testing::TestWithParam<EmbeddingBagImpl> {};

struct BadCase {
  std::string name;
  KernelError error;
  std::int64_t position;
  void (*mutate)(TestBatch&);
};

/** Two tables of 10 rows, B = 4, two lookups per bag: indices 0..7 table 0, 8..15 table 1. */
void check_bad_input(EmbeddingBagImpl impl, const BadCase& c, bool use_i32) {
  SCOPED_TRACE(c.name + (use_i32 ? " i32" : " i64"));
  TestRng rng{42};
  std::vector<TestTable> tables{make_table(10, 8, WeightDtype::kF32, rng), make_table(10, 16, WeightDtype::kF16, rng)};
  TestBatch batch;
  batch.batch_size = 4;
  batch.use_i32 = use_i32;
  for (int k = 0; k < 8; ++k) {
    batch.push(k % 10);
    batch.push((3 * k) % 10);
    batch.offsets.push_back(2 * (k + 1));
  }
  c.mutate(batch);
  const auto out_size = static_cast<std::size_t>(batch.batch_size * total_dim(tables));
  std::vector<float> out(out_size), grad(out_size, 1.0f);
  std::vector<TableView> v = views(tables);
  const KernelStatus forward = embedding_bag_forward(impl, v, batch.view(), out);
  EXPECT_EQ(forward.error, c.error) << to_string(forward.error);
  EXPECT_EQ(forward.position, c.position);
  for (const OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kRowwiseAdagrad}) {
    std::vector<TestTable> updated = tables;
    std::vector<TableView> uv = views(updated);
    const KernelStatus backward = embedding_bag_backward(impl, uv, batch.view(), grad, {kind, 0.1f, 1e-6f});
    EXPECT_EQ(backward.error, c.error) << to_string(backward.error);
    EXPECT_EQ(backward.position, c.position);
    if (c.error == KernelError::kNone) continue;  // valid input: the update happened
    for (std::size_t t = 0; t < tables.size(); ++t) {
      EXPECT_EQ(updated[t].f32, tables[t].f32);
      EXPECT_EQ(updated[t].f16, tables[t].f16);
      EXPECT_EQ(updated[t].momentum, tables[t].momentum);
    }
  }
}

TEST_P(EmbeddingBagBadInput, ReturnsStatusAndLeavesWeights) {
  if (!runnable(GetParam())) GTEST_SKIP() << "no CUDA device visible";
  const std::vector<BadCase> cases{
      {"negative index", KernelError::kBadIndex, 5,
       [](TestBatch& b) {
         b.idx32[5] = -1;
         b.idx64[5] = -1;
       }},
      {"index == rows", KernelError::kBadIndex, 9,
       [](TestBatch& b) {
         b.idx32[9] = 10;
         b.idx64[9] = 10;
       }},
      {"first of two bad", KernelError::kBadIndex, 3,
       [](TestBatch& b) {
         b.idx32[12] = b.idx64[12] = 99;
         b.idx32[3] = 11;
         b.idx64[3] = 11;
       }},
      {"huge index", KernelError::kBadIndex, 14,
       [](TestBatch& b) {
         b.idx64[14] = std::int64_t{1} << 40;
         b.idx32[14] = INT32_MAX;
       }},
      {"decreasing offsets", KernelError::kBadOffsets, 4, [](TestBatch& b) { b.offsets[4] = 1; }},
      {"overrun", KernelError::kBadOffsets, 8, [](TestBatch& b) { b.offsets[8] = 17; }},
      {"negative first offset", KernelError::kBadOffsets, 0, [](TestBatch& b) { b.offsets[0] = -1; }},
      {"offsets too short", KernelError::kBadOffsets, 8, [](TestBatch& b) { b.offsets.pop_back(); }},
      {"valid", KernelError::kNone, -1, [](TestBatch&) {}},
  };
  for (const bool use_i32 : {false, true}) {
    for (const BadCase& c : cases) check_bad_input(GetParam(), c, use_i32);
  }
}

TEST_P(EmbeddingBagBadInput, BadShapesAndTables) {
  if (!runnable(GetParam())) GTEST_SKIP() << "no CUDA device visible";
  TestRng rng{7};
  std::vector<TestTable> tables{make_table(10, 8, WeightDtype::kF32, rng)};
  TestBatch batch = make_batch(tables, 4, 3, false, rng);
  std::vector<float> out(4 * 8);
  std::vector<TableView> v = views(tables);
  std::vector<float> too_small(4 * 8 - 1);
  EXPECT_EQ(embedding_bag_forward(GetParam(), v, batch.view(), too_small).error, KernelError::kBadShape);
  v[0].dim = 0;
  EXPECT_EQ(embedding_bag_forward(GetParam(), v, batch.view(), out).error, KernelError::kBadTable);
  v = views(tables);
  v[0].momentum = nullptr;
  EXPECT_TRUE(embedding_bag_backward(GetParam(), v, batch.view(), out, {OptimizerKind::kSgd, 0.1f, 0.f}).ok());
  EXPECT_EQ(embedding_bag_backward(GetParam(), v, batch.view(), out, {OptimizerKind::kRowwiseAdagrad, 0.1f, 0.f}).error,
            KernelError::kBadTable);
  // No tables, or B = 0: nothing to do, and fine.
  std::vector<std::int64_t> one_offset{0};
  EXPECT_TRUE(
      embedding_bag_forward(GetParam(), {}, BagBatch::of(4, one_offset, std::span<const std::int64_t>{}), {}).ok());
  EXPECT_TRUE(
      embedding_bag_forward(GetParam(), v, BagBatch::of(0, one_offset, std::span<const std::int64_t>{}), {}).ok());
}

std::string impl_name(const ::testing::TestParamInfo<EmbeddingBagImpl>& param_info) {
  return std::string(to_string(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(All, EmbeddingBagBadInput, ::testing::ValuesIn(embedding_bag_impls()), impl_name);

// ---- the device-resident CUDA API without a GPU: a clear Error, no crash ----------------------------

TEST(EmbeddingBagCuda, ThrowsErrorWithoutDevice) {
  if (cuda_device_available()) GTEST_SKIP() << "a CUDA device is visible";
  TestRng rng{3};
  std::vector<TestTable> tables{make_table(10, 8, WeightDtype::kF32, rng)};
  const TestBatch batch = make_batch(tables, 4, 2, false, rng);
  const std::vector<TableView> v = views(tables);
  EXPECT_THROW(CudaEmbeddingBag(v, batch.view()), embshard::Error);
  EXPECT_THROW(cuda_bandwidth(), embshard::Error);
  EXPECT_THROW((void)cuda_dense_update_ms(1024, 1), embshard::Error);
}

TEST(EmbeddingBagCuda, DenseUpdateIsTimedOnTheDevice) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const std::vector<double> ms = cuda_dense_update_ms(1 << 20, 3);
  ASSERT_EQ(ms.size(), 3u);
  for (double m : ms) EXPECT_GT(m, 0.0);
  EXPECT_EQ(cuda_dense_update_ms(0, 2), std::vector<double>(2, 0.0));
}

/** The tiered path: rows from each table's threshold on live in mapped host memory (UVM). */
TEST(EmbeddingBagCuda, TieredTablesMatchTheReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  for (const WeightDtype dtype : {WeightDtype::kF32, WeightDtype::kF16}) {
    SCOPED_TRACE(dtype == WeightDtype::kF32 ? "fp32" : "fp16");
    TestRng rng{17};
    // A table all in HBM, one all in host memory, one split at its 500th row.
    std::vector<TestTable> tables{make_table(7, 4, dtype, rng), make_table(50, 64, dtype, rng),
                                  make_table(1000, 132, dtype, rng)};
    const std::vector<std::int64_t> hbm_rows{-1, 0, 500};
    const TestBatch batch = make_batch(tables, 257, 5, false, rng);
    std::vector<TableView> v = views(tables);
    const auto out_size = static_cast<std::size_t>(batch.batch_size * total_dim(tables));
    std::vector<float> expected(out_size), actual(out_size), grad(out_size);
    ASSERT_TRUE(embedding_bag_forward(EmbeddingBagImpl::kReference, v, batch.view(), expected).ok());
    CudaEmbeddingBag gpu(v, batch.view(), hbm_rows);
    ASSERT_TRUE(gpu.forward().ok());
    gpu.copy_output_to(actual);
    for (std::size_t i = 0; i < out_size && !HasFailure(); ++i) expect_close(actual[i], expected[i], "output");

    for (float& g : grad) g = rng.uniform(-1.0f, 1.0f);
    const OptimizerConfig optimizer{OptimizerKind::kRowwiseAdagrad, 0.05f, 1e-6f};
    std::vector<TestTable> ref_tables = tables, gpu_tables = tables;
    std::vector<TableView> ref_views = views(ref_tables), gpu_views = views(gpu_tables);
    ASSERT_TRUE(embedding_bag_backward(EmbeddingBagImpl::kReference, ref_views, batch.view(), grad, optimizer).ok());
    gpu.set_grad_output(grad);
    ASSERT_TRUE(gpu.backward(optimizer).ok());
    gpu.copy_tables_to(gpu_views);
    expect_same_tables(gpu_tables, ref_tables, true);
  }
}

/** Hot rows far past the backward's piece size (kLongSegment = 128 lookups) against the reference. */
TEST(EmbeddingBagCuda, HotRowsGradientsSummedInPiecesMatchTheReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  TestRng rng{23};
  // dim 64: vector lanes; dim 20 after it: scalar lanes (its output columns start at 64 + 20).
  std::vector<TestTable> tables{make_table(1000, 64, WeightDtype::kF32, rng),
                                make_table(50, 20, WeightDtype::kF32, rng), make_table(300, 8, WeightDtype::kF16, rng)};
  TestBatch batch;
  batch.batch_size = 5000;
  for (const TestTable& table : tables) {
    for (std::int64_t b = 0; b < batch.batch_size; ++b) {
      const int length = static_cast<int>(b % 9);  // 0..8 lookups, 129 or more on rows 0 and 7
      for (int l = 0; l < length; ++l) {
        const std::uint64_t r = rng.next() % 10;
        batch.push(r < 7 ? 0 : r < 9 ? std::min<std::int64_t>(7, table.rows - 1) : rng.below(table.rows));
      }
      batch.offsets.push_back(static_cast<std::int64_t>(batch.idx64.size()));
    }
  }
  std::vector<float> grad(static_cast<std::size_t>(batch.batch_size * total_dim(tables)));
  for (float& g : grad) g = rng.uniform(-1.0f, 1.0f);
  check_backward_against_reference(EmbeddingBagImpl::kCuda, tables, batch, grad, 0.001f, false);
}

// ---- binary16 conversion ---------------------------------------------------------------------------

TEST(EmbeddingBagHalf, RoundTripsEveryHalfAndRoundsToNearestEven) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
    // The midpoint to the next half (same sign) ties to the even one of the two.
    const auto next = static_cast<std::uint16_t>(h + 1);
    if ((h & 0x7fff) >= 0x7c00 || (next & 0x7fff) >= 0x7c00 || (next & 0x7fff) == 0) continue;
    const float mid = static_cast<float>((static_cast<double>(f) + half_to_float(next)) / 2);
    ASSERT_EQ(float_to_half(mid), (h & 1) ? next : h) << std::hex << h;
  }
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half(-1e6f), 0xfc00);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(1e-10f), 0);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
}

}  // namespace
}  // namespace embshard::kernels
