#!/usr/bin/env python3
"""Makes the ONNX fixtures under tests/onnx: models exported by PyTorch's ONNX
exporter, onnxruntime's outputs for fixed inputs, and (with --tg-graph) the graph
files tg-graph import makes of them.

    python3 experiments/peers/export_onnx_models.py --tg-graph build/cpu/tools/tg-graph/tg-graph

Needs torch, onnx, onnxruntime and onnxscript (pip install torch onnx onnxruntime
onnxscript); the tests that read the files need none of them.

Models (the structures of graph/models.cpp, small sizes; tests/common/models.h):
  mlp              3 Linear layers 16 -> 32 -> 32 -> 10, ReLU between, batch 4 (torch.onnx.export's
                   default exporter, weights in an external data file as it writes them)
  transformer      one pre-LN block, batch 2, seq 8, d_model 32, 4 heads, tanh GELU, scores / sqrt(dh)
  transformer_ts14 the same block and weights through the TorchScript exporter at opset 14: LayerNorm
                   as ReduceMean/Sub/Pow/Sqrt/Div, GELU as its tanh formula, Constant nodes
  conv1d           nn.Conv1d(2, 2, 3) on [1, 2, 8]: a 1-D convolution, imported as conv2d over a height of 1
  bad/             models the import refuses: a softmax over axis 0, an embedding (int64 input)
  bench/           tg-train's sizes (mlp_w256_d8 at batch 32, transformer d128 h4 at batch 8, seq 64),
                   imported with an mse loss for `tg-graph bench`; graph files only (the bench
                   starts from each file's own init, as tg-train does)

Each <name>.io.safetensors holds the input under its ONNX name and onnxruntime's
output as "out.<name>".
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def save_safetensors(path, tensors, metadata):
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))


def export(torch, module, x, path, dynamo, opset=None):
    module.eval()
    kwargs = {"dynamo": dynamo, "input_names": ["x"], "output_names": ["y"]}
    if opset:
        kwargs["opset_version"] = opset
    torch.onnx.export(module, (x,), path, **kwargs)


def inline_weights(path):
    """Rewrites an exported model with its weights inside the .onnx file."""
    import onnx

    model = onnx.load(path)
    data = path + ".data"
    onnx.save(model, path, save_as_external_data=False)
    if os.path.exists(data):
        os.remove(data)


def reference(path, x):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def tg_import(tool, onnx_path, out_json, loss=None, keep_weights=True):
    cmd = [tool, "import", onnx_path, "-o", out_json]
    if loss:
        cmd += ["--loss", loss]
    tmp = None
    if not keep_weights:
        tmp = tempfile.mkdtemp()
        cmd += ["--weights", os.path.join(tmp, "w.safetensors")]
    print("+", " ".join(cmd))
    subprocess.run(cmd, check=True)
    if tmp:
        shutil.rmtree(tmp)
        # The description names the weights file, which is not kept.
        with open(out_json) as f:
            text = f.read()
        start = text.index('"description": ') + len('"description": ')
        end = text.index("\n", start)
        desc = f"Imported from {os.path.basename(onnx_path)} by tg-graph import --loss {loss}; for tg-graph " \
               "bench: no weights kept, the parameters start from the file's init (as tg-train's do)"
        with open(out_json, "w") as f:
            f.write(text[:start] + json.dumps(desc) + "," + text[end:])


def fixture_args(doc):
    """The command line of the fixture scripts: --out and --tg-graph."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "onnx"),
                    help="folder to write (default tests/onnx)")
    ap.add_argument("--tg-graph", help="tg-graph binary: also import each model (graph file + weights)")
    return ap.parse_args()


def main():
    args = fixture_args(__doc__)
    try:
        import onnx  # noqa: F401
        import onnxruntime
        import torch
    except ImportError as e:
        sys.exit(f"export_onnx_models: needs torch, onnx, onnxruntime and onnxscript ({e}); "
                 "pip install torch onnx onnxruntime onnxscript")

    Mlp, TransformerBlock, _, _ = torch_models.torch_modules()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "bench"), exist_ok=True)
    torch.manual_seed(0)
    meta = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
            "made_by": "experiments/peers/export_onnx_models.py"}

    def random_layernorms(block):
        # The default gamma 1 / beta 0 would test nothing, and the exporter merges equal initializers.
        with torch.no_grad():
            for ln in (block.ln1, block.ln2):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.uniform_(-0.2, 0.2)
        return block

    mlp = Mlp(16, 32, 3, 10)
    block = random_layernorms(TransformerBlock(32, 4, divide=True))
    cases = [("mlp", mlp, torch.randn(4, 16), True, None, False),
             ("transformer", block, torch.randn(2, 8, 32), True, None, True),
             ("transformer_ts14", block, None, False, 14, True)]
    for name, module, x, dynamo, opset, inline in cases:
        if x is None:
            x = cases[1][2]
        path = os.path.join(out, name + ".onnx")
        export(torch, module, x, path, dynamo, opset)
        if inline:
            inline_weights(path)
        xs = x.numpy().astype(np.float32)
        y = reference(path, xs)
        with torch.no_grad():
            y_torch = module(x).numpy()
        print(f"{name}: onnxruntime vs torch max |diff| {np.abs(y - y_torch).max():.3g}")
        save_safetensors(os.path.join(out, name + ".io.safetensors"), {"x": xs, "out.y": y}, meta)
        if args.tg_graph:
            tg_import(args.tg_graph, path, os.path.join(out, name + ".json"))

    # A 1-D convolution, and models the import refuses, each for one reason (tests/onnx/CMakeLists.txt names
    # the expected message)
    from torch import nn

    class SoftmaxOverRows(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=0)

    os.makedirs(os.path.join(out, "bad"), exist_ok=True)
    bad = [("conv1d", nn.Conv1d(2, 2, 3), torch.randn(1, 2, 8)),
           ("bad/softmax_axis0", SoftmaxOverRows(), torch.randn(3, 4))]
    for name, module, x in bad:
        path = os.path.join(out, name + ".onnx")
        export(torch, module, x, path, True)
        inline_weights(path)
    # nn.GELU(), the exact form: one Gelu node (approximate="none"); tg-graph import maps it to gelu_erf
    path = os.path.join(out, "erf_gelu.onnx")
    export(torch, nn.Sequential(nn.Linear(4, 4), nn.GELU()), torch.randn(2, 4), path, True)
    inline_weights(path)
    # nn.Embedding: Gather on an initializer with int64 ids; tg-graph import maps it to embedding
    emb = nn.Embedding(10, 4)
    torch.onnx.export(emb.eval(), (torch.tensor([[1, 2, 3]]),), os.path.join(out, "embedding.onnx"),
                      dynamo=True, input_names=["ids"], output_names=["y"])
    inline_weights(os.path.join(out, "embedding.onnx"))

    # tg-train's sizes, for tg-graph bench on a GPU
    bench = [("mlp_w256_d8", Mlp(256, 256, 8, 10), torch.randn(32, 256)),
             ("transformer_d128_h4", random_layernorms(TransformerBlock(128, 4)), torch.randn(8, 64, 128))]
    for name, module, x in bench:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + ".onnx")
            export(torch, module, x, path, True)
            if args.tg_graph:
                tg_import(args.tg_graph, path, os.path.join(out, "bench", name + ".json"), loss="mse",
                          keep_weights=False)


if __name__ == "__main__":
    main()
