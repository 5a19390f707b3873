#include "trace/cupti.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "trace/recorder.h"

namespace tg::trace {

namespace {

// Driver API records too: libraries such as cuBLAS launch some kernels with cuLaunchKernelEx,
// not through the runtime, and only the driver call carries those kernels' correlation id.
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER};
constexpr size_t kBufferBytes = size_t{8} << 20;

std::string cupti_problem(CUptiResult r, const char* call) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
  return fmt::format("{} failed: {}", call, text);
}
#define TG_CUPTI_TRY(call)                                                 \
  do {                                                                     \
    if (const CUptiResult r_ = (call); r_ != CUPTI_SUCCESS)                \
      return cupti_problem(r_, #call);                                     \
  } while (0)

struct ApiCall {
  int64_t lane, start;
};

// What the buffers delivered, until stop_gpu_activity pairs launches with their work.
struct Collected {
  std::mutex m;
  std::vector<Event> device;  // value1 holds the correlation id
  std::unordered_map<uint32_t, ApiCall> calls;
  std::vector<Event> api;
  // Driver calls by correlation id; one becomes a span only when it launched work that no
  // runtime call did (most driver calls run inside a runtime call already on the lane).
  std::unordered_map<uint32_t, Event> driver;
  std::set<std::pair<int, int64_t>> lanes;  // (device, stream) seen
  size_t dropped = 0;
};
Collected* g = nullptr;
bool g_started = false, g_registered = false;
// Nanoseconds added to CUPTI's timestamps: 0 when CUPTI takes them from now_ns() (the
// timestamp callback); else the offset between the two clocks, read once at the start.
int64_t g_offset = 0;

uint64_t CUPTIAPI timestamp() { return static_cast<uint64_t>(now_ns()); }

// "void ns::(anonymous namespace)::relu_kernel<float>(float const*, float*, long)" -> "relu_kernel<float>".
std::string short_kernel_name(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string s = status == 0 && d ? d.get() : mangled;
  int depth = 0;
  size_t cut = s.size(), last_scope = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0 && c == '(' && s.compare(i, 20, "(anonymous namespace") != 0) {
      cut = i;
      break;
    } else if (depth == 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      last_scope = i + 2;
    } else if (depth == 0 && c == ' ') {
      last_scope = i + 1;  // past a return type
    }
  }
  return s.substr(last_scope, cut - last_scope);
}

const char* api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
    return domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuda driver call" : "cuda runtime call";
  std::string s = name;
  if (const size_t v = s.rfind("_v"); v != std::string::npos && v + 2 < s.size() &&
                                      s.find_first_not_of("0123456789", v + 2) == std::string::npos)
    s.resize(v);
  return intern(s);
}

const char* copy_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

Event device_event(const char* name, const char* cat, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                   uint32_t correlation) {
  Event e;
  e.ph = 'X';
  e.name = name;
  e.cat = cat;
  e.ts_ns = static_cast<int64_t>(start) + g_offset;
  e.dur_ns = static_cast<int64_t>(end - start);
  e.pid = kDevicePidBase + static_cast<int>(device);
  e.tid = stream;
  e.key1 = "correlation";
  e.value1 = correlation;
  return e;
}

// A copy or a memset: a span on its stream with its bytes.
template <typename Record>
void take_bytes(const char* name, const char* cat, const Record& m, Collected& c) {
  Event e = device_event(name, cat, m.start, m.end, m.deviceId, m.streamId, m.correlationId);
  e.key2 = "bytes";
  e.value2 = static_cast<int64_t>(m.bytes);
  c.device.push_back(e);
  c.lanes.insert({static_cast<int>(m.deviceId), m.streamId});
}

void take(const CUpti_Activity* rec, Collected& c) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      Event e = device_event(intern(short_kernel_name(k->name)), "kernel", k->start, k->end, k->deviceId, k->streamId,
                             k->correlationId);
      e.key2 = "grid_x";
      e.value2 = k->gridX;
      c.device.push_back(e);
      c.lanes.insert({static_cast<int>(k->deviceId), k->streamId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      take_bytes(copy_name(m->copyKind), "memcpy", *m, c);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
      take_bytes("memset", "memset", *reinterpret_cast<const CUpti_ActivityMemset4*>(rec), c);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      if (a->start == 0 && a->end == 0) break;  // CUPTI could not time it
      const bool driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      int64_t lane = host_lane_of(a->threadId);
      if (lane < 0) lane = 1000 + a->threadId % 1000;  // a thread that recorded no span of its own
      Event e;
      e.ph = 'X';
      e.name = api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid);
      e.cat = "cuda_api";
      e.ts_ns = static_cast<int64_t>(a->start) + g_offset;
      e.dur_ns = static_cast<int64_t>(a->end - a->start);
      e.pid = kHostPid;
      e.tid = lane;
      e.key1 = "correlation";
      e.value1 = a->correlationId;
      if (driver) {
        c.driver[a->correlationId] = e;
        break;
      }
      c.api.push_back(e);
      c.calls[a->correlationId] = {lane, e.ts_ns};
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (g && buffer) {
    std::lock_guard<std::mutex> lock(g->m);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) take(rec, *g);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) g->dropped += dropped;
  }
  std::free(buffer);
}

void set_kinds(bool on) {
  for (CUpti_ActivityKind k : kKinds) {
    // A refusal here loses GPU spans of the window only; the trace says how many it holds.
    if (on) (void)cuptiActivityEnable(k);
    else (void)cuptiActivityDisable(k);
  }
}

}  // namespace

std::string start_gpu_activity(int device, const std::string& device_name) {
  if (g_started) return "";
  if (!g) g = new Collected;  // never freed: CUPTI's thread may deliver a buffer late
  if (!g_registered) {
    // Registered once, before any kind is enabled, as CUPTI asks. Where it refuses the
    // callback, its own clock is mapped onto now_ns() by one offset instead.
    if (cuptiActivityRegisterTimestampCallback(timestamp) != CUPTI_SUCCESS) {
      uint64_t cupti_now = 0;
      TG_CUPTI_TRY(cuptiGetTimestamp(&cupti_now));
      g_offset = now_ns() - static_cast<int64_t>(cupti_now);
    }
    TG_CUPTI_TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    g_registered = true;
  }
  for (CUpti_ActivityKind k : kKinds) TG_CUPTI_TRY(cuptiActivityEnable(k));
  g_started = true;
  name_process(kDevicePidBase + device, fmt::format("GPU {} ({})", device, device_name), 1 + device);
  set_recording_hook([](bool on) { set_kinds(on); });
  return "";
}

size_t stop_gpu_activity() {
  if (!g_started) return 0;
  g_started = false;
  set_recording_hook({});
  (void)cudaDeviceSynchronize();  // a sticky error here was reported by the run already
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  set_kinds(false);
  std::vector<Event> out;
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(g->m);
    dropped = g->dropped;
    g->dropped = 0;
    out.swap(g->api);
    int64_t flow = 0;
    for (Event& e : g->device) {
      const auto id = static_cast<uint32_t>(e.value1);
      auto it = g->calls.find(id);
      if (it == g->calls.end()) {
        if (const auto d = g->driver.find(id); d != g->driver.end()) {
          out.push_back(d->second);
          it = g->calls.emplace(id, ApiCall{d->second.tid, d->second.ts_ns}).first;
          g->driver.erase(d);
        }
      }
      if (it != g->calls.end()) {
        Event s;
        s.ph = 's';
        s.name = "launch";
        s.cat = "launch";
        s.ts_ns = it->second.start;
        s.pid = kHostPid;
        s.tid = it->second.lane;
        s.id = ++flow;
        Event f = s;
        f.ph = 'f';
        f.ts_ns = e.ts_ns;
        f.pid = e.pid;
        f.tid = e.tid;
        out.push_back(s);
        out.push_back(f);
      }
      out.push_back(e);
    }
    for (const auto& [dev, stream] : g->lanes) name_lane(kDevicePidBase + dev, stream, fmt::format("stream {}", stream));
    for (const auto& [id, call] : g->calls)
      if (call.lane >= 1000) name_lane(kHostPid, call.lane, "CUDA calls of another thread");
    g->device.clear();
    g->calls.clear();
    g->driver.clear();
    g->lanes.clear();
  }
  add_device_events(std::move(out));
  return dropped;
}

}  // namespace tg::trace
