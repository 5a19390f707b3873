#!/usr/bin/env python3
"""Writes the ONNX model of tests/scale/scale_test.cpp (OnnxChain) to a file, for timing
`tg-graph import` by hand: blocks of 21 nodes, each MatMul, Relu, the tanh GELU formula
(8 nodes), MatMul, a residual Add and the LayerNorm formula (9 nodes), opset 17.

    python3 tests/scale/make_onnx_chain.py NODES FILE.onnx

Needs the onnx and numpy packages.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain(nodes):
    inits = [numpy_helper.from_array(np.array(v, np.float32), name) for name, v in
             [("three", 3.0), ("k", 0.044715), ("s2pi", 0.7978845608), ("one", 1.0), ("half", 0.5), ("two", 2.0),
              ("eps", 1e-5)]]
    inits += [numpy_helper.from_array(np.full((8, 8), 0.125, np.float32), "w"),
              numpy_helper.from_array(np.ones(8, np.float32), "gamma"),
              numpy_helper.from_array(np.zeros(8, np.float32), "beta")]
    out = []

    def node(op, ins, o, **attrs):
        out.append(helper.make_node(op, ins, [o], name="node_" + o, **attrs))

    cur, b = "x", 0
    while (b + 1) * 21 <= nodes:
        p = f"b{b}."
        node("MatMul", [cur, "w"], p + "mm")
        node("Relu", [p + "mm"], p + "relu")
        x = p + "relu"
        node("Pow", [x, "three"], p + "cube")
        node("Mul", [p + "cube", "k"], p + "mk")
        node("Add", [x, p + "mk"], p + "in")
        node("Mul", [p + "in", "s2pi"], p + "u")
        node("Tanh", [p + "u"], p + "t")
        node("Add", [p + "t", "one"], p + "onet")
        node("Mul", [x, "half"], p + "h")
        node("Mul", [p + "h", p + "onet"], p + "gelu")
        node("MatMul", [p + "gelu", "w"], p + "mm2")
        node("Add", [p + "mm2", cur], p + "res")
        r = p + "res"
        node("ReduceMean", [r], p + "mean", axes=[-1])
        node("Sub", [r, p + "mean"], p + "d")
        node("Pow", [p + "d", "two"], p + "sq")
        node("ReduceMean", [p + "sq"], p + "var", axes=[-1])
        node("Add", [p + "var", "eps"], p + "ve")
        node("Sqrt", [p + "ve"], p + "s")
        node("Div", [p + "d", p + "s"], p + "n")
        node("Mul", [p + "n", "gamma"], p + "ng")
        node("Add", [p + "ng", "beta"], p + "ln")
        cur, b = p + "ln", b + 1
    graph = helper.make_graph(out, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_onnx_chain")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    onnx.save(chain(int(sys.argv[1])), sys.argv[2])
