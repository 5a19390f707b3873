// tg-kernels: how close does each CUDA kernel come to the memory system's limit?
// Per op, element type (--dtypes: f32, and bf16 and f16 for the kernels the backend runs
// in them, with cast between f32 and each) and tensor size: median GPU time (CUDA events),
// GB/s of the bytes it must move (read + written, at the element type's size), and that as
// a percent of a device-to-device copy of the same size measured in the same run. matmul:
// TFLOP/s of run_cuda against cuBLAS called directly at n = 5000 (the entry layer should cost
// nothing: within 5%), in fp32, tf32, bf16 and fp16 (each row records its precision).
//
// Each memory row is timed twice, as nvbench times a kernel both cold and in a batch:
// one launch per sample (the row's median), and kBackToBack launches per sample (the
// extras back_to_back_s and back_to_back_pct_of_copy, against the copy timed the same
// way). One launch alone pays its grid's dispatch and its drain with nothing beside them;
// back to back, with programmatic dependent launch (kernels/cuda/pdl.cuh), the next grid
// is already resident, waiting, when the one before completes, which is how a graph
// replay runs a step's kernels. A copy has no such launch: its two timings agree.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "experiments/harness/harness.h"
#include "experiments/kernels/cases.h"
#include "graph/quote.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/raii.h"

namespace th = tg::harness;

namespace {

// "add,relu" -> {"add", "relu"}. An empty item (",,", "add,", ",add") is a typo, not
// "nothing": it is refused like an unknown name, so a list never selects nothing and
// exits 0. flag and noun name it in the message ("--ops", "op name"); hint says what to give.
std::vector<std::string> split_list(const std::string& s, const char* flag, const char* noun, const char* hint) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty())
      throw th::UsageError(
          fmt::format("{}: {} has an empty {} (item {}); {}", flag, tg::quote_name(s), noun, out.size() + 1, hint));
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// --dtypes: all (f32, bf16, f16), or a comma-separated list of distinct element types.
std::vector<tg::DType> parse_dtypes(const std::string& text) {
  if (text == "all") return {tg::DType::F32, tg::DType::BF16, tg::DType::F16};
  std::vector<tg::DType> out;
  for (const std::string& item : split_list(text, "--dtypes", "dtype", "give all, or a list such as f32,bf16")) {
    tg::DType dt = tg::DType::F32;
    if (item == "all")
      throw th::UsageError(fmt::format("--dtypes: all stands alone; give all, or a list such as f32,bf16 (got {})",
                                       tg::quote_name(text)));
    if (!tg::parse_dtype(item, dt) || !tg::dtype_is_float(dt))  // the kernels measured compute on floats
      throw th::UsageError(fmt::format("--dtypes: {} is not a dtype; give all, or a comma-separated list of f32, "
                                       "bf16 and f16", tg::quote_name(item)));
    if (std::find(out.begin(), out.end(), dt) != out.end())
      throw th::UsageError(fmt::format("--dtypes: {} is given twice; name each dtype once", item));
    out.push_back(dt);
  }
  return out;
}

// A memory row's params: its size, and its element types where they are not f32 alone (so
// that the f32 rows keep the names and params of the runs without --dtypes).
th::Params row_params(const tg::bench::KernelCase& k, int64_t bytes) {
  th::Params p{{"size_bytes", bytes}};
  if (k.call.op == tg::OpKind::cast) {
    p.emplace("from", tg::dtype_name(k.dtype));
    p.emplace("to", tg::dtype_name(k.to));
  } else if (k.dtype != tg::DType::F32) {
    p.emplace("dtype", tg::dtype_name(k.dtype));
  }
  return p;
}

std::vector<int64_t> sizes(bool quick, int64_t min_bytes, int64_t max_bytes) {
  const std::vector<int64_t> all = quick ? std::vector<int64_t>{1 << 20, 16 << 20, 256 << 20}
                                         : std::vector<int64_t>{64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20,
                                                                int64_t{1} << 30};
  std::vector<int64_t> out;
  for (int64_t b : all)
    if (b >= min_bytes && b <= max_bytes) out.push_back(b);
  return out;
}

constexpr int kBackToBack = 16;

void bench_memory(th::Experiment& ex, tg::CudaBackend& be, const std::vector<std::string>& ops,
                  const std::vector<tg::DType>& dtypes, int64_t min_bytes, int64_t max_bytes,
                  const th::LoopOptions& loop) {
  void* stream = be.stream();
  th::LoopOptions batched = loop;
  batched.batch = kBackToBack;
  batched.warmup = 1;
  // The median per launch of kBackToBack launches per sample.
  auto back_to_back_s = [&](const std::function<void(void*)>& body) {
    return th::summarize(th::time_gpu(batched, body, stream)).median;
  };
  const auto sz = sizes(ex.quick(), min_bytes, max_bytes);
  th::Progress bar(sz.size() * (ops.size() * dtypes.size() + 1), "kernels");
  std::map<tg::DType, std::vector<std::string>> without_kernel;  // per 16-bit dtype, for one note each
  for (int64_t bytes : sz) {
    // The reference: a D2D copy of the same size, counted as read + write.
    auto src = tg::cuda::DeviceBuffer::allocate(static_cast<size_t>(bytes));
    auto dst = tg::cuda::DeviceBuffer::allocate(static_cast<size_t>(bytes));
    TG_CUDA_CHECK(cudaMemsetAsync(src.get(), 0, src.bytes(), be.stream()));
    const auto copy = [&](void* s) {
      TG_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), src.bytes(), cudaMemcpyDeviceToDevice,
                                    static_cast<cudaStream_t>(s)));
    };
    auto& cm = ex.report().add_time("d2d_copy", {{"size_bytes", bytes}}, th::time_gpu(loop, copy, stream), "gpu");
    const double copy_gbs = 2.0 * static_cast<double>(bytes) / cm.stats.median / 1e9;
    const double copy_b2b_s = back_to_back_s(copy);
    const double copy_b2b_gbs = 2.0 * static_cast<double>(bytes) / copy_b2b_s / 1e9;
    cm.extra["GB/s"] = copy_gbs;
    cm.extra["pct_of_copy"] = 100.0;
    cm.extra["back_to_back_s"] = copy_b2b_s;
    cm.extra["back_to_back_pct_of_copy"] = 100.0;
    cm.extra["held"] = loop.hold_gpu ? 1 : 0;
    bar.tick();
    src.reset();
    dst.reset();
    const auto measure = [&](tg::bench::KernelCase& k) {
      const auto body = [&](void*) {
        if (k.launch) {
          // A launcher called directly takes the backend's launch choices as run_cuda would.
          const tg::kernels::cuda::LaunchScope launches(be.options().pdl);
          k.launch(be.context());
        } else {
          be.run(k.call);
        }
      };
      auto& m = ex.report().add_time(k.op, row_params(k, bytes), th::time_gpu(loop, body, stream), "gpu");
      const double gbs = static_cast<double>(k.bytes_moved) / m.stats.median / 1e9;
      const double b2b_s = back_to_back_s(body);
      m.extra["GB/s"] = gbs;
      m.extra["pct_of_copy"] = 100.0 * gbs / copy_gbs;
      m.extra["back_to_back_s"] = b2b_s;
      m.extra["back_to_back_pct_of_copy"] = 100.0 * (static_cast<double>(k.bytes_moved) / b2b_s / 1e9) / copy_b2b_gbs;
      m.extra["held"] = loop.hold_gpu ? 1 : 0;
    };
    for (const tg::DType dt : dtypes) {
      for (const std::string& op : ops) {
        TG_NVTX_RANGE(op.c_str());
        tg::bench::CaseSet set(bytes, {op}, dt);
        for (const std::string& name : set.without_kernel()) {
          std::vector<std::string>& names = without_kernel[dt];
          if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
        for (tg::bench::KernelCase& k : set.cases()) measure(k);
        bar.tick();
      }
    }
  }
  for (const auto& [dt, names] : without_kernel) {
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    ex.report().skip(fmt::format("{} dtype={}", list, tg::dtype_name(dt)),
                     "no kernel in this dtype (kernels/cuda/dtype_support.cpp): the optimizer updates work on f32 "
                     "master weights, the losses and fill are f32 by their dtype rule, and "
                     "layernorm_grad_gamma_beta's launcher takes f32");
  }
}

// A precision of the matmul rows: the operands' dtype, and TF32 for f32 operands.
struct MatmulPrecision {
  const char* name;
  tg::DType dtype;
  bool tf32;
};

cudaDataType_t cuda_type(tg::DType dt) {
  return dt == tg::DType::BF16 ? CUDA_R_16BF : dt == tg::DType::F16 ? CUDA_R_16F : CUDA_R_32F;
}

void bench_matmul(th::Experiment& ex, int device, const std::vector<int64_t>& ns, const th::LoopOptions& loop) {
  const MatmulPrecision precisions[] = {{"fp32", tg::DType::F32, false},
                                        {"tf32", tg::DType::F32, true},
                                        {"bf16", tg::DType::BF16, false},
                                        {"fp16", tg::DType::F16, false}};
  for (const MatmulPrecision& p : precisions) {
    tg::CudaBackend be(device, p.tf32, ex.cuda_options());
    for (int64_t n : ns) {
      TG_NVTX_RANGE("matmul");
      const size_t count = static_cast<size_t>(n * n);
      const size_t bytes = count * static_cast<size_t>(tg::dtype_size(p.dtype));
      auto a = tg::cuda::DeviceBuffer::allocate(bytes), b = tg::cuda::DeviceBuffer::allocate(bytes),
           c = tg::cuda::DeviceBuffer::allocate(bytes);
      // Constant operands (0.5 and 0.25 in f32; 16-bit runs cast them, exactly).
      auto a32 = tg::cuda::DeviceBuffer::allocate(count * sizeof(float)),
           b32 = tg::cuda::DeviceBuffer::allocate(count * sizeof(float));
      tg::kernels::cuda::fill(a32.as<float>(), 0.5f, n * n, be.stream());
      tg::kernels::cuda::fill(b32.as<float>(), 0.25f, n * n, be.stream());
      const tg::Shape nn{n, n};
      tg::kernels::cuda::cast({a32.as<float>(), nn}, {a.as<float>(), nn, p.dtype}, be.stream());
      tg::kernels::cuda::cast({b32.as<float>(), nn}, {b.as<float>(), nn, p.dtype}, be.stream());
      tg::Attrs at;
      tg::kernels::OpCall call;
      call.op = tg::OpKind::matmul;
      call.attrs = &at;
      call.in[0] = {a.as<float>(), nn, p.dtype};
      call.in[1] = {b.as<float>(), nn, p.dtype};
      call.num_inputs = 2;
      call.out = {c.as<float>(), nn, p.dtype};
      const double flop = 2.0 * static_cast<double>(n) * n * n;
      const auto ours = th::time_gpu(loop, [&](void*) { be.run(call); }, be.stream());
      auto& mo = ex.report().add_time("matmul", {{"n", n}, {"precision", p.name}, {"path", "run_cuda"}}, ours, "gpu");
      mo.extra["TFLOP/s"] = flop / mo.stats.median / 1e12;
      // cuBLAS directly, same handle settings, same stream: SGEMM for f32, GemmEx with f32
      // accumulation for the 16-bit types.
      const float one = 1.0f, zero = 0.0f;
      const int ni = static_cast<int>(n);
      const cudaDataType_t ct = cuda_type(p.dtype);
      const auto direct = th::time_gpu(loop, [&](void*) {
        if (p.dtype == tg::DType::F32)
          TG_CUBLAS_CHECK(cublasSgemm(be.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b.as<float>(), ni,
                                      a.as<float>(), ni, &zero, c.as<float>(), ni));
        else
          TG_CUBLAS_CHECK(cublasGemmEx(be.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b.get(), ct, ni, a.get(),
                                       ct, ni, &zero, c.get(), ct, ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }, be.stream());
      auto& md = ex.report().add_time("matmul", {{"n", n}, {"precision", p.name}, {"path", "cublas_direct"}}, direct,
                                      "gpu");
      md.extra["TFLOP/s"] = flop / md.stats.median / 1e12;
      mo.extra["pct_of_cublas"] = 100.0 * md.stats.median / mo.stats.median;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  th::Experiment ex("tg-kernels", "How close does each CUDA kernel come to the copy bandwidth and to cuBLAS?",
                    "tg-kernels --device 0 --quick --json kernels.json");
  int64_t min_bytes = 0, max_bytes = int64_t{1} << 30;
  std::string ops_flag;
  bool no_matmul = false;
  std::string names;
  for (const auto& n : tg::bench::case_names()) names += (names.empty() ? "" : ",") + n;
  ex.add_option("--min-bytes", min_bytes, "Smallest tensor in bytes", 0, int64_t{1} << 36);
  ex.add_option("--max-bytes", max_bytes, "Largest tensor in bytes (--quick stops at 256 MiB)", 4096, int64_t{1} << 36);
  ex.add_option("--ops", ops_flag, "Comma-separated subset of: " + names);
  std::string dtypes_flag = "f32";
  ex.add_option("--dtypes", dtypes_flag,
                "The memory rows' element types, all or comma-separated: f32, bf16, f16. A row in bf16 or f16 has "
                "a dtype parameter and its GB/s counts 2-byte elements; the ops without a kernel in that type are "
                "named in a note; cast runs from f32 to each 16-bit type and back (params from and to)");
  ex.add_flag("--no-matmul", no_matmul, "Skip the matmul comparison");
  bool plain_timing = false;
  ex.add_flag("--plain-timing", plain_timing,
              "Time each sample from when its start event runs, the host's enqueueing included, instead of "
              "holding the stream until the sample is enqueued (the default, as nvbench does)");
  return ex.run(argc, argv, [&](th::Experiment& e) {
    // Flags are checked before the device is: a typo is a usage error on every machine.
    std::vector<std::string> ops =
        ops_flag.empty() ? tg::bench::case_names()
                         : split_list(ops_flag, "--ops", "op name",
                                      "give comma-separated names like add,relu, or leave --ops out to measure every op");
    for (const auto& o : ops) {
      const auto all = tg::bench::case_names();
      if (std::find(all.begin(), all.end(), o) == all.end())
        throw th::UsageError(fmt::format("--ops: unknown op {}; choose from {}", tg::quote_name(o), names));
    }
    const std::vector<tg::DType> dtypes = parse_dtypes(dtypes_flag);
    if (ops == std::vector<std::string>{"cast"} && dtypes == std::vector<tg::DType>{tg::DType::F32})
      throw th::UsageError("--ops cast: a cast goes between f32 and a 16-bit type; add bf16 or f16 to --dtypes "
                           "(--dtypes f32,bf16)");
    if (min_bytes > max_bytes)
      throw th::UsageError(fmt::format("--min-bytes {} is above --max-bytes {}: no size is left to run; lower "
                                       "--min-bytes or raise --max-bytes", min_bytes, max_bytes));
    if (!e.on_gpu()) {
      e.report().skip("all kernels", "tg-kernels measures CUDA kernels; no GPU selected (--device cpu or none found)");
      return;
    }
    if (e.quick() && max_bytes > (int64_t{256} << 20)) max_bytes = int64_t{256} << 20;
    th::LoopOptions loop = e.loop();
    loop.hold_gpu = !plain_timing;
    {
      tg::CudaBackend be(e.device(), false, e.cuda_options());
      bench_memory(e, be, ops, dtypes, min_bytes, max_bytes, loop);
    }
    if (!no_matmul)
      bench_matmul(e, e.device(), e.quick() ? std::vector<int64_t>{5000} : std::vector<int64_t>{1024, 2048, 5000}, loop);
  });
}
