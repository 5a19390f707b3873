#!/usr/bin/env python3
"""Writes the ONNX models of tests/bad/external_data/external_data_test.sh: one MatMul whose
3 x 4 float weight lives in an external data file, at a location each model names
differently. The data files themselves are made by the test, beside a copy of the model.

    python3 tests/bad/external_data/make_models.py   # needs the onnx package (pip install onnx)
"""
import pathlib

import onnx
from onnx import TensorProto, helper

HERE = pathlib.Path(__file__).resolve().parent

# (file, location, offset): where the 48 bytes of the weight are said to be.
MODELS = [
    ("beside.onnx", "weights.bin", 0),
    ("in_folder.onnx", "data/w.bin", 0),
    ("at_offset.onnx", "weights.bin", 4096),
]

for name, location, offset in MODELS:
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([3, 4])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", "48")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], initializer=[w])
    model = helper.make_model(graph, producer_name="make_models.py", opset_imports=[helper.make_opsetid("", 17)])
    (HERE / name).write_bytes(model.SerializeToString())
