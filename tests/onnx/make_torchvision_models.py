#!/usr/bin/env python3
"""Makes the torchvision ONNX fixtures under tests/onnx: ResNet-18, VGG-11 and MobileNetV2 as
torchvision builds them, with random weights and narrowed so that the committed files stay
small, exported by torch.onnx.export (its default exporter, weights inlined), onnxruntime's
outputs for a fixed input, and (with --tg-graph) the graph files tg-graph import makes.

    python tests/onnx/make_torchvision_models.py --tg-graph build/default/tools/tg-graph/tg-graph

Needs torch, torchvision, onnx, onnxruntime and onnxscript; the tests that read the files need
none of them.

Models (batch 1, 10 classes, eval mode: batch norm on running statistics, dropout off):
  tv_resnet18     torchvision.models.resnet.ResNet(BasicBlock, [2, 2, 2, 2]): ResNet-18's blocks,
                  strides and shortcuts, every width / 8 (stem 8, stages 8, 16, 32, 64), 64 x 64
                  images: Conv, BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool,
                  Flatten, Gemm
  tv_vgg11        torchvision.models.vgg.VGG over make_layers of VGG-11's configuration "A" with
                  every width / 8 (8 ... 64) and the classifier's 4096 as 64, 32 x 32 images:
                  the 1 x 1 feature map meets the adaptive average pool to 7 x 7
  tv_mobilenet_v2 torchvision.models.mobilenet_v2(width_mult=0.25), 32 x 32 images: depthwise
                  convolutions, ReLU6 (Clip), inverted residuals

Batch norm's running statistics are drawn away from 0 and 1 (a fresh model's are exactly
those), so that an import that ignored them would show.

Each <name>.io.safetensors holds the input "x" and onnxruntime's output as "out.y".
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "experiments", "peers"))
from export_onnx_models import export, inline_weights, reference, save_safetensors  # noqa: E402


def narrow_resnet18(torch, nn):
    from torchvision.models.resnet import BasicBlock, ResNet

    class NarrowResNet(ResNet):
        """ResNet with every width divided by 8: _make_layer is given planes / 8, and the stem
        and the head, which the constructor sizes before and after it, are remade to match."""

        def __init__(self):
            self.first = True
            super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=10)
            self.conv1 = nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(64 * BasicBlock.expansion, 10)

        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            if self.first:
                self.inplanes, self.first = 8, False
            return super()._make_layer(block, planes // 8, blocks, stride, dilate)

    return NarrowResNet()


def narrow_vgg11(torch, nn):
    from torchvision.models.vgg import VGG, cfgs, make_layers

    cfg = [c // 8 if isinstance(c, int) else c for c in cfgs["A"]]
    model = VGG(make_layers(cfg, batch_norm=False), num_classes=10)
    # The classifier's widths are fixed at 512 * 7 * 7 -> 4096 -> 4096: the same layers narrowed.
    model.classifier = nn.Sequential(nn.Linear(64 * 7 * 7, 64), nn.ReLU(True), nn.Dropout(), nn.Linear(64, 64),
                                     nn.ReLU(True), nn.Dropout(), nn.Linear(64, 10))
    return model


def mobilenet_v2(torch, nn):
    from torchvision.models import mobilenet_v2 as make

    return make(weights=None, width_mult=0.25, num_classes=10)


MODELS = [("tv_resnet18", narrow_resnet18, 64), ("tv_vgg11", narrow_vgg11, 224), ("tv_mobilenet_v2", mobilenet_v2, 32)]


def randomize_batch_norms(torch, module):
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="folder to write (default tests/onnx)")
    ap.add_argument("--tg-graph", help="tg-graph binary: also import each model (graph file + weights)")
    args = ap.parse_args()
    try:
        import onnx
        import onnxruntime
        import torch
        import torchvision
        from torch import nn
    except ImportError as e:
        sys.exit(f"make_torchvision_models: needs torch, torchvision, onnx, onnxruntime and onnxscript ({e})")
    torch.manual_seed(0)
    meta = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "made_by": "tests/onnx/make_torchvision_models.py"}
    out = os.path.abspath(args.out)
    for name, make, size in MODELS:
        module = make(torch, nn).eval()
        randomize_batch_norms(torch, module)
        x = torch.randn(1, 3, size, size)
        path = os.path.join(out, name + ".onnx")
        export(torch, module, x, path, True)
        inline_weights(path)
        y = reference(path, x.numpy())
        with torch.no_grad():
            y_torch = module(x).numpy()
        params = sum(p.numel() for p in module.parameters())
        print(f"{name}: {params} parameters, x {list(x.shape)} -> y {list(y.shape)}, {os.path.getsize(path)} bytes; "
              f"onnxruntime vs torch max |diff| {np.abs(y - y_torch).max():.3g}")
        save_safetensors(os.path.join(out, name + ".io.safetensors"), {"x": x.numpy(), "out.y": y}, meta)
        if args.tg_graph:
            cmd = [args.tg_graph, "import", path, "-o", os.path.join(out, name + ".json")]
            print("+", " ".join(cmd))
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
