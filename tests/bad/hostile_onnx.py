#!/usr/bin/env python3
"""ONNX models whose names are hostile text, for tests/bad/hostile_text_test.sh.

    hostile_onnx.py DIR          writes the two small committed models into DIR:
      hostile_names.onnx    valid: a Gemm whose weight is stored transposed (the import
                            prints a note naming it) and a Relu; the node, value and
                            initializer names hold ANSI escapes and a line break that
                            starts a forged line
      hostile_utf8.onnx     the same with names that are not UTF-8: refused (a graph
                            file is JSON, which holds UTF-8 only)
      hostile_refused.onnx  a Hardmax (not in the IR) with a name holding all three: refused
      symbolic_dims.onnx    plain names, an input of dims [batch, 4]: for --dim's checks
    hostile_onnx.py --huge FILE  writes a refused model whose node name is 10 MB (made
                            at test time: it is too big to commit)

Needs the onnx Python package. Invalid UTF-8 cannot go through onnx's Python API
(protobuf strings are str), so a placeholder of the same length is written and its
bytes are swapped in the serialized model: no length prefix changes.
"""
import sys

import onnx
from onnx import TensorProto, helper

# Each payload must begin no line of the tool's output: the test greps for ^FORGED.
ANSI = "\x1b[31mred\x1b[0m\x1b[2J"
FORGED = "\nFORGED: import ok"
PLACEHOLDER = b"INVALIDUTF8"
INVALID = b"bad\xff\xfe\xc0\x80utf8"
assert len(PLACEHOLDER) == len(INVALID)


def save(model, path):
    data = model.SerializeToString()
    data = data.replace(PLACEHOLDER, INVALID)
    with open(path, "wb") as f:
        f.write(data)


def model_of(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, "hostile", inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="hostile_onnx.py")
    m.ir_version = 8
    return m


def names_model(bad=""):
    x = helper.make_tensor_value_info("x" + ANSI, TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y" + FORGED, TensorProto.FLOAT, [2, 3])
    w = helper.make_tensor("w" + FORGED + ANSI, TensorProto.FLOAT, [3, 4], [0.25 * i for i in range(12)])
    gemm = helper.make_node("Gemm", ["x" + ANSI, w.name], ["h" + FORGED + bad], name="gemm" + ANSI + FORGED, transB=1)
    relu = helper.make_node("Relu", [gemm.output[0]], [y.name], name="relu" + bad)
    return model_of([gemm, relu], [x], [y], [w])


def refused_model(name):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])
    hardmax = helper.make_node("Hardmax", ["x"], ["y"], name=name)
    return model_of([hardmax], [x], [y], [])


def symbolic_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    return model_of([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y], [])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--huge":
        save(refused_model(FORGED + ANSI + "A" * 10_000_000), sys.argv[2])
    elif len(sys.argv) == 2:
        save(names_model(), f"{sys.argv[1]}/hostile_names.onnx")
        save(names_model(PLACEHOLDER.decode()), f"{sys.argv[1]}/hostile_utf8.onnx")
        save(refused_model("conv" + FORGED + ANSI + PLACEHOLDER.decode()), f"{sys.argv[1]}/hostile_refused.onnx")
        save(symbolic_model(), f"{sys.argv[1]}/symbolic_dims.onnx")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
