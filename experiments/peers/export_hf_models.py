#!/usr/bin/env python3
"""Makes the Hugging Face fixtures under tests/onnx: transformers' own models at tiny sizes with
random weights, exported by PyTorch's ONNX exporter (dynamo), onnxruntime's outputs for fixed
token ids, and (with --tg-graph) the graph files tg-graph import makes of them.

    python3 experiments/peers/export_hf_models.py --tg-graph build/default/tools/tg-graph/tg-graph

Needs torch, transformers, onnx, onnxruntime and onnxscript; the tests that read the files need
none of them.

Models:
  hf_gpt2   transformers.GPT2LMHeadModel: vocabulary 100, context 16, d 32, 2 heads, 2 layers,
            token ids [2, 8] -> logits [2, 8, 100] (the fused c_attn projection split in three,
            the causal mask a constant, the tanh GELU as its formula, the head tied to wte)
  hf_bert   transformers.BertModel: vocabulary 100, 16 positions, d 32, 2 heads, 2 layers, FFN 64,
            token ids [2, 8] -> last hidden state [2, 8, 32], called as model(input_ids) (no
            attention mask: every token attends to every other; token types all 0)

Each <name>.io.safetensors holds the token ids under the input's ONNX name (as numbers, the
way tg-graph run --inputs takes ids) and onnxruntime's output as "out.y".
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_onnx_models import fixture_args, inline_weights, save_safetensors, tg_import  # noqa: E402


def randomized(torch, model):
    """Every LayerNorm's gamma and beta drawn, not 1 and 0: the defaults would test nothing, and
    the exporter merges equal initializers."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model.eval()


def main():
    args = fixture_args(__doc__)
    try:
        import onnx
        import onnxruntime as ort
        import torch
        import transformers
    except ImportError as e:
        sys.exit(f"export_hf_models: needs torch, transformers, onnx, onnxruntime and onnxscript ({e})")
    out = os.path.abspath(args.out)
    torch.manual_seed(0)
    meta = {"torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxruntime": ort.__version__, "made_by": "experiments/peers/export_hf_models.py"}

    cfg = transformers.GPT2Config(vocab_size=100, n_positions=16, n_embd=32, n_layer=2, n_head=2, attn_pdrop=0.0,
                                  resid_pdrop=0.0, embd_pdrop=0.0)
    gpt2 = randomized(torch, transformers.GPT2LMHeadModel(cfg))

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    bcfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                                   attention_probs_dropout_prob=0.0)
    bert = randomized(torch, transformers.BertModel(bcfg, add_pooling_layer=False))

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids).last_hidden_state

    for name, module, vocab in (("hf_gpt2", Logits(gpt2), cfg.vocab_size), ("hf_bert", Hidden(bert), bcfg.vocab_size)):
        ids = torch.randint(0, vocab, (2, 8))
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(module, (ids,), path, dynamo=True, input_names=["input_ids"], output_names=["y"])
        inline_weights(path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        y = sess.run(None, {"input_ids": ids.numpy()})[0]
        with torch.no_grad():
            y_torch = module(ids).numpy()
        print(f"{name}: onnxruntime vs torch max |diff| {np.abs(y - y_torch).max():.3g}")
        save_safetensors(os.path.join(out, name + ".io.safetensors"),
                         {"input_ids": ids.numpy().astype(np.float32), "out.y": y}, meta)
        if args.tg_graph:
            tg_import(args.tg_graph, path, os.path.join(out, name + ".json"))


if __name__ == "__main__":
    main()
