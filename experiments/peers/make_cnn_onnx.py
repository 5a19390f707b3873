#!/usr/bin/env python3
"""Makes the convolutional ONNX fixtures under tests/onnx: small models written with
onnx.helper in the shapes torchvision's exports take (Conv, BatchNormalization, Relu,
MaxPool, residual Add, GlobalAveragePool, Flatten, Gemm), random weights, onnxruntime's
outputs for fixed inputs, and (with --tg-graph) the graph files tg-graph import makes.

    python3 experiments/peers/make_cnn_onnx.py --tg-graph build/default/tools/tg-graph/tg-graph

Needs onnx and onnxruntime (pip install onnx onnxruntime), not torch; the tests that read
the files need none of them.

Models (batch 2, 3 x 16 x 16 images, channel counts of 4 to 8):
  cnn_resnet  a stem (Conv 3x3 without bias, BatchNormalization, Relu, MaxPool 3x3 stride 2
              pad 1), a basic block with an identity shortcut, a downsampling block with a
              1x1 stride-2 Conv + BatchNormalization shortcut, GlobalAveragePool, Flatten and
              a Linear head (Gemm, transB = 1): torchvision's ResNet, small
  cnn_vgg     Conv 3x3 with bias + Relu, MaxPool 2x2, a grouped dilated Conv, AveragePool
              3x3 stride 2 pad 1 with ceil_mode (padding not counted) beside a MaxPool with
              ceil_mode, Concat along channels, Flatten, two Gemm with a Relu and a Dropout
              (inference) between: a VGG-style classifier with the pooling options
  cnn_conv1d  Conv1d with bias, SAME_UPPER padding and stride 2, AveragePool over length,
              Sum of two branches
  cnn_convt   ConvTranspose three ways: grouped with bias, stride 2, pads and output_padding;
              dilated with output_shape (pads derived, the odd one at the beginning); SAME_UPPER
              at stride 2 (the odd pad at the end); and a 1-D ConvTranspose
  cnn_lrn     LRN with windows of 5 and 3 (onnxruntime takes odd ones only; alpha, beta and bias off their defaults),
              Clip as ReLU6 (opset 11's inputs min 0, max 6) and Clip to [-1, 1.5]

  bad/hardmax one Hardmax node, an op the IR does not have: the refusal's fixture

Each <name>.io.safetensors holds the input "x" and onnxruntime's output as "out.y".
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_onnx_models import fixture_args, reference, save_safetensors  # noqa: E402

OPSET = 17


class Net:
    """A graph under construction: initializers of random values, nodes in order."""

    def __init__(self, rng):
        from onnx import helper

        self.h, self.rng, self.nodes, self.inits, self.k = helper, rng, [], [], 0

    def name(self, base):
        self.k += 1
        return f"{base}{self.k}"

    def init(self, base, shape, lo=-0.5, hi=0.5):
        from onnx import numpy_helper

        name = self.name(base)
        self.inits.append(numpy_helper.from_array(self.rng.uniform(lo, hi, shape).astype(np.float32), name))
        return name

    def ints(self, base, values):
        from onnx import numpy_helper

        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower() + "_")
        self.nodes.append(self.h.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, bias=False, group=1, **attrs):
        ins = [x, self.init("conv.w", (cout, cin // group) + k, -0.4, 0.4)]
        if bias:
            ins.append(self.init("conv.b", (cout,), -0.2, 0.2))
        return self.op("Conv", ins, kernel_shape=list(k), group=group, **attrs)

    def bn(self, x, c):
        # Running statistics far from 0 and 1, so that a mapping that ignores them shows.
        ins = [x, self.init("bn.gamma", (c,), 0.5, 1.5), self.init("bn.beta", (c,), -0.3, 0.3),
               self.init("bn.mean", (c,), -0.5, 0.5), self.init("bn.var", (c,), 0.5, 2.0)]
        return self.op("BatchNormalization", ins, epsilon=1e-5)

    def model(self, x_shape, y, y_shape):
        from onnx import TensorProto

        h = self.h
        graph = h.make_graph(self.nodes, "cnn", [h.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                             [h.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], producer_name="make_cnn_onnx.py")
        m.ir_version = 8
        return m


def resnet(rng):
    n = Net(rng)
    h = n.op("Relu", [n.bn(n.conv("x", 3, 4, (3, 3), pads=[1, 1, 1, 1]), 4)])
    h = n.op("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 8 x 8
    b = n.op("Relu", [n.bn(n.conv(h, 4, 4, (3, 3), pads=[1, 1, 1, 1]), 4)])
    b = n.bn(n.conv(b, 4, 4, (3, 3), pads=[1, 1, 1, 1]), 4)
    h = n.op("Relu", [n.op("Add", [b, h])])
    b = n.op("Relu", [n.bn(n.conv(h, 4, 8, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1]), 8)])  # 4 x 4
    b = n.bn(n.conv(b, 8, 8, (3, 3), pads=[1, 1, 1, 1]), 8)
    short = n.bn(n.conv(h, 4, 8, (1, 1), strides=[2, 2]), 8)
    h = n.op("Relu", [n.op("Add", [b, short])])
    h = n.op("Flatten", [n.op("GlobalAveragePool", [h])], axis=1)
    y = n.op("Gemm", [h, n.init("fc.w", (5, 8)), n.init("fc.b", (5,))], transB=1)
    n.nodes[-1].output[0] = "y"
    return n.model([2, 3, 16, 16], "y", [2, 5]), (2, 3, 16, 16)


def vgg(rng):
    n = Net(rng)
    h = n.op("Relu", [n.conv("x", 3, 4, (3, 3), bias=True, pads=[1, 1, 1, 1])])
    h = n.op("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])  # 8 x 8
    h = n.op("Relu", [n.conv(h, 4, 6, (3, 3), bias=True, group=2, dilations=[2, 2], pads=[2, 2, 2, 2])])
    a = n.op("AveragePool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
             count_include_pad=0)  # 4 x 4 (+ a partial window: 5 x 5)
    m = n.op("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    h = n.op("Concat", [a, m], axis=1)  # [2, 12, P, Q]
    h = n.op("Flatten", [h], axis=1)
    feat = 12 * 5 * 5  # ceil_mode: 8 -> 5 (a last window over the end padding and one column)
    h = n.op("Relu", [n.op("Gemm", [h, n.init("fc1.w", (16, feat), -0.1, 0.1), n.init("fc1.b", (16,))],
                           transB=1)])
    h = n.op("Dropout", [h])
    n.op("Gemm", [h, n.init("fc2.w", (5, 16)), n.init("fc2.b", (5,))], transB=1)
    n.nodes[-1].output[0] = "y"
    return n.model([2, 3, 16, 16], "y", [2, 5]), (2, 3, 16, 16)


def conv1d(rng):
    n = Net(rng)
    a = n.conv("x", 2, 4, (3,), bias=True, strides=[2], auto_pad="SAME_UPPER")  # [2, 4, 6]
    b = n.op("AveragePool", [n.conv("x", 2, 4, (1,))], kernel_shape=[2], strides=[2])  # [2, 4, 6]
    n.op("Sum", [a, b])
    n.nodes[-1].output[0] = "y"
    return n.model([2, 2, 12], "y", [2, 4, 6]), (2, 2, 12)


def convt(rng):
    n = Net(rng)

    def convt_op(x, cin, cout, k, group=1, bias=False, **attrs):
        ins = [x, n.init("convt.w", (cin, cout // group) + k, -0.4, 0.4)]
        if bias:
            ins.append(n.init("convt.b", (cout,), -0.2, 0.2))
        return n.op("ConvTranspose", ins, kernel_shape=list(k), group=group, **attrs)

    # [2, 4, 5, 5] -> [2, 6, 10, 10]: (5 - 1) 2 + 3 - 2 + 1
    h = n.op("Relu", [convt_op("x", 4, 6, (3, 3), group=2, bias=True, strides=[2, 2], pads=[1, 1, 1, 1],
                               output_padding=[1, 1])])
    # full extents 12 x 21; output_shape 11 x 20: one pad each, at the beginning
    h = convt_op(h, 6, 4, (2, 3), strides=[1, 2], dilations=[2, 1], output_shape=[11, 20])
    # SAME_UPPER: 2x the input, 22 x 40; total pad 1 each, at the end
    h = convt_op(h, 4, 3, (3, 3), strides=[2, 2], auto_pad="SAME_UPPER")
    # 1-D: [2, 3, 22 * 40] through a Reshape, then ConvTranspose over the length
    h = n.op("Reshape", [h, n.ints("shape", [2, 3, 22 * 40])])
    convt_op(h, 3, 2, (3,), bias=True, strides=[2], pads=[1, 0])
    n.nodes[-1].output[0] = "y"
    return n.model([2, 4, 5, 5], "y", [2, 2, 2 * 880]), (2, 4, 5, 5)


def lrn(rng):
    n = Net(rng)
    h = n.op("LRN", ["x"], size=5, alpha=0.5, beta=0.6, bias=1.5)
    h = n.conv(h, 6, 6, (3, 3), bias=True, pads=[1, 1, 1, 1])
    h = n.op("Mul", [h, n.init("gain", (1,), 8.0, 8.0)])  # past 6, so that ReLU6's top clips
    h = n.op("Clip", [h, n.init("zero", (), 0.0, 0.0), n.init("six", (), 6.0, 6.0)])
    h = n.op("LRN", [h], size=3, alpha=0.02, beta=0.75, bias=2.0)
    n.op("Clip", [n.op("Sub", [h, n.init("shift", (1,), 1.0, 1.0)]), n.init("lo", (), -1.0, -1.0),
                  n.init("hi", (), 1.5, 1.5)])
    n.nodes[-1].output[0] = "y"
    return n.model([2, 6, 4, 5], "y", [2, 6, 4, 5]), (2, 6, 4, 5)


def hardmax():
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Hardmax", ["x"], ["y"])], "hardmax",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3, 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_cnn_onnx.py")
    m.ir_version = 8
    return m


def main():
    args = fixture_args(__doc__)
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        sys.exit(f"make_cnn_onnx: needs onnx and onnxruntime ({e}); pip install onnx onnxruntime")
    rng = np.random.default_rng(33)
    meta = {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "made_by": "experiments/peers/make_cnn_onnx.py"}
    out = os.path.abspath(args.out)
    for name, make in [("cnn_resnet", resnet), ("cnn_vgg", vgg), ("cnn_conv1d", conv1d), ("cnn_convt", convt),
                       ("cnn_lrn", lrn)]:
        model, x_shape = make(rng)
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        x = rng.standard_normal(x_shape).astype(np.float32)
        y = reference(path, x)
        print(f"{name}: x {list(x.shape)} -> y {list(y.shape)}, {os.path.getsize(path)} bytes")
        save_safetensors(os.path.join(out, name + ".io.safetensors"), {"x": x, "out.y": y}, meta)
        if args.tg_graph:
            cmd = [args.tg_graph, "import", path, "-o", os.path.join(out, name + ".json")]
            print("+", " ".join(cmd))
            subprocess.run(cmd, check=True)
    onnx.save(hardmax(), os.path.join(out, "bad", "hardmax.onnx"))


if __name__ == "__main__":
    main()
