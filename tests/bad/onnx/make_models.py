#!/usr/bin/env python3
"""Writes the hostile ONNX models of tests/bad/onnx (cases.txt runs them through
`tg-graph import`, which must refuse each with exit 2, or accept the few marked so). Each is the smallest model
that shows one problem; `python3 tests/bad/onnx/make_models.py` rewrites them, and
the files are committed so that the tests need no Python.

Some of these pass onnx.checker.check_model (an opset that does not exist, an
opset imported twice, an inf epsilon, a double beyond f32): the importer checks
more than the checker does, since it must not write a graph file that
`tg-graph check` refuses, nor weights that are not what the model holds.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def vi(name, dims):
    return helper.make_tensor_value_info(name, F, dims)


def model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="tests/bad/onnx/make_models.py")
    m.ir_version = 8
    return m


def const(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def renamed(m, old, new):
    """The serialized model with the name `old` replaced by the bytes `new` (same
    length, so every protobuf length prefix still holds): protobuf's Python API
    refuses to set a string that is not UTF-8, the C++ parser reads it."""
    data = m.SerializeToString()
    assert len(old) == len(new) and data.count(old) >= 1
    return data.replace(old, new)


X, Y = vi("x", [2, 3]), vi("y", [2, 3])
RELU = [helper.make_node("Relu", ["x"], ["y"], name="relu")]


def cases():
    c = {}
    # Class 2: crashes. Nodes without the inputs or outputs their op has.
    c["tanh_no_input"] = model([helper.make_node("Tanh", [], ["y"], name="t")], [X], [Y])
    c["pow_one_input"] = model([helper.make_node("Pow", ["x"], ["y"], name="p")], [X], [Y])
    c["sqrt_no_output"] = model([helper.make_node("Sqrt", ["x"], [], name="s"), RELU[0]], [X], [Y])
    # Products of dims that wrap: 2^32 * 2^32 is 0 in int64.
    c["reshape_wraps"] = model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")], [X], [vi("y", None)],
        [const("shape", [1 << 32, 1 << 32, -1], np.int64)])
    # Class 3: models that are not valid.
    c["opset_99"] = model(RELU, [X], [Y], opsets=(("", 99),))
    c["opset_0"] = model(RELU, [X], [Y], opsets=(("", 0),))
    c["opset_twice"] = model(RELU, [X], [Y], opsets=(("", 17), ("ai.onnx", 13)))
    c["output_shadows_input"] = model([helper.make_node("Relu", ["x"], ["x"], name="r")], [X], [vi("x", [2, 3])])
    c["output_shadows_initializer"] = model(
        [helper.make_node("Relu", ["x"], ["w"], name="r"), helper.make_node("Add", ["x", "w"], ["y"], name="a")],
        [X], [Y], [const("w", np.zeros((2, 3)))])
    c["output_defined_twice"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="r1"), helper.make_node("Relu", ["x"], ["y"], name="r2")],
        [X], [Y])
    c["empty_output_name"] = model([helper.make_node("Relu", ["x"], [""], name="r"), RELU[0]], [X], [Y])
    c["empty_graph_input"] = model([helper.make_node("Relu", [""], ["y"], name="r")], [vi("", [2, 3])], [Y])
    c["gemm_transb_float"] = model(
        [helper.make_node("Gemm", ["x", "w"], ["y"], name="g", transB=1.0)], [X], [vi("y", [2, 4])],
        [const("w", np.ones((4, 3)))])
    c["layernorm_inf_epsilon"] = model(
        [helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln", epsilon=float("inf"))], [X], [Y],
        [const("s", np.ones(3))])
    c["mul_by_inf"] = model([helper.make_node("Mul", ["x", "k"], ["y"], name="m")], [X], [Y],
                            [const("k", [float("inf")])])
    c["double_beyond_f32"] = model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="a")], [X], [Y], [const("w", [1e300, 0.0, 0.0], np.float64)])
    # Class 4: limits. A 2^40 dim, and an Expand to 2^40 elements.
    c["input_dim_2p40"] = model(RELU, [vi("x", [1 << 40, 3])], [vi("y", [1 << 40, 3])])
    c["symbolic_batch"] = model(RELU, [vi("x", ["batch", 3])], [vi("y", ["batch", 3])])  # with a huge --dim
    c["expand_huge"] = model([helper.make_node("Expand", ["x", "shape"], ["y"], name="e")], [X], [vi("y", None)],
                             [const("shape", [1 << 20, 1 << 20, 2, 3], np.int64)])
    bad = model([helper.make_node("Relu", ["x"], ["NAME_XYZ"], name="r"),
                 helper.make_node("Relu", ["NAME_XYZ"], ["y"], name="r2")], [X], [Y])
    c["name_not_utf8"] = renamed(bad, b"NAME_XYZ", b"NAME\xff\xfeYZ")
    # Accepted (cases.txt's "accept" lines): what is odd but valid must still import,
    # and the graph file written must pass `tg-graph check`.
    prod = model(RELU, [X], [Y])
    prod.producer_name = "PRODUCER_XY"
    c["producer_not_utf8"] = renamed(prod, b"PRODUCER_XY", b"PRODUCER\xff\x1b[")
    c["optional_omitted"] = model(
        [helper.make_node("Gemm", ["x", "w", ""], ["g"], name="g", transB=1),
         helper.make_node("Dropout", ["g", "", ""], ["y", ""], name="d")],
        [X], [vi("y", [2, 4])], [const("w", np.ones((4, 3)))])
    return c


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    for name, m in sorted(cases().items()):
        data = m if isinstance(m, bytes) else m.SerializeToString()
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
    print(f"wrote {len(cases())} models to {out}")


if __name__ == "__main__":
    main()
