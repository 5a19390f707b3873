"""twograph's built-in models (graph/models.cpp) written in PyTorch, and twograph's
deterministic initial values and feeds (graph/init.cpp, experiments/launch/exec_common.h
model_feeds) in numpy, so that a PyTorch run starts from the same weights and sees the
same data as tg-train and tg-launch.

    Mlp              depth Linear layers, ReLU after every one but the last
    TransformerBlock pre-LN: a = x + Wo attention(LN1 x), y = a + W2 gelu_tanh(W1 LN2 a)
    Chain            n tiny ops on a [size] vector: add(w), scale(0.5), relu, cycling
    Gpt2             graph/gpt2_model.cpp: token + position embeddings, pre-LN blocks with
                     causal attention (F.scaled_dot_product_attention), the tied LM head

Parameter names follow twograph's ("mlp.l0.w" [in, out]); a torch Linear stores the
transpose ([out, in]), which twograph_parameters() takes care of.
"""
import math

import numpy as np

M64 = (1 << 64) - 1


def _splitmix64(states):
    """splitmix64's output for the given post-increment states (uint64 numpy array)."""
    with np.errstate(over="ignore"):
        z = states.copy()
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _stream(state0, n):
    """The first n outputs of splitmix64 from state0 (graph/init.h)."""
    with np.errstate(over="ignore"):
        steps = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        return _splitmix64(np.uint64(state0) + steps)


def _uniform01(state0, n):
    return (_stream(state0, n) >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def _fnv1a(name):
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & M64
    return h


def random_fill(n, seed, lo=-1.0, hi=1.0):
    """graph/init.cpp random_fill: uniform in [lo, hi), float32."""
    u = _uniform01((seed * 0x2545F4914F6CDD1D + 1) & M64, n)
    return np.float32(lo) + np.float32(hi - lo) * u


def random_labels(n, seed, classes):
    return (_stream((seed * 0x9E3779B97F4A7C15 + 7) & M64, n) % np.uint64(classes)).astype(np.float32)


def initial_uniform(name, shape, a=0.0, seed=0):
    """graph/init.cpp initial_values for a uniform init (a = 0: 1/sqrt(shape[0]))."""
    a = np.float32(a) if a else np.float32(1.0) / np.sqrt(np.float32(shape[0]))
    u = _uniform01((seed ^ _fnv1a(name)) & M64, int(np.prod(shape)))
    return (-a + np.float32(2.0) * a * u).astype(np.float32).reshape(shape)


def model_feeds(inputs, seed, classes=10):
    """exec_common.h model_feeds: inputs in declaration order, seeds seed + 0, 1, ...; labels
    and token ids (GPT-2's, whose table has `classes` rows) are indices below classes."""
    out = {}
    for salt, (name, shape) in enumerate(inputs):
        n = int(np.prod(shape))
        index = name in ("labels", "ids")
        data = random_labels(n, seed + salt, classes) if index else random_fill(n, seed + salt)
        out[name] = data.reshape(shape)
    return out


def torch_modules():
    """The module classes; imported lazily so that this file loads without torch."""
    import torch
    from torch import nn

    class Mlp(nn.Module):
        def __init__(self, inp, width, depth, out):
            super().__init__()
            dims = [inp] + [width] * (depth - 1) + [out]
            self.layers = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(depth))

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i < len(self.layers) - 1:
                    x = torch.relu(x)
            return x

        def twograph_names(self):
            for i, layer in enumerate(self.layers):
                yield f"mlp.l{i}.w", layer.weight, layer.in_features
                yield f"mlp.l{i}.b", layer.bias, layer.in_features

    class TransformerBlock(nn.Module):
        """divide: scores / sqrt(dh), as PyTorch code is usually written; else
        scores * (1 / sqrt(dh)), twograph's own arithmetic."""

        def __init__(self, d_model, heads, mlp_ratio=4, divide=False):
            super().__init__()
            self.heads, self.divide = heads, divide
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model) for _ in range(4))
            self.fc1 = nn.Linear(d_model, mlp_ratio * d_model)
            self.fc2 = nn.Linear(mlp_ratio * d_model, d_model)

        def forward(self, x):
            b, s, d = x.shape
            h, dh = self.heads, d // self.heads

            def split(t):
                return t.reshape(b, s, h, dh).transpose(1, 2)

            n = self.ln1(x)
            q, k, v = split(self.q(n)), split(self.k(n)), split(self.v(n))
            scores = q @ k.transpose(-2, -1)
            scores = scores / math.sqrt(dh) if self.divide else scores * (1.0 / math.sqrt(dh))
            ctx = torch.softmax(scores, dim=-1) @ v
            a = x + self.o(ctx.transpose(1, 2).reshape(b, s, d))
            f = nn.functional.gelu(self.fc1(self.ln2(a)), approximate="tanh")
            return a + self.fc2(f)

        def twograph_names(self):
            for ln in ("ln1", "ln2"):
                yield f"block.{ln}.gamma", getattr(self, ln).weight, None
                yield f"block.{ln}.beta", getattr(self, ln).bias, None
            for lin, name in ((self.q, "attn.q"), (self.k, "attn.k"), (self.v, "attn.v"), (self.o, "attn.o"),
                              (self.fc1, "mlp.fc1"), (self.fc2, "mlp.fc2")):
                yield f"block.{name}.w", lin.weight, lin.in_features
                yield f"block.{name}.b", lin.bias, lin.in_features

    class Chain(nn.Module):
        def __init__(self, n, size):
            super().__init__()
            self.n = n
            self.w = nn.Parameter(torch.zeros(size))

        def forward(self, x):
            h = x
            for i in range(self.n):
                if i % 3 == 0:
                    h = h + self.w
                elif i % 3 == 1:
                    h = h * 0.5
                else:
                    h = torch.relu(h)
            return h

        def twograph_names(self):
            yield "chain.w", self.w, None

    class Gpt2(nn.Module):
        """graph/gpt2_model.cpp: ids [B, S] -> logits [B * S, vocab]; separate q, k, v
        projections, GELU's tanh form (GPT-2's), the head tied to the token embedding."""

        def __init__(self, vocab, context, d_model, heads, layers, mlp_ratio=4):
            super().__init__()
            self.heads = heads
            self.wte, self.wpe = nn.Embedding(vocab, d_model), nn.Embedding(context, d_model)
            self.blocks = nn.ModuleList()
            for _ in range(layers):
                blk = nn.Module()
                blk.ln1, blk.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
                blk.q, blk.k, blk.v, blk.o = (nn.Linear(d_model, d_model) for _ in range(4))
                blk.fc = nn.Linear(d_model, mlp_ratio * d_model)
                blk.proj = nn.Linear(mlp_ratio * d_model, d_model)
                self.blocks.append(blk)
            self.ln_f = nn.LayerNorm(d_model)

        def forward(self, ids):
            b, s = ids.shape
            d = self.wte.weight.shape[1]
            h, dh = self.heads, d // self.heads
            x = self.wte(ids) + self.wpe.weight[:s]
            for blk in self.blocks:
                n = blk.ln1(x)
                q, k, v = (p(n).reshape(b, s, h, dh).transpose(1, 2) for p in (blk.q, blk.k, blk.v))
                ctx = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / math.sqrt(dh))
                x = x + blk.o(ctx.transpose(1, 2).reshape(b, s, d))
                x = x + blk.proj(nn.functional.gelu(blk.fc(blk.ln2(x)), approximate="tanh"))
            return self.ln_f(x).reshape(b * s, d) @ self.wte.weight.t()

        def twograph_names(self):
            # (name, tensor, fan_in or None, uniform bound when not 1/sqrt(fan_in))
            yield "gpt2.wte", self.wte.weight, None, 0.02
            yield "gpt2.wpe", self.wpe.weight, None, 0.02
            for i, blk in enumerate(self.blocks):
                n = f"gpt2.h{i}"
                for ln in ("ln1", "ln2"):
                    yield f"{n}.{ln}.gamma", getattr(blk, ln).weight, None
                    yield f"{n}.{ln}.beta", getattr(blk, ln).bias, None
                for lin, name in ((blk.q, "attn.q"), (blk.k, "attn.k"), (blk.v, "attn.v"), (blk.o, "attn.o"),
                                  (blk.fc, "mlp.fc"), (blk.proj, "mlp.proj")):
                    yield f"{n}.{name}.w", lin.weight, lin.in_features
                    yield f"{n}.{name}.b", lin.bias, lin.in_features
            yield "gpt2.ln_f.gamma", self.ln_f.weight, None
            yield "gpt2.ln_f.beta", self.ln_f.bias, None

    return Mlp, TransformerBlock, Chain, Gpt2


def load_twograph_init(module, seed=0, cache=None):
    """Sets every parameter to twograph's initial value of the same name: Linear
    weight and bias uniform +-1/sqrt(in) (graph/models.cpp linear), LayerNorm gamma
    1 and beta 0, embeddings +-0.02, chain.w the default bound 1/sqrt(size). twograph's weight is
    [in, out], torch's the transpose. `cache` (a dict) keeps the values for the
    next module of the same config: they take seconds for a 4096-wide MLP."""
    import torch

    with torch.no_grad():
        for name, p, fan_in, *bound in module.twograph_names():
            if name.endswith(".gamma") or name.endswith(".beta"):
                p.fill_(1.0 if name.endswith(".gamma") else 0.0)
                continue
            a = float(np.float32(1.0) / np.sqrt(np.float32(fan_in))) if fan_in else (bound[0] if bound else 0.0)
            weight = name.endswith(".w") and p.dim() == 2
            shape = tuple(p.shape[::-1]) if weight else tuple(p.shape)
            key = (name, shape, a, seed)
            if cache is None or key not in cache:
                v = initial_uniform(name, shape, a, seed)
                t = torch.from_numpy(np.ascontiguousarray(v.T) if weight else v)
                if cache is None:
                    p.copy_(t)
                    continue
                cache[key] = t
            p.copy_(cache[key])
