#!/usr/bin/env python3
"""Makes the language-model ONNX fixtures under tests/onnx/lm: PyTorch's own
nn.TransformerEncoderLayer and tiny Hugging Face GPT-2 and BERT models with random
weights, exported by torch.onnx.export, and onnxruntime's outputs for fixed inputs.

    python3 tests/onnx/make_lm_fixtures.py [--out DIR] [--only NAME ...]

Needs torch, transformers, onnx, onnxruntime and onnxscript; the ctest entries that
read the files (tests/onnx/lm_import_test.py) need none of them.

Models (small, so that the committed files stay a few hundred KB):
  encoder_layer            nn.TransformerEncoderLayer(d_model 32, nhead 4, dim_feedforward 64,
                           dropout 0, batch_first=True), eval mode, x [2, 5, 32]
  encoder_layer_seq_first  the same layer with batch_first=False, x [5, 2, 32]
  gpt2_tiny                transformers' GPT2LMHeadModel: 2 layers, d 32, 4 heads, vocabulary 100,
                           context 16; input_ids [2, 6] and attention_mask (the second row
                           padded at its end), the logits [2, 6, 100] out
  bert_tiny                transformers' BertModel: 2 layers, d 32, 4 heads, intermediate 64,
                           vocabulary 100; input_ids [2, 6] and attention_mask, the last hidden
                           state [2, 6, 32] out
  encoder_layer_padded     encoder_layer called with src_key_padding_mask (bool [2, 5], the
                           second sequence's last 2 positions padded): the mask filled with -inf
  gpt2_tiny_legacy         gpt2_tiny exported by the TorchScript exporter (dynamo=False, opset
                           17), 3 sequences: the second padded at its end, the third at its
                           start, so that its first queries see no key (the softmax's NaN guard
                           gives them 0); the mask filled with -inf
  bert_tiny_legacy         bert_tiny exported the same way, the third sequence all padding;
                           the mask filled with -inf, the token type ids a GatherElements
  encoder_layer_padded_legacy  encoder_layer_padded exported the same way (shape arithmetic with
                           Mod and an empty Slice of a shape, folded)

Each <name>.onnx holds its weights inside. <name>.io.safetensors holds every input under
its ONNX name (F32: token ids and masks as whole numbers, which f32 holds exactly) and
onnxruntime's first output as "out.y".
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "experiments", "peers"))
from export_onnx_models import save_safetensors  # noqa: E402


def reference(path, feeds):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def randomize(torch, module, scale=0.2):
    """Every parameter random: the default LayerNorm gamma 1 / beta 0 and zero biases test
    nothing, and the exporter merges equal initializers."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * scale)
    return module


def export(torch, module, args, names, path, dynamo=True):
    import onnx

    module.eval()
    legacy = {} if dynamo else {"opset_version": 17}
    torch.onnx.export(module, args, path, dynamo=dynamo, input_names=names, output_names=["y"], **legacy)
    model = onnx.load(path)
    # The exporter's per-node provenance (stack traces, module names) is most of the file.
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    del model.metadata_props[:]
    onnx.save(model, path, save_as_external_data=False)  # the weights inside the one file
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")


def lm_inputs(torch, vocab):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (2, 6), generator=g, dtype=torch.int64)
    mask = torch.ones(2, 6, dtype=torch.int64)
    mask[1, 4:] = 0  # the second sequence is 4 tokens, padded to 6
    return ids, mask


def models(torch):
    from torch import nn

    torch.manual_seed(0)
    out = {}
    for name, batch_first, shape in (("encoder_layer", True, (2, 5, 32)),
                                     ("encoder_layer_seq_first", False, (5, 2, 32))):
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=batch_first)
        out[name] = (randomize(torch, layer), (torch.randn(*shape),), ["x"])

    class Padded(nn.Module):
        """The encoder layer called with a key padding mask (True: padding)."""

        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, x, pad):
            return self.layer(x, src_key_padding_mask=pad)

    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1, 3:] = True
    x = torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(2))  # the models after keep their weights
    out["encoder_layer_padded"] = (Padded(out["encoder_layer"][0]), (x, pad), ["x", "pad"])

    import transformers

    class Logits(nn.Module):
        """GPT-2's logits alone: no key/value cache, one output."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    class Hidden(nn.Module):
        """BERT's last hidden state alone."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids, mask = lm_inputs(torch, 100)
    gpt2 = transformers.GPT2Config(vocab_size=100, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                                   resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    gpt2.attn_implementation = "eager"
    out["gpt2_tiny"] = (Logits(randomize(torch, transformers.GPT2LMHeadModel(gpt2))), (ids, mask),
                        ["input_ids", "attention_mask"])
    bert = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                                   attention_probs_dropout_prob=0.0)
    bert.attn_implementation = "eager"
    out["bert_tiny"] = (Hidden(randomize(torch, transformers.BertModel(bert, add_pooling_layer=False))), (ids, mask),
                        ["input_ids", "attention_mask"])
    ids3 = torch.cat([ids, ids[:1]])
    left = torch.cat([mask, torch.tensor([[0, 0, 1, 1, 1, 1]])])
    empty = torch.cat([mask, torch.zeros(1, 6, dtype=torch.int64)])
    out["gpt2_tiny_legacy"] = (out["gpt2_tiny"][0], (ids3, left), ["input_ids", "attention_mask"], False)
    out["bert_tiny_legacy"] = (out["bert_tiny"][0], (ids3, empty), ["input_ids", "attention_mask"], False)
    out["encoder_layer_padded_legacy"] = out["encoder_layer_padded"] + (False,)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "lm"), help="folder to write (default tests/onnx/lm)")
    ap.add_argument("--only", nargs="*", help="the models to make (default all)")
    args = ap.parse_args()
    try:
        import onnx
        import onnxruntime
        import torch
        import transformers
    except ImportError as e:
        sys.exit(f"make_lm_fixtures: needs torch, transformers, onnx, onnxruntime and onnxscript ({e})")
    os.makedirs(args.out, exist_ok=True)
    meta = {"torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "made_by": "tests/onnx/make_lm_fixtures.py"}
    for name, (module, inputs, names, *exporter) in models(torch).items():
        if args.only and name not in args.only:
            continue
        path = os.path.join(args.out, name + ".onnx")
        export(torch, module, inputs, names, path, *exporter)
        feeds = {n: t.numpy() for n, t in zip(names, inputs)}
        y = reference(path, feeds)
        with torch.no_grad():
            y_torch = module(*inputs).numpy()
        print(f"{name}: onnxruntime vs torch max |diff| {np.abs(y - y_torch).max():.3g}, output {list(y.shape)}")
        io = {n: a.astype(np.float32) for n, a in feeds.items()}
        io["out.y"] = y
        save_safetensors(os.path.join(args.out, name + ".io.safetensors"), io, meta)


if __name__ == "__main__":
    main()
