#include "graph/fixed_data.h"

#include <fmt/format.h>

#include <cmath>

#include "graph/quote.h"

namespace tg {

namespace {

// What a value holds when the graph alone decides it.
struct Fixed {
  enum class Kind { unknown, constant, random } kind = Kind::unknown;
  float value = 0.0f;  // constant: every element
  std::string source;  // "fill 'l' (value 7)", for the message
};

// Ops whose output holds only values of input 0, moved or repeated but not changed.
bool keeps_values(OpKind op) {
  return op == OpKind::copy || op == OpKind::reshape || op == OpKind::transpose || op == OpKind::broadcast;
}

Fixed fixed_content(const Graph& g, int id) {
  // Each step goes to an earlier node (the graph has no cycle), so nodes.size() + 1 bound it.
  for (size_t step = 0; step <= g.nodes.size(); ++step) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    if (v.producer < 0) {
      if (v.role != Role::parameter && v.role != Role::optimizer_state) return {};  // fed at run time
      if (v.init.kind == ParamInit::Kind::constant)
        return {Fixed::Kind::constant, v.init.a, fmt::format("{} {} (init constant {})", role_name(v.role), quote_name(v.name), v.init.a)};
      return {Fixed::Kind::random, 0.0f, fmt::format("{} {} (init uniform {})", role_name(v.role), quote_name(v.name), v.init.a)};
    }
    const Node& n = g.nodes[static_cast<size_t>(v.producer)];
    if (n.op == OpKind::fill)
      return {Fixed::Kind::constant, n.attrs.value, fmt::format("fill {} (value {})", quote_name(n.name), n.attrs.value)};
    if (!keeps_values(n.op) || n.inputs.empty()) return {};
    id = n.inputs[0];
  }
  return {};
}

bool whole(float v) { return std::isfinite(v) && v == std::floor(v); }

void check_labels(const Graph& g, const Node& n, std::vector<std::string>& errs) {
  const ValueInfo& logits = g.values[static_cast<size_t>(n.inputs[0])];
  const ValueInfo& labels = g.values[static_cast<size_t>(n.inputs[1])];
  const Fixed f = fixed_content(g, n.inputs[1]);
  const int64_t classes = cross_entropy_classes(n.attrs, logits.shape[1]);
  const std::string domain =
      fmt::format("labels must be class indices, whole numbers in [0, {}) (the {} of logits {} {})", classes,
                  n.attrs.size > 0 ? "classes, attrs.size," : "columns", quote_name(logits.name), logits.shape.str());
  if (f.kind == Fixed::Kind::random)
    errs.push_back(fmt::format("{} {}: labels {} come from {}, whose values are random numbers; {}: declare the labels "
                               "under \"inputs\" (fed at run time), or give them a constant class index",
                               op_name(n.op), quote_name(n.name), quote_name(labels.name), f.source, domain));
  else if (f.kind == Fixed::Kind::constant &&
           !(whole(f.value) && f.value >= 0.0f && static_cast<double>(f.value) < static_cast<double>(classes)))
    errs.push_back(fmt::format("{} {}: labels {} are all {}, from {}; {}: use a class index, or feed the labels as "
                               "an input", op_name(n.op), quote_name(n.name), quote_name(labels.name), f.value, f.source, domain));
}

void check_count(const Graph& g, const Node& n, std::vector<std::string>& errs) {
  const ValueInfo& pred = g.values[static_cast<size_t>(n.inputs[0])];
  const ValueInfo& count = g.values[static_cast<size_t>(n.inputs[2])];
  const Fixed f = fixed_content(g, n.inputs[2]);
  const int64_t numel = pred.shape.numel();
  const std::string domain = fmt::format(
      "the count must be the number of real (unpadded) elements, a whole number in [1, {}] (the elements of pred "
      "{} {})", numel, quote_name(pred.name), pred.shape.str());
  if (f.kind == Fixed::Kind::random)
    errs.push_back(fmt::format("{} {}: count {} comes from {}, whose values are random numbers; {}: declare the count "
                               "under \"inputs\" (fed at run time), or fill it with the count",
                               op_name(n.op), quote_name(n.name), quote_name(count.name), f.source, domain));
  else if (f.kind == Fixed::Kind::constant &&
           !(whole(f.value) && f.value >= 1.0f && static_cast<double>(f.value) <= static_cast<double>(numel)))
    errs.push_back(fmt::format("{} {}: count {} is {}, from {}; {}: fix the value, or feed the count as an input",
                               op_name(n.op), quote_name(n.name), quote_name(count.name), f.value, f.source, domain));
}

}  // namespace

void fixed_data_errors(const Graph& g, std::vector<std::string>& errs) {
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::cross_entropy || n.op == OpKind::cross_entropy_grad) check_labels(g, n, errs);
    else if (n.op == OpKind::padded_mse_loss || n.op == OpKind::padded_mse_loss_grad) check_count(g, n, errs);
  }
}

}  // namespace tg
