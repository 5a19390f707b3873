#include "experiments/memory/vgg_layers.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace tg::memory {

namespace {

constexpr int64_t kF32 = 4;

// "s0.conv1.w" -> "s0.conv1"
std::string layer_of_parameter(const std::string& name) { return name.substr(0, name.rfind('.')); }

}  // namespace

int64_t layer_quantity(const LayerBytes& l, const std::string& quantity) {
  if (quantity == "parameters") return l.parameters;
  if (quantity == "gradients") return l.gradients;
  if (quantity == "momentum") return l.momentum;
  if (quantity == "output") return l.output;
  if (quantity == "forward") return l.forward;
  if (quantity == "saved") return l.saved;
  throw std::logic_error("layer_quantity: no quantity " + quantity);
}

std::vector<LayerBytes> predict_vgg_layers(const VggConfig& c, bool training, bool momentum) {
  const int64_t B = c.batch;
  std::vector<LayerBytes> out;
  auto with_params = [&](LayerBytes l, int64_t elements) {
    l.parameters = kF32 * elements;
    l.gradients = training ? l.parameters : 0;
    l.momentum = training && momentum ? l.parameters : 0;
    return l;
  };
  // A ReLU's own buffer: none in place.
  const int64_t relu_maps = c.in_place_relu ? 0 : 1;
  LayerBytes input{"input", "input"};
  input.output = kF32 * B * 3 * c.image * c.image;
  out.push_back(input);
  int64_t C = 3, H = c.image;
  for (size_t s = 0; s < c.stages.size(); ++s) {
    const int64_t K = c.width << std::min<size_t>(s, 3);
    const std::string stage = "s" + std::to_string(s);
    for (int k = 0; k < c.stages[s]; ++k) {
      const int64_t S = B * K * H * H;
      LayerBytes l = with_params({stage + ".conv" + std::to_string(k), "conv"}, K * C * 9 + K);
      l.output = kF32 * S;
      // conv2d, the bias broadcast to [K,H], [K,H,H] and [B,K,H,H], the add, the ReLU.
      l.forward = kF32 * ((3 + relu_maps) * S + K * H + K * H * H);
      l.saved = training ? kF32 * S : 0;
      out.push_back(l);
      C = K;
    }
    H /= 2;
    LayerBytes pool{stage + ".pool", "pool"};
    pool.output = pool.forward = kF32 * B * C * H * H;
    pool.saved = training ? pool.output : 0;
    out.push_back(pool);
  }
  int64_t in = C * H * H;
  const std::vector<std::pair<std::string, int64_t>> linears{{"fc0", c.fc}, {"fc1", c.fc}, {"head", c.classes}};
  for (const auto& [name, n] : linears) {
    const bool head = name == "head";
    LayerBytes l = with_params({name, "fc"}, in * n + n);
    l.output = kF32 * B * n;
    // matmul and bias_add (the head's: the logits), the ReLU.
    l.forward = kF32 * B * n * (head ? 2 : 2 + relu_maps);
    l.saved = training && !head ? l.output : 0;
    out.push_back(l);
    in = n;
  }
  return out;
}

std::vector<LayerBytes> measure_vgg_layers(const Graph& g, const MemoryPlan& p) {
  std::vector<LayerBytes> out;
  std::map<std::string, size_t> index;
  auto row = [&](const std::string& layer, const char* kind) -> LayerBytes& {
    auto [it, fresh] = index.emplace(layer, out.size());
    if (fresh) out.push_back({layer, kind});
    return out[it->second];
  };
  auto bytes = [&](int v) { return g.values[static_cast<size_t>(v)].bytes(); };
  for (const ValueInfo& vi : g.values)
    if (vi.role == Role::input && vi.name == "x") row("input", "input").output = vi.bytes();

  // The forward: which layer made each value, and each layer's last output.
  std::vector<std::string> made_by(g.values.size());
  std::string layer;
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::cross_entropy) break;  // the loss: the forward is over
    const char* kind = nullptr;
    for (int in : n.inputs) {
      const ValueInfo& vi = g.values[static_cast<size_t>(in)];
      if (vi.role != Role::parameter) continue;
      layer = layer_of_parameter(vi.name);
      kind = vi.shape.rank == 4 ? "conv" : "fc";
    }
    if (n.op == OpKind::max_pool2d) {
      layer = layer.substr(0, layer.find('.')) + ".pool";
      kind = "pool";
    }
    if (layer.empty()) throw std::runtime_error("measure_vgg_layers: node '" + n.name + "' comes before any layer");
    LayerBytes& l = kind ? row(layer, kind) : out[index.at(layer)];
    for (int o : n.outputs) made_by[static_cast<size_t>(o)] = layer;
    if (!n.outputs.empty()) l.output = bytes(n.outputs[0]);
  }
  // Buffers: storage roots made in the layer; saved when any value in them is an activation.
  std::map<int, bool> saved_root;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (made_by[v].empty()) continue;
    const int r = p.storage[v];
    if (made_by[static_cast<size_t>(r)] != made_by[v]) continue;  // a view of another layer's value
    saved_root[r] = saved_root[r] || g.values[v].role == Role::activation;
  }
  for (const auto& [r, saved] : saved_root) {
    LayerBytes& l = out[index.at(made_by[static_cast<size_t>(r)])];
    l.forward += bytes(r);
    if (saved) l.saved += bytes(r);
  }
  // Parameters by name, their gradients through the updates, momentum by name.
  for (const ValueInfo& vi : g.values) {
    if (vi.role != Role::parameter && vi.role != Role::optimizer_state) continue;
    const std::string base = vi.role == Role::parameter ? vi.name : vi.name.substr(0, vi.name.rfind('.'));
    const auto it = index.find(layer_of_parameter(base));
    if (it == index.end()) continue;
    (vi.role == Role::parameter ? out[it->second].parameters : out[it->second].momentum) += vi.bytes();
  }
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::sgd && n.op != OpKind::sgd_momentum) continue;
    const ValueInfo& param = g.values[static_cast<size_t>(n.inputs[0])];
    const auto it = index.find(layer_of_parameter(param.name));
    if (it != index.end()) out[it->second].gradients += bytes(n.inputs[1]);
  }
  return out;
}

}  // namespace tg::memory
