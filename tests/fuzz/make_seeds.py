#!/usr/bin/env python3
"""Writes the seed inputs of the ONNX-import and safetensors fuzzers (tests/fuzz/onnx_seeds,
tests/fuzz/weights_seeds): small valid files that reach the importer's mappings and the
reader's branches, so that mutations start from inputs that parse.

    python3 tests/fuzz/make_seeds.py   # needs the onnx package (pip install onnx)
"""
import json
import pathlib
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
rng = np.random.default_rng(0)


def init(name, *dims, dtype=np.float32):
    return numpy_helper.from_array(rng.standard_normal(dims).astype(dtype), name)


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, producer_name="make_seeds.py", opset_imports=[helper.make_opsetid("", opset)])
    (HERE / "onnx_seeds" / f"{name}.onnx").write_bytes(m.SerializeToString())


def vi(name, *dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


(HERE / "onnx_seeds").mkdir(exist_ok=True)
model("gemm_relu", [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])],
      [vi("x", 2, 4)], [vi("y", 2, 3)], [init("w", 3, 4), init("b", 3)])
model("layernorm_softmax", [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, epsilon=1e-5),
                            helper.make_node("Softmax", ["n"], ["y"], axis=-1)],
      [vi("x", 2, 3, 4)], [vi("y", 2, 3, 4)], [init("g", 4), init("b", 4)])
model("reshape_transpose", [helper.make_node("Reshape", ["x", "s"], ["r"]),
                            helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
                            helper.make_node("MatMul", ["t", "t2"], ["y"])],
      [vi("x", 2, 4, 6), vi("t2", 2, 2, 3, 4)], [vi("y", 2, 2, 4, 4)],
      [numpy_helper.from_array(np.array([2, 4, 2, 3], dtype=np.int64), "s")])
model("arith_fold", [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "i"], ["d"], axis=0),
                     helper.make_node("Cast", ["d"], ["df"], to=TensorProto.FLOAT),
                     helper.make_node("Sqrt", ["df"], ["sq"]), helper.make_node("Div", ["x", "sq"], ["q"]),
                     helper.make_node("Neg", ["q"], ["n"]), helper.make_node("Pow", ["n", "two"], ["p"]),
                     helper.make_node("ReduceMean", ["p"], ["y"], axes=[1], keepdims=1)],
      [vi("x", 2, 4)], [vi("y", 2, 1)],
      [numpy_helper.from_array(np.array(1, dtype=np.int64), "i"), numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")],
      opset=13)
model("gelu_tanh", [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], [vi("x", 3, 5)], [vi("y", 3, 5)], opset=20)


def safetensors(name, tensors, metadata=None):
    header, blobs, at = {}, [], 0
    for tname, arr in tensors.items():
        b = arr.astype("<f4").tobytes()
        header[tname] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    (HERE / "weights_seeds" / name).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


(HERE / "weights_seeds").mkdir(exist_ok=True)
safetensors("two.safetensors", {"a": rng.standard_normal((2, 3)), "b.c": rng.standard_normal(4)}, {"by": "seed"})
safetensors("scalar.safetensors", {"s": np.array(1.5)})
safetensors("rank4.safetensors", {"w": rng.standard_normal((1, 2, 2, 3))})
