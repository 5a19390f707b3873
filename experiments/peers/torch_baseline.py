#!/usr/bin/env python3
"""PyTorch on tg-train's and tg-launch's workloads, written as a twograph report.

    python3 experiments/peers/torch_baseline.py --device auto --quick --json torch.json
    tg-report compare docs/results/train.json torch.json \\
        --pair executor=static:torch_cuda_graph --pair executor=dynamic:torch_eager_h2d

The workloads are tg-train's and tg-launch's, configuration for configuration (the
sweeps of experiments/train/main.cpp and experiments/launch/main.cpp, --quick
included): the same models (experiments/peers/torch_models.py: graph/models.cpp's MLP,
pre-LN transformer block and chain of tiny ops), the same initial weights and data
(twograph's generators, so the loss curves are comparable), mse loss, SGD with
momentum 0.9 and lr 0.01, fp32 with TF32 off unless --precision says otherwise. Each
is run four ways (`executor`):

  torch_eager       eager, inputs already on the device
  torch_eager_h2d   eager, inputs copied from pageable host memory every step (what
                    twograph's dynamic executor does: pair it with executor=dynamic)
  torch_cuda_graph  the whole step captured once with torch.cuda.CUDAGraph and
                    replayed, inputs copied into its static tensors every step (what
                    twograph's static executor does: pair it with executor=static)
  torch_compile     torch.compile(mode="reduce-overhead") (Inductor + CUDA Graphs),
                    inputs copied from the host; its compile time is extra compile_ms
                    and, for the chain, a compile_total row. On a GPU also a
                    resident_step row: the same step on inputs already on the device
                    (ResNet-50's batch is 19 MB of fp32 images, whose copy from pageable
                    memory would otherwise be timed against replays that copy nothing)

--precision (tg-train's option; a comma list here, or all) runs tg-train's workloads in
each precision named, as their own rows with a `precision` parameter (none for fp32, as
tg-train's rows), so that tg-report compare pairs tg-train --precision P with them:

  fp32   as above
  tf32   fp32 with torch.backends.cuda.matmul.allow_tf32 (and cuDNN's) on: the tensor
         cores on fp32 inputs (GPU only)
  bf16   torch.autocast(dtype=torch.bfloat16) around the forward and the loss; fp32
         master weights, no loss scaling
  fp16   torch.autocast(dtype=torch.float16) with torch.amp.GradScaler (dynamic loss
         scaling: the step is skipped on inf/nan); the loss curve's row counts the skipped
         steps (extra scaler_skipped_steps). torch_cuda_graph captures the forward and the
         scaled backward and runs the scaler's step and update eagerly after each replay
         (they read the inf check on the host, which a capture cannot)

tg-launch's chain runs in fp32 only.

--workloads cnn runs tg-train's ImageNet networks (ResNet-18, ResNet-50, VGG-16 at 224 x 224)
from torchvision with cudnn.benchmark on, in NCHW and, as rows with memory_format=channels_last,
in NHWC; their weights keep torchvision's initialisation.

--workloads gpt2 runs tg-train --models gpt2's language model (experiments/peers/torch_models.py
Gpt2: graph/gpt2_model.cpp's GPT-2 with F.scaled_dot_product_attention, causal), GPT-2 small at
batch 4, sequence 256 (and batch 8, sequence 1024 without --quick) on a GPU, the two-layer
gpt2_tiny on the CPU, from twograph's initial weights, token ids and labels, cross-entropy over the
vocabulary; rows add tokens/s.

--workloads matmul times torch.matmul on square n x n operands already on the GPU (--matmul-n)
in each precision, the product alone with CUDA events, as rows `matmul backend=torch n=N
precision=P transfers=false` beside tg-matmul's `backend=gpu` rows of the same session.

Every iteration ends with the loss (training) or the prediction (inference) read
back to the host, the prediction into a host tensor kept from step to step, as twograph's
iterations do. Rows carry tg-train's and tg-launch's
names and params with executor set as above; see docs/bring-your-own-model.md.
Without torch it says so and exits 0 (with --json, a report that records the skip).
"""
import argparse
import contextlib
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402  (graph/corpus.h's synthetic text)
import twograph_report as tr  # noqa: E402
try:
    import torch_models as tm  # noqa: E402  (numpy: twograph's generators)
except ImportError as e:  # said in main(), as a skip, like a missing torch
    tm, _missing = None, e.name

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LR, MOMENTUM, CLASSES = 0.01, 0.9, 10
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")  # graph/precision.h's, in its order
INIT_SCALE = 2.0 ** 16  # fp16's first loss scale (GradScaler's default)


def parse_precisions(text):
    """--precision: all, or a comma list of PRECISIONS (each once). Returns the list, or
    raises ValueError naming what was wrong."""
    if text == "all":
        return list(PRECISIONS)
    out = []
    for p in text.split(","):
        if p not in PRECISIONS:
            raise ValueError(f"'{p}' is not a precision; use fp32, tf32, bf16 or fp16 (or all)")
        if p in out:
            raise ValueError(f"{p} is listed twice")
        out.append(p)
    return out


@contextlib.contextmanager
def matmul_precision(torch, precision):
    """tf32: the fp32 GEMMs and convolutions on the tensor cores; every other precision
    keeps them exact fp32 (bf16 and fp16 reach the tensor cores through autocast). The
    switches are process-wide: set for one way of running, restored after it."""
    tf32 = precision == "tf32"
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


# ---- the workloads, as tg-train and tg-launch sweep them ---------------------------------

def train_configs(quick, gpu, rep, max_rows=0):
    batches = [32, 64, 128, 256, 512, 1024, 2048, 4096]
    if quick:
        batches = [32, 256, 1024, 4096] if gpu else [32, 256]
    cs = [mlp_config("mlp_w256_d8", b, 256, 8) for b in batches]
    if quick and not gpu:
        rep.skip("mlp_w4096_d4 batch=1024", "--quick on the CPU, as tg-train --quick skips it")
    else:
        cs.append(mlp_config("mlp_w4096_d4", 1024, 4096, 4))
    ts = [(1, 64, 128, 4), (8, 64, 128, 4), (16, 128, 256, 8), (32, 256, 512, 8)]
    if quick:
        ts = [(1, 64, 128, 4), (8, 64, 128, 4), (32, 256, 512, 8)] if gpu else [(1, 64, 128, 4), (8, 64, 128, 4)]
    cs += [transformer_config(*t) for t in ts]
    if max_rows <= 0:
        return cs
    kept = []
    for c in cs:
        if c["rows"] <= max_rows:
            kept.append(c)
        else:
            rep.skip(" ".join(f"{k}={v}" for k, v in sorted(c["params"].items())), f"{c['rows']} rows > --max-rows {max_rows}")
    return kept


# tg-train's rows name their update rule; the baseline's is always theirs by default (SGD with
# momentum 0.9, no clipping), said the same way so that tg-report compare pairs the rows.
UPDATE_RULE = {"optimizer": "momentum", "clip_grad_norm": 0.0}


def mlp_config(sweep, batch, width, depth):
    Mlp, _, _, _ = tm.torch_modules()
    return {"params": {"model": "mlp", "sweep": sweep, "batch": batch, "width": width, "depth": depth, **UPDATE_RULE},
            "batch": batch, "rows": batch, "build": lambda: Mlp(width, width, depth, 10),
            "inputs": [("x", (batch, width)), ("target", (batch, 10))]}


def transformer_config(batch, seq, d_model, heads):
    _, Block, _, _ = tm.torch_modules()
    return {"params": {"model": "transformer", "sweep": "transformer", "batch": batch, "seq": seq,
                       "d_model": d_model, "heads": heads, **UPDATE_RULE},
            "batch": batch, "rows": batch * seq, "build": lambda: Block(d_model, heads),
            "inputs": [("x", (batch, seq, d_model)), ("target", (batch, seq, d_model))]}


# tg-train's ImageNet networks (experiments/train/main.cpp imagenet_configs), as torchvision builds
# them: the params tg-train's rows carry, so that tg-report compare pairs them.
CNN_PARAMS = {
    "resnet18": {"width": 64, "blocks": "2-2-2-2", "block": "basic"},
    "resnet50": {"width": 64, "blocks": "3-4-6-3", "block": "bottleneck"},
    "vgg16": {"width": 64, "fc": 4096, "stages": "2-2-3-3-3"},
}


def cnn_config(model, batch, image, channels_last=False, deterministic=False):
    import torchvision

    params = {"model": model, "sweep": f"{model}_i{image}", "batch": batch, "image": image, **CNN_PARAMS[model],
              **UPDATE_RULE}
    if channels_last:
        params["memory_format"] = "channels_last"
    if deterministic:
        params["cudnn_deterministic"] = True
    return {"params": params, "batch": batch, "rows": batch * image * image, "init": "torchvision",
            "loss": "cross_entropy", "channels_last": channels_last,
            "build": lambda: getattr(torchvision.models, model)(num_classes=1000),
            "inputs": [("x", (batch, 3, image, image)), ("labels", (batch,))]}


# tg-train --models gpt2 (experiments/train/main.cpp gpt2_configs; graph/models.h's gpt2_tiny_config
# and gpt2_small_config), with the params its rows carry.
GPT2_TINY = {"vocab": 512, "context": 64, "d_model": 64, "heads": 2, "layers": 2}
GPT2_SMALL = {"vocab": 50257, "context": 1024, "d_model": 768, "heads": 12, "layers": 12}


def gpt2_config(sweep, batch, seq, size):
    *_, Gpt2 = tm.torch_modules()
    params = {"model": "gpt2", "sweep": sweep, "batch": batch, "seq": seq, "d_model": size["d_model"],
              "layers": size["layers"], "heads": size["heads"], "vocab": size["vocab"], **UPDATE_RULE}
    return {"params": params, "batch": batch, "rows": batch * seq, "loss": "cross_entropy", "classes": size["vocab"],
            "tokens": True,
            "build": lambda: Gpt2(size["vocab"], size["context"], size["d_model"], size["heads"], size["layers"]),
            "inputs": [("ids", (batch, seq)), ("labels", (batch, seq))]}


def gpt2_configs(quick, gpu):
    if not gpu:
        return [gpt2_config("gpt2_tiny", 4, 32, GPT2_TINY)]
    shapes = [(4, 256)] if quick else [(4, 256), (8, 1024)]
    return [gpt2_config("gpt2_small", b, s, GPT2_SMALL) for b, s in shapes]


# ---- one way of running a step -------------------------------------------------------------

class Runner:
    """Builds one model on the device with twograph's initial weights and runs it
    one way. step(feeds) runs one iteration and returns what it read back."""

    def __init__(self, torch, dev, config, executor, training, precision="fp32"):
        from torch.nn import functional as F

        self.torch, self.dev, self.executor, self.training = torch, dev, executor, training
        self.model = config["build"]().to(dev)
        # The CNNs keep torchvision's own initialisation (their timings do not depend on it);
        # the MLP and the transformer start from twograph's weights, so loss curves compare.
        if config.get("init", "twograph") == "twograph":
            tm.load_twograph_init(self.model, cache=config.setdefault("init_cache", {}))
        self.channels_last = config.get("channels_last", False)
        if self.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM) if training else None
        # Autocast's low type (None: fp32 and tf32 run the model as written). Its weight-cast
        # cache must be off under a CUDA Graph capture (the cached casts would be freed
        # outside the graph's memory pool), as the CUDA Graphs notes ask.
        self.low = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        self.cast_cache = executor != "torch_cuda_graph"
        self.scaler = torch.amp.GradScaler(dev.type, init_scale=INIT_SCALE) if training and precision == "fp16" else None
        self.count_skips, self.skipped = False, 0
        self.names = [n for n, _ in config["inputs"]] if training else [config["inputs"][0][0]]
        self.loss_fn = F.cross_entropy if config.get("loss") == "cross_entropy" else F.mse_loss
        self.flat_labels = config.get("loss") == "cross_entropy"
        self.graph = None
        self.setup_s = None
        if executor == "torch_cuda_graph":
            self._capture(config)
        elif executor == "torch_compile":
            self._compile(config)

    def host(self, feeds):
        out = []
        for n in self.names:
            t = self.torch.from_numpy(feeds[n])
            if n in ("labels", "ids"):  # class indices and token ids (twograph's feeds hold them as floats)
                t = t.long()
            elif self.channels_last and t.dim() == 4:
                t = t.contiguous(memory_format=self.torch.channels_last)
            out.append(t)
        return out

    def _autocast(self):
        if self.low is None:
            return contextlib.nullcontext()
        return self.torch.autocast(device_type=self.dev.type, dtype=self.low, cache_enabled=self.cast_cache)

    def _forward_loss(self, x, target):
        with self._autocast():  # the losses run in fp32 under autocast, as twograph's do
            if self.flat_labels:  # cross_entropy: one label per logit row (GPT-2's [B, S] flattened)
                target = target.reshape(-1)
            return self.loss_fn(self.model(x), target)

    def _infer(self, x):
        with self._autocast():
            return self.model(x)

    def _backward(self, x, target):
        """Gradients set to None, forward, backward (of the scaled loss with a GradScaler):
        all of it capturable."""
        self.opt.zero_grad(set_to_none=True)
        loss = self._forward_loss(x, target)
        (self.scaler.scale(loss) if self.scaler else loss).backward()
        return loss

    def _update(self):
        """The optimizer's step; with a GradScaler its unscale, inf/nan check (the step is
        skipped on one) and scale update, which read the check on the host."""
        if self.scaler is None:
            self.opt.step()
            return
        before = self.scaler.get_scale() if self.count_skips else None
        self.scaler.step(self.opt)
        self.scaler.update()
        if before is not None and self.scaler.get_scale() < before:  # backed off: this step was skipped
            self.skipped += 1

    def _train(self, x, target):
        loss = self._backward(x, target)
        self._update()
        return loss

    def _capture(self, config):
        torch = self.torch
        feeds = tm.model_feeds(config["inputs"], 42, config.get("classes", CLASSES))
        self.static = [t.to(self.dev) for t in self.host(feeds)]
        initial = [p.detach().clone() for p in self.model.parameters()]
        t0 = time.perf_counter()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as the CUDA Graphs recipe asks
            for _ in range(3):
                if self.training:
                    self._train(*self.static)
                else:
                    with torch.no_grad():
                        self._infer(*self.static)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        if self.training:
            self.opt.zero_grad(set_to_none=True)
            # With a GradScaler the graph stops after the backward: step() runs _update after each replay.
            with torch.cuda.graph(self.graph):
                self.out = self._backward(*self.static) if self.scaler else self._train(*self.static)
        else:
            with torch.no_grad(), torch.cuda.graph(self.graph):
                self.out = self._infer(*self.static)
        torch.cuda.synchronize()
        self.setup_s = time.perf_counter() - t0
        with torch.no_grad():  # the warm-up stepped: back to the initial weights, momentum 0
            for p, p0 in zip(self.model.parameters(), initial):
                p.copy_(p0)
            if self.opt:
                for state in self.opt.state.values():
                    if state.get("momentum_buffer") is not None:
                        state["momentum_buffer"].zero_()
        if self.scaler:  # and the scale to its start, in place: the graph reads that tensor
            self.scaler.update(INIT_SCALE)

    def _compile(self, config):
        torch = self.torch
        # A fresh compile each time: dynamo caches per code object, and past its recompile
        # limit it would run later models eagerly without a word.
        torch._dynamo.reset()
        target = self._forward_loss if self.training else self._infer
        self.compiled = torch.compile(target, mode="reduce-overhead")
        dev = [t.to(self.dev) for t in self.host(tm.model_feeds(config["inputs"], 42, config.get("classes", CLASSES)))]
        t0 = time.perf_counter()
        for _ in range(3):  # compile, then reduce-overhead's CUDA Graph warm-up and recording; no update
            self._mark_step()
            if self.training:
                # Gradients set to None first: accumulating into the last iteration's .grad would
                # read a CUDA Graph output that this iteration's replay has overwritten.
                self.opt.zero_grad(set_to_none=True)
                loss = self.compiled(*dev)
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            else:
                with torch.no_grad():
                    self.compiled(*dev)
        self.sync()
        self.setup_s = time.perf_counter() - t0
        if self.opt:
            self.opt.zero_grad(set_to_none=True)

    def _mark_step(self):
        # One iteration per call, as the reduce-overhead docs ask of loops.
        mark = getattr(self.torch.compiler, "cudagraph_mark_step_begin", None)
        if mark and self.dev.type == "cuda":
            mark()

    def sync(self):
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()

    def resident(self, feeds):
        return [t.to(self.dev) for t in self.host(feeds)]

    def to_host(self, pred):
        """The prediction copied into a host tensor kept from step to step, as tg-train reads
        twograph's into a vector it keeps: neither side pays for fresh pages every step."""
        kept = getattr(self, "_host_pred", None)
        if kept is None or kept.shape != pred.shape or kept.dtype != pred.dtype:
            kept = self._host_pred = self.torch.empty(pred.shape, dtype=pred.dtype, device="cpu")
        kept.copy_(pred)
        return kept

    def step(self, feeds, inputs=None):
        """inputs: device tensors to use as they are (torch_eager)."""
        torch = self.torch
        if self.executor == "torch_cuda_graph":
            for s, h in zip(self.static, self.host(feeds)):
                s.copy_(h)
            self.graph.replay()
            if self.training and self.scaler:
                self._update()
            return self.out.item() if self.training else self.to_host(self.out)
        xs = inputs if inputs is not None else [h.to(self.dev) for h in self.host(feeds)]
        if self.executor == "torch_compile":
            self._mark_step()
            if self.training:
                self.opt.zero_grad(set_to_none=True)
                loss = self.compiled(*xs)
                (self.scaler.scale(loss) if self.scaler else loss).backward()
                self._update()
                return loss.item()
            with torch.no_grad():
                return self.to_host(self.compiled(*xs))
        if self.training:
            return self._train(*xs).item()
        with torch.no_grad():
            return self.to_host(self._infer(*xs))


def executors(gpu, compile_here):
    out = ["torch_eager"]
    if gpu:
        out += ["torch_eager_h2d", "torch_cuda_graph"]
    if compile_here:
        out.append("torch_compile")
    return out


FAILED = []


@contextlib.contextmanager
def recorded_failure(rep, executor, params):
    """One way of running that fails (a torch.compile error, say) is reported, on
    stderr with its traceback and in the report as a note, and the others go on;
    the run then exits 1."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - every failure is reported, none is hidden
        label = " ".join(f"{k}={v}" for k, v in sorted(params.items()))
        traceback.print_exc()
        rep.skip(f"{executor} {label}", f"failed: {type(e).__name__}: {e}")
        FAILED.append(f"{label}: {type(e).__name__}: {e}")


def measure_train_config(rep, torch, dev, c, loop, loss_steps, compile_here, precisions):
    feeds = tm.model_feeds(c["inputs"], 42, c.get("classes", CLASSES))
    for precision in precisions:
        # tg-train's rows: a precision parameter on every row but fp32's
        base = dict(c["params"], precision=precision) if precision != "fp32" else c["params"]
        for mode in ("train", "inference"):
            for executor in executors(dev.type == "cuda", compile_here):
                params = dict(base, executor=executor, mode=mode)
                with recorded_failure(rep, executor, params), matmul_precision(torch, precision):
                    measure_variant(rep, torch, dev, c, loop, loss_steps, params, feeds, precision)


def curve_batches(c, steps):
    """The batches of tg-train's loss curve: random feeds, a language model's ids and labels the
    windows of graph/corpus.h's synthetic text (corpus.py), as train_bench.cpp's loss_curves."""
    gpt2 = c["params"].get("model") == "gpt2"
    if gpt2:
        batch, seq = c["params"]["batch"], c["params"]["seq"]
        stream = corpus.synthetic_corpus(corpus.corpus_tokens_for(batch, seq, steps), 1)
    for i in range(steps):
        f = tm.model_feeds(c["inputs"], 500 + 7 * i, c.get("classes", CLASSES))
        if gpt2:
            for name, rows in zip(("ids", "labels"), corpus.corpus_batch(stream, batch, seq, i)):
                f[name] = tm.np.asarray(rows, dtype=f[name].dtype).reshape(f[name].shape)
        yield f


def measure_variant(rep, torch, dev, c, loop, loss_steps, params, feeds, precision):
    gpu, executor, training = dev.type == "cuda", params["executor"], params["mode"] == "train"
    if gpu:
        torch.cuda.reset_peak_memory_stats(dev)
    r = Runner(torch, dev, c, executor, training, precision)
    if training:  # the loss curve first, from the initial weights, with tg-train's batches
        r.count_skips = True
        curve = [r.step(f) for f in curve_batches(c, loss_steps)]
        r.count_skips = False
        extra = {"steps": loss_steps}
        if r.scaler:
            extra["scaler_skipped_steps"] = r.skipped
        rep.add("loss_curve", params, curve, unit="loss", timer="value", extra=extra)
    inputs = r.resident(feeds) if executor == "torch_eager" else None
    samples = tr.time_host(loop, lambda: r.step(feeds, inputs), r.sync)
    med = tr.summarize(samples)["median"]
    extra = {"iter/s": 1.0 / med, "samples/s": c["batch"] / med}
    if c.get("tokens"):
        extra["tokens/s"] = c["rows"] / med
    if r.setup_s is not None:
        extra["compile_ms"] = r.setup_s * 1e3
    rep.add_time("iteration", params, samples, extra)
    if r.graph is not None:
        rep.add_time("replay", params, tr.time_host(loop, r.graph.replay, r.sync))
    if gpu and executor == "torch_compile":
        resident = r.resident(feeds)
        rep.add_time("resident_step", params, tr.time_host(loop, lambda: r.step(feeds, resident), r.sync))
    if gpu:
        rep.add_value("peak_bytes", params, float(torch.cuda.max_memory_allocated(dev)), "B")


def run_train(rep, torch, dev, args, loop):
    gpu = dev.type == "cuda"
    configs = train_configs(args.quick, gpu, rep, args.max_rows)
    first_of_sweep = {}
    for c in configs:
        first_of_sweep.setdefault(c["params"]["sweep"], c["params"]["batch"])
    for i, c in enumerate(configs):
        label = " ".join(f"{k}={v}" for k, v in sorted(c["params"].items()))
        sweep = c["params"]["sweep"]
        compile_here = not args.no_compile and (not args.quick or (first_of_sweep[sweep] == c["batch"] and
                                                                   sweep != "mlp_w4096_d4"))
        if not args.no_compile and not compile_here:
            rep.skip(f"torch_compile {label}", "--quick: torch.compile only at the first batch of the width-256 MLP "
                                               "and the transformer (a compile takes tens of seconds); run without "
                                               "--quick for every configuration")
        print(f"torch-baseline: [{i + 1}/{len(configs)}] {label}", file=sys.stderr, flush=True)
        measure_train_config(rep, torch, dev, c, loop, args.loss_steps, compile_here, args.precisions)


def run_cnn(rep, torch, dev, args, loop):
    """tg-train's ImageNet networks from torchvision at 224 x 224, with cudnn.benchmark on (each
    convolution's fastest algorithm, found on its first call), NCHW as tg-train runs them and
    channels_last (NHWC, the tensor cores' layout for cuDNN) as rows of their own. With
    --cnn-deterministic, NCHW once more with cudnn.deterministic on (rows cudnn_deterministic=true):
    the algorithms twograph's default conv_deterministic=1 restricts cuDNN to."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        rep.skip("cnn", "torchvision is not installed here (pip install torchvision)")
        return
    saved = torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic
    torch.backends.cudnn.benchmark = True
    variants = [(False, False), (True, False)] + ([(False, True)] if args.cnn_deterministic else [])
    try:
        batches = [32] if args.quick else [32, 64]
        for model in args.cnn_models:
            for batch in batches:
                for channels_last, deterministic in variants:
                    torch.backends.cudnn.deterministic = deterministic
                    c = cnn_config(model, batch, 224, channels_last, deterministic)
                    label = " ".join(f"{k}={v}" for k, v in sorted(c["params"].items()))
                    print(f"torch-baseline: {label}", file=sys.stderr, flush=True)
                    compile_here = (not args.no_compile and batch == batches[0] and not channels_last
                                    and not deterministic)
                    measure_train_config(rep, torch, dev, c, loop, min(args.loss_steps, 5), compile_here,
                                         args.precisions)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved


# ---- tg-launch's chain ----------------------------------------------------------------------

def run_gpt2(rep, torch, dev, args, loop):
    """tg-train --models gpt2: GPT-2 small on a GPU, gpt2_tiny on the CPU; torch.compile at every
    configuration, or with --quick at the first only (a GPT-2 small compile takes a minute)."""
    for i, c in enumerate(gpt2_configs(args.quick, dev.type == "cuda")):
        label = " ".join(f"{k}={v}" for k, v in sorted(c["params"].items()))
        print(f"torch-baseline: {label}", file=sys.stderr, flush=True)
        compile_here = not args.no_compile and (i == 0 or not args.quick)
        measure_train_config(rep, torch, dev, c, loop, min(args.loss_steps, 5), compile_here, args.precisions)


def run_matmul(rep, torch, dev, args, loop):
    """tg-matmul's GPU rows: C = A B for square n x n operands of uniform [-1, 1) values already
    on the device, in each precision asked, each product timed alone with CUDA events (no
    transfers). Rows: matmul backend=torch n precision transfers=false, TFLOP/s in extra."""
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    for precision in args.precisions:
        for n in args.matmul_n:
            params = {"n": n, "backend": "torch", "precision": precision, "transfers": False}
            with recorded_failure(rep, "torch_matmul", params), matmul_precision(torch, precision):
                g = torch.Generator(device=dev).manual_seed(n)
                a = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(dtypes[precision])
                b = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(dtypes[precision])
                c = torch.empty(n, n, device=dev, dtype=dtypes[precision])
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

                def sample():
                    start.record()
                    torch.matmul(a, b, out=c)
                    end.record()
                    end.synchronize()
                    return start.elapsed_time(end) * 1e-3

                samples = tr.run_loop(loop, sample)
                med = tr.summarize(samples)["median"]
                rep.add_time("matmul", params, samples, {"TFLOP/s": 2.0 * n ** 3 / med / 1e12}, timer="gpu")


def run_launch(rep, torch, dev, args, loop):
    _, _, Chain, _ = tm.torch_modules()
    gpu = dev.type == "cuda"
    ns = args.ops or ([1, 10, 100, 1000] if args.quick else [1, 10, 100, 1000, 10000])
    reps = 3 if args.quick else 7  # tg-launch's compile repetitions
    for n in ns:
        print(f"torch-baseline: chain n_ops={n}", file=sys.stderr, flush=True)
        config = {"build": lambda: Chain(n, args.size), "inputs": [("x", (args.size,))]}
        feeds = tm.model_feeds(config["inputs"], 1000 + n)
        for executor in executors(gpu, not args.no_compile and n <= 1000):
            with recorded_failure(rep, executor, {"n_ops": n, "executor": executor, "size": args.size}):
                measure_chain(rep, torch, dev, config, executor, n, args.size, loop, reps, feeds)
    if not args.no_compile and max(ns) > 1000:
        rep.skip("torch_compile n_ops>1000", "tracing and compiling a chain of more than 1000 ops takes minutes")


def measure_chain(rep, torch, dev, config, executor, n, size, loop, reps, feeds):
    gpu = dev.type == "cuda"
    r = Runner(torch, dev, config, executor, False)
    inputs = r.resident(feeds) if executor == "torch_eager" else None
    samples = tr.time_host(loop, lambda: r.step(feeds, inputs), r.sync)
    graph = executor in ("torch_cuda_graph", "torch_compile")
    name = "static_iteration" if graph else "dynamic_iteration"
    launch = "cuda_graph" if gpu else "inductor_cpu"
    params = {"n_ops": n, "executor": executor, "size": size}
    params.update({"launch": launch} if graph else {"allocator": "caching"})
    m = rep.add_time(name, params, samples)
    m["extra"]["us_per_op"] = m["median"] / n * 1e6
    if r.graph is not None:
        rp = rep.add_time("static_replay", params, tr.time_host(loop, r.graph.replay, r.sync))
        rp["extra"]["us_per_node"] = rp["median"] / n * 1e6
    if graph:
        setups = [r.setup_s]
        if executor == "torch_cuda_graph":  # capture again for tg-launch's repetitions
            setups += [Runner(torch, dev, config, executor, False).setup_s for _ in range(reps - 1)]
        rep.add_time("compile_total", {"chain_ops": n, "executor": executor, "mode": "inference",
                                       "launch": launch}, setups)


# ---- the report --------------------------------------------------------------------------------

def device_info(torch, dev):
    if dev.type != "cuda":
        return [], None
    gpus = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        free, total = torch.cuda.mem_get_info(i)
        bus = getattr(p, "pci_bus_id", None)
        gpus.append({"id": i, "name": p.name,
                     "pci_bus_id": f"{getattr(p, 'pci_domain_id', 0):04x}:{bus:02x}:{getattr(p, 'pci_device_id', 0):02x}.0"
                     if isinstance(bus, int) else "",
                     "sm_count": p.multi_processor_count, "compute_capability": f"{p.major}.{p.minor}",
                     "total_bytes": total, "free_bytes": free, "sm_clock_khz": 0, "mem_clock_khz": 0,
                     "mem_bus_width_bits": 0, "pcie_gen": 0, "pcie_width": 0,
                     "l2_bytes": int(getattr(p, "L2_cache_size", 0) or 0)})
    major, minor = (int(x) for x in (torch.version.cuda or "0.0").split(".")[:2])
    driver = getattr(torch._C, "_cuda_getDriverVersion", lambda: 0)()
    return gpus, {"cuda_runtime_version": major * 1000 + minor * 10, "cuda_driver_version": int(driver),
                  "cublas_version": 0, "openblas_config": f"torch {torch.__version__}",
                  "blas_threads": torch.get_num_threads()}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="auto (the GPU when torch sees one, else the CPU), cpu, or N")
    ap.add_argument("--quick", action="store_true", help="tg-train's and tg-launch's --quick sweeps and loop")
    ap.add_argument("--workloads", default="train,launch",
                    help="a comma list of train (tg-train's), launch (tg-launch's), matmul (tg-matmul's square "
                         "products on the GPU, at --matmul-n), cnn (tg-train's ImageNet networks from "
                         "torchvision, GPU only) and gpt2 (tg-train --models gpt2)")
    ap.add_argument("--cnn-models", default="resnet18,resnet50,vgg16",
                    help="the cnn workload's torchvision networks (tg-train --models' ImageNet ones), comma-separated")
    ap.add_argument("--cnn-deterministic", action="store_true",
                    help="cnn: also time NCHW with torch.backends.cudnn.deterministic on (as twograph's default)")
    ap.add_argument("--matmul-n", type=int, nargs="+", default=[4096, 8192],
                    help="the matmul workload's sizes n (C = A B, all n x n)")
    ap.add_argument("--ops", type=int, nargs="+", help="chain lengths (default tg-launch's)")
    ap.add_argument("--size", type=int, default=64, help="elements per chain tensor (tg-launch's --size)")
    ap.add_argument("--loss-steps", type=int, default=20, help="steps of each loss curve (tg-train's default)")
    ap.add_argument("--max-rows", type=int, default=0,
                    help="leave out the configurations whose GEMMs have more rows (batch, or batch*seq), as tg-train's")
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile (it needs seconds a model)")
    ap.add_argument("--precision", default="fp32",
                    help="tg-train's workloads in these precisions, each its own rows: a comma list of fp32, tf32 "
                         "(GPU only), bf16, fp16 (autocast; fp16 with GradScaler), or all (every one the device runs)")
    ap.add_argument("--repetitions", type=int, help="minimum timed repetitions per measurement")
    ap.add_argument("--warmup", type=int, help="untimed calls before timing")
    ap.add_argument("--min-time", type=float, help="minimum timed seconds per measurement")
    ap.add_argument("--json", help="write the report here (atomically)")
    args = ap.parse_args(argv)
    bad = set(args.workloads.split(",")) - {"train", "launch", "matmul", "cnn", "gpt2"}
    if bad:
        ap.error(f"--workloads: unknown {', '.join(sorted(bad))}; give a comma list of train, launch, matmul, cnn "
                 "and gpt2")
    args.cnn_models = [m for m in args.cnn_models.split(",") if m]
    if set(args.cnn_models) - set(CNN_PARAMS):
        ap.error(f"--cnn-models: unknown {', '.join(sorted(set(args.cnn_models) - set(CNN_PARAMS)))}; give "
                 f"{', '.join(CNN_PARAMS)}")
    if min(args.matmul_n) < 1:
        ap.error("--matmul-n: sizes must be >= 1")
    if args.json:
        folder = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(folder):
            ap.error(f"--json {args.json}: the folder {folder} does not exist")
    for flag in ("repetitions", "warmup", "loss_steps", "size"):
        v = getattr(args, flag)
        if v is not None and v < (0 if flag == "warmup" else 1):
            ap.error(f"--{flag.replace('_', '-')} {v}: must be >= {0 if flag == 'warmup' else 1}")
    if args.min_time is not None and not (math.isfinite(args.min_time) and args.min_time >= 0):
        ap.error(f"--min-time {args.min_time}: must be a number of seconds >= 0")
    if args.ops and min(args.ops) < 1:
        ap.error("--ops: chain lengths must be >= 1")
    try:
        args.precisions = parse_precisions(args.precision)
    except ValueError as e:
        ap.error(f"--precision: {e}")
    return args


def loop_options(args):
    loop = dict(tr.QUICK_LOOP if args.quick else tr.DEFAULT_LOOP)
    if args.repetitions is not None:
        loop["min_reps"] = args.repetitions
        loop["max_reps"] = max(loop["max_reps"], args.repetitions)
    if args.warmup is not None:
        loop["warmup"] = args.warmup
    if args.min_time is not None:
        loop["min_time_s"] = args.min_time
    return loop


def main(argv):
    args = parse_args(argv[1:])
    loop = loop_options(args)
    try:
        if tm is None:
            raise ImportError(name=_missing)
        import torch
    except ImportError as e:
        what = e.name or "torch"
        print(f"torch-baseline: SKIPPED: {what} is not installed here (pip install torch numpy); nothing was measured",
              file=sys.stderr)
        if args.json:
            rep = tr.Report("torch-baseline", f"{what} not installed", argv, loop, args.quick, args.device, "cpu", -1,
                            "cpu", False, repo=REPO)
            rep.skip("torch_baseline", f"{what} is not installed on this machine (pip install torch numpy)")
            rep.write(args.json)
        return 0

    if args.device == "auto":
        dev = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    elif args.device == "cpu":
        dev = torch.device("cpu")
    elif args.device.isdigit() and torch.cuda.is_available() and int(args.device) < torch.cuda.device_count():
        dev = torch.device(f"cuda:{args.device}")
    else:
        print(f"torch-baseline: error: --device {args.device}: torch sees {torch.cuda.device_count()} GPU(s); give "
              "auto, cpu or an ordinal below that", file=sys.stderr)
        return 2
    no_tf32 = dev.type != "cuda" and "tf32" in args.precisions
    if no_tf32 and args.precision != "all":
        print("torch-baseline: error: --precision tf32 is a mode of the CUDA GEMMs; the CPU computes in f32: use "
              "fp32 there", file=sys.stderr)
        return 2
    if no_tf32:
        args.precisions.remove("tf32")
    # fp32 as twograph computes it: no TF32 in matmuls or convolutions (--precision tf32 turns it on for its rows)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    gpus, software = device_info(torch, dev)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu ({tr._cpu_model()})"
    rep = tr.Report("torch-baseline", f"torch {torch.__version__}", argv, loop, args.quick, args.device, dev.type,
                    dev.index if dev.type == "cuda" else -1, name, torch.version.cuda is not None, gpus, software,
                    repo=REPO)
    if dev.type != "cuda":
        rep.skip("torch_eager_h2d", "CPU: the inputs are already in host memory (no copy to make)")
        rep.skip("torch_cuda_graph", "CPU: CUDA Graphs need a GPU")
    if no_tf32:
        rep.skip("precision=tf32", "CPU: tf32 is a mode of the CUDA GEMMs (--precision all runs fp32, bf16, fp16 here)")
    print(f"torch-baseline: torch {torch.__version__} on {name}", file=sys.stderr, flush=True)
    workloads = args.workloads.split(",")
    if "train" in workloads:
        run_train(rep, torch, dev, args, loop)
    if "cnn" in workloads:
        if dev.type == "cuda":
            run_cnn(rep, torch, dev, args, loop)
        else:
            rep.skip("cnn", "CPU: the ImageNet networks at 224 x 224 take minutes a step here (tg-train runs them "
                            "on a GPU)")
    if "gpt2" in workloads:
        run_gpt2(rep, torch, dev, args, loop)
    if "matmul" in workloads:
        if dev.type == "cuda":
            run_matmul(rep, torch, dev, args, loop)
        else:
            rep.skip("matmul", "CPU: the matmul workload measures the GPU's products (tg-matmul's GPU rows)")
    if "launch" in workloads:
        if args.precisions != ["fp32"]:
            rep.skip("launch precision", "tg-launch's chain runs in fp32 only: its rows are fp32's whatever --precision")
        run_launch(rep, torch, dev, args, loop)
    print(rep.table())
    if args.json:
        rep.write(args.json)
        print(f"torch-baseline: wrote {args.json}", file=sys.stderr)
    if FAILED:
        print(f"torch-baseline: failed: {len(FAILED)} way(s) of running did not complete (the report's notes "
              f"say which): " + "; ".join(FAILED), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
