// The support layer: check macros, RAII moves, the backend, device resolution,
// and a CUDA Graph capture of the kernels (cuBLAS must not allocate while capturing).
#include <doctest/doctest.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/raii.h"
#include "kernels/device_info.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CudaError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  const bool ok = s.find(part) != std::string::npos;
  if (!ok) std::printf("  message \"%s\" lacks \"%s\"\n", s.c_str(), part.c_str());
  return ok;
}

}  // namespace

TEST_CASE("cuda check macros name file, line, call and error") {
  TG_REQUIRE_GPU();
  const int line = __LINE__ + 1;
  const std::string m = message_of([] { TG_CUDA_CHECK(cudaSetDevice(9999)); });
  CHECK(contains(m, "cuda_support_test.cpp:" + std::to_string(line)));
  CHECK(contains(m, "cudaSetDevice(9999)"));
  CHECK(contains(m, "cudaErrorInvalidDevice"));
  CHECK(contains(m, "on device"));

  const std::string b = message_of([] { TG_CUBLAS_CHECK(cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, nullptr,
                                                                    nullptr, 1, nullptr, 1, nullptr, nullptr, 1)); });
  CHECK(contains(b, "cublasSgemm"));
  CHECK(contains(b, "CUBLAS_STATUS_"));

  const std::string d = message_of([] { TG_CU_CHECK(CUDA_ERROR_INVALID_VALUE); });
  CHECK(contains(d, "CUDA_ERROR_INVALID_VALUE"));
  CHECK(contains(d, "cuda_support_test.cpp:"));

  // A failed call leaves no error behind for the next launch check.
  CHECK_NOTHROW(TG_LAUNCH_CHECK());
}

TEST_CASE("cuda RAII types move and release") {
  TG_REQUIRE_GPU();
  auto a = cuda::DeviceBuffer::allocate(4096);
  void* p = a.get();
  REQUIRE(p != nullptr);
  cuda::DeviceBuffer b = std::move(a);
  CHECK(!a);
  CHECK(a.get() == nullptr);
  CHECK(b.get() == p);
  CHECK(b.bytes() == 4096);
  cuda::DeviceBuffer c;
  c = std::move(b);
  CHECK(c.get() == p);
  CHECK(!b);
  c.reset();
  CHECK(!c);

  auto pin = cuda::PinnedBuffer::allocate(64);
  cuda::PinnedBuffer pin2 = std::move(pin);
  CHECK(!pin);
  CHECK(pin2.get() != nullptr);

  auto s = cuda::Stream::create();
  cudaStream_t raw = s.get();
  cuda::Stream s2 = std::move(s);
  CHECK(!s);
  CHECK(s2.get() == raw);

  auto e0 = cuda::Event::create(), e1 = cuda::Event::create();
  e0.record(s2.get());
  e1.record(s2.get());
  e1.synchronize();
  CHECK(e1.elapsed_ms_since(e0) >= 0.0f);
  cuda::Event e2 = std::move(e1);
  CHECK(!e1);

  auto h = cuda::CublasHandle::create();
  cuda::CublasHandle h2 = std::move(h);
  CHECK(!h);
  CHECK(h2);
}

TEST_CASE("cuda backend: name, copies, OOM message, bad device") {
  TG_REQUIRE_GPU();
  CudaBackend& b = backend();
  CHECK(b.name().find("cuda:0") == 0);
  CHECK(b.kind() == DeviceKind::cuda);
  std::vector<float> h = random_vector(1025, 5), back(1025, 0.0f);
  void* d = b.raw_alloc(h.size() * sizeof(float));
  void* d2 = b.raw_alloc(h.size() * sizeof(float));
  b.copy_to_device(d, h.data(), h.size() * sizeof(float));
  b.copy_on_device(d2, d, h.size() * sizeof(float));
  b.copy_to_host(back.data(), d2, h.size() * sizeof(float));
  CHECK(compare("round trip", back, h, Tol{0, 0}) == 0);
  b.raw_free(d);
  b.raw_free(d2);

  const std::string m = message_of([&] { b.raw_alloc(size_t{1} << 52); });
  CHECK(contains(m, "free"));
  CHECK(contains(m, "MiB"));
  CHECK_THROWS_AS(make_cuda_backend(9999), std::invalid_argument);
}

// Copies of 1 MiB or more go through the backend's pinned staging in 8 MiB chunks
// (staged_copies, on by default): every byte arrives, whatever the size's remainder, at an
// offset that is not a chunk's, both ways, and the same as a cudaMemcpy's (staged_copies=0).
TEST_CASE("cuda backend: staged copies move every byte, around the chunk boundaries, both ways") {
  TG_REQUIRE_GPU();
  constexpr size_t kChunk = size_t{8} << 20;
  for (bool staged : {true, false}) {
    CAPTURE(staged);
    CudaBackendOptions o;
    o.staged_copies = staged;
    CudaBackend& b = backend(o);
    for (size_t bytes : {(size_t{1} << 20) - 4, size_t{1} << 20, kChunk - 4, kChunk, kChunk + 4, 2 * kChunk,
                         3 * kChunk + 1028}) {
      CAPTURE(bytes);
      const size_t n = bytes / sizeof(float);
      std::vector<float> h = random_vector(static_cast<int64_t>(n) + 1, static_cast<uint64_t>(bytes));
      std::vector<float> back(n + 1, -1.0f);
      char* d = static_cast<char*>(b.raw_alloc(bytes + 256));
      b.copy_to_device(d + 4, h.data() + 1, n * sizeof(float));  // offsets off the chunks' alignment
      b.copy_to_host(back.data() + 1, d + 4, n * sizeof(float));
      b.raw_free(d);
      CHECK(back[0] == -1.0f);  // nothing written before the destination
      std::vector<float> want(h.begin() + 1, h.end()), got(back.begin() + 1, back.end());
      CHECK(compare("staged round trip", got, want, Tol{0, 0}) == 0);
    }
  }
}

TEST_CASE("cuda resolve_device") {
  TG_REQUIRE_GPU();
  CHECK(resolve_device("cpu") == -1);
  const int a = resolve_device("auto");
  CHECK(a >= 0);
  CHECK(resolve_device("0") == 0);
  for (const char* bad : {"999", "-1", "gpu0", "", "1x", "cuda:0"}) {
    try {
      resolve_device(bad);
      FAIL("resolve_device(\"" << bad << "\") did not throw");
    } catch (const std::invalid_argument& e) {
      CHECK(contains(e.what(), "valid choices are cpu, auto"));
    }
  }
  const auto gpus = list_gpus();
  REQUIRE(!gpus.empty());
  CHECK(gpus[0].sm_count > 0);
  CHECK(gpus[0].total_bytes > 0);
  CHECK(!gpus[0].name.empty());
  std::printf("gpu 0: %s, %d SMs, cc %d.%d, PCIe gen %d x%d, bus %s\n", gpus[0].name.c_str(), gpus[0].sm_count,
              gpus[0].cc_major, gpus[0].cc_minor, gpus[0].pcie_gen, gpus[0].pcie_width, gpus[0].pci_bus_id.c_str());
  const SoftwareInfo sw = software_info();
  CHECK(sw.cuda_runtime_version >= 13000);
  CHECK(sw.cuda_driver_version > 0);
  CHECK(sw.cublas_version > 0);
}

TEST_CASE("cuda kernels capture into a CUDA Graph and replay bitwise equal") {
  TG_REQUIRE_GPU();
  CudaBackend& b = backend();
  const int64_t m = 96, k = 200, n = 130;
  std::vector<float> ha = random_vector(m * k, 1), hb = random_vector(k * n, 2);
  auto a = cuda::DeviceBuffer::allocate(ha.size() * 4), w = cuda::DeviceBuffer::allocate(hb.size() * 4);
  auto c = cuda::DeviceBuffer::allocate(static_cast<size_t>(m * n) * 4), y = cuda::DeviceBuffer::allocate(static_cast<size_t>(m * n) * 4);
  auto g = cuda::DeviceBuffer::allocate(static_cast<size_t>(n) * 4);
  b.copy_to_device(a.get(), ha.data(), ha.size() * 4);
  b.copy_to_device(w.get(), hb.data(), hb.size() * 4);
  Attrs at;
  kernels::OpCall mm{OpKind::matmul, &at, {{{a.as<float>(), Shape{m, k}}, {w.as<float>(), Shape{k, n}}, {}}}, 2,
                     {c.as<float>(), Shape{m, n}}};
  kernels::OpCall sm{OpKind::softmax, &at, {{{c.as<float>(), Shape{m, n}}, {}, {}}}, 1, {y.as<float>(), Shape{m, n}}};
  kernels::OpCall lg{OpKind::layernorm_grad_gamma, &at, {{{y.as<float>(), Shape{m, n}}, {c.as<float>(), Shape{m, n}}, {}}},
                     2, {g.as<float>(), Shape{n}}};
  auto run_all = [&] {
    b.run(mm);
    b.run(sm);
    b.run(lg);
  };
  run_all();
  b.synchronize();
  std::vector<float> eager(static_cast<size_t>(n)), replay(static_cast<size_t>(n));
  b.copy_to_host(eager.data(), g.get(), eager.size() * 4);
  TG_CUDA_CHECK(cudaMemsetAsync(g.get(), 0xFF, g.bytes(), b.stream()));

  TG_CUDA_CHECK(cudaStreamBeginCapture(b.stream(), cudaStreamCaptureModeThreadLocal));
  run_all();
  cudaGraph_t raw = nullptr;
  TG_CUDA_CHECK(cudaStreamEndCapture(b.stream(), &raw));
  cuda::CudaGraph graph(raw);
  auto exec = cuda::GraphExec::instantiate(graph);
  exec.launch(b.stream());
  b.synchronize();
  b.copy_to_host(replay.data(), g.get(), replay.size() * 4);
  CHECK(compare("graph replay vs eager", replay, eager, Tol{0, 0}) == 0);
}

}  // namespace tg::testing
