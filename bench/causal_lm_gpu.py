"""Generate with a Hugging Face Llama on an NVIDIA GPU (issue 25): poot's
`CausalLM` steps (the model's own forward exported with a static cache,
imported, fused, compiled for sm_90: one CUDA graph per step, the cache and
the weights resident, the weights borrowed from the torch model: no copy)
beside transformers' `generate` with a static cache, eager and compiled, on
the same weights in the same run.

Two phases, because the GPU machine has no MLIR:

    # build machine (the model on the meta device: no weight memory)
    python bench/causal_lm_gpu.py build bench/artifacts/causal_lm [CASE ...]
    # GPU machine (the runtime is pure Python):
    python bench/causal_lm_gpu.py run bench/artifacts/causal_lm [CASE ...] > out.json

Per case: a prompt of `prompt` tokens (one prefill chunk), then greedy
decode. ms/token is the slope of the whole generate's time between two
lengths (32 and 160 new tokens), so it is the decode step as a user gets it
(poot: the host writes the position and reads nothing back: each step
chooses its greedy tokens itself -- its `next_token` output, the argmax
of its logits computed in the step -- and they are copied on the device
into the next step's input). The floor: the bytes a decode step
must read (every weight but the embedding, and the live KV) over the
measured copy bandwidth. Correctness: the prompt's last logits of poot and
of transformers (bf16, eager) against a float64 run of the same bf16
weights, and how many greedy tokens poot and transformers share.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "python"))  # the GPU machine has no build: the runtime is pure Python

LLAMA8B = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
               num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
               rope_theta=500000.0)  # fmt: skip
SMALL = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
             num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=4096)  # fmt: skip
#: name -> (Llama config, rows, prompt tokens, cache capacity)
CASES = {
    "llama8b_bf16_b1": (LLAMA8B, 1, 128, 1024),
    "llama8b_bf16_b16": (LLAMA8B, 16, 128, 1024),
    "small_bf16_b1": (SMALL, 1, 128, 1024),
}
SHORT, LONG = 32, 160  # new tokens of the two timed generates


def build(out: Path, names: list[str]) -> None:
    import torch
    import transformers

    from poot_mlir.compiler import devices
    from poot_mlir.compiler.gpu import compile_gpu
    from poot_mlir.frontend.torch_export import import_exported, packed_weights
    from poot_mlir.models.hf_export import add_next_token, export_step

    for name in names:
        config_dict, rows, prompt, cap = CASES[name]
        config = transformers.LlamaConfig(**config_dict)
        with torch.device("meta"):
            model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()
        weights = None
        for tokens in (prompt, 1):
            t0 = time.perf_counter()
            ep = export_step(model, rows, tokens, cap, device="meta")
            tracer = import_exported(ep, name=f"step_t{tokens}", output_names=["logits"],
                                     pos="pos", max_pos=cap - tokens, pack_weights=True)  # fmt: skip
            add_next_token(tracer)  # the greedy token chosen in the step
            arguments = {a: shape for a, shape, _ in tracer.arguments() if a not in ("input_ids", "pos")}
            state = [n for n in arguments if n.startswith("cache_")]
            weights = [n for n in arguments if n not in state]
            # Weights stored transposed ([in, out]: pack_weights): the GPU
            # side transposes the torch model's tensors once to bind them.
            packed = sorted(packed_weights(ep))
            path = compile_gpu(tracer.finish(), devices.SM_90, out / name / f"t{tokens}")
            print(f"{name} t{tokens}: {time.perf_counter() - t0:.1f} s -> {path}", file=sys.stderr)
        (out / name / "case.json").write_text(json.dumps(
            {"config": config_dict, "rows": rows, "prompt": prompt, "cap": cap, "weights": weights,
             "packed": packed, "state": state}, indent=1))  # fmt: skip


class PootGenerate:
    """The CausalLM loop over the carried artifacts: prefill chunk, then
    decode steps; each step's greedy tokens chosen in the step (its
    `next_token`, left on the device: `device_outputs=True` reads nothing
    back) and copied on the device into one fixed input buffer."""

    def __init__(self, folder: Path, case: dict, model) -> None:
        import numpy as np
        import torch

        from poot_mlir.runtime.program import ProgramArtifact, make_device

        self.torch, self.np = torch, np
        self.device = make_device("cuda")
        named = dict(model.named_parameters()) | dict(model.named_buffers())
        packed = set(case["packed"])
        constants = {}
        for n in case["weights"]:
            tensor = named[n.removeprefix("model.")]
            constants[n] = (tensor.t() if n in packed else tensor).contiguous()
        rows, cap = case["rows"], case["cap"]
        cfg = case["config"]
        hd = cfg["hidden_size"] // cfg["num_attention_heads"]
        self.zeros = {n: np.zeros((rows, cfg["num_key_value_heads"], cap, hd), np.uint16)
                      for n in case["state"]}  # fmt: skip  (bf16 bits: zeros)
        self.prefill = ProgramArtifact(folder / f"t{case['prompt']}", backend=self.device)
        self.decode = ProgramArtifact(folder / "t1", backend=self.device)
        import ml_dtypes

        zeros = {n: z.view(ml_dtypes.bfloat16) for n, z in self.zeros.items()}
        self.s_prefill = self.prefill.session(zeros, constants=constants)
        self.s_decode = self.decode.session(share=self.s_prefill)
        self.zeros = zeros
        # Fixed input buffers: a CUDA input is read in place, and one address
        # keeps each step on one captured graph.
        self.ids = torch.zeros((rows, 1), dtype=torch.int32, device="cuda")
        self.prompt_ids = torch.zeros((rows, case["prompt"]), dtype=torch.int32, device="cuda")
        self.launches = sum(1 for c in self.decode.programs[self.decode.signature.name]["commands"]
                            if "launch" in c)  # fmt: skip

    def logits(self, prompt) -> "object":
        for name, value in self.zeros.items():
            self.s_prefill.write_state(name, value)
        self.prompt_ids.copy_(prompt.to(self.torch.int32))
        out = self.s_prefill.step({"input_ids": self.prompt_ids, "pos": 0}, device_outputs=True)
        return self.torch.from_dlpack(out.named["logits"])[:, -1, :]

    def _next(self, out) -> "object":
        """The step's greedy tokens `[rows, 1]` i32, a view of its output buffer."""
        return self.torch.from_dlpack(out.named["next_token"]).view(-1, 1)

    def generate(self, prompt, new: int) -> list:
        torch = self.torch
        for name, value in self.zeros.items():
            self.s_prefill.write_state(name, value)
        self.prompt_ids.copy_(prompt.to(torch.int32))
        out = self.s_prefill.step({"input_ids": self.prompt_ids, "pos": 0}, device_outputs=True)
        tokens = []
        pos = prompt.shape[1]
        for i in range(new):
            self.ids.copy_(self._next(out))  # device to device: the output is overwritten next step
            tokens.append(self.ids.clone())
            if i == new - 1:
                break
            torch.cuda.current_stream().synchronize()  # the id is written before poot reads it
            out = self.s_decode.step({"input_ids": self.ids, "pos": pos + i}, device_outputs=True)
        return torch.cat(tokens, dim=1)


def _seconds(fn, repeat: int = 3) -> float:
    import torch

    fn()  # warm (and compile)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def run_case(out: Path, name: str, bandwidth: float) -> dict:
    import numpy as np
    import torch
    import transformers

    case = json.loads((out / name / "case.json").read_text())
    config = transformers.LlamaConfig(**case["config"])
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()
    rows, prompt_len = case["rows"], case["prompt"]
    prompt = torch.randint(0, config.vocab_size, (rows, prompt_len), generator=torch.Generator().manual_seed(1))
    row = {"case": name, "rows": rows, "prompt": prompt_len, "cap": case["cap"],
           "transformers": transformers.__version__, "torch": torch.__version__}  # fmt: skip
    esize = 2
    weight_bytes = sum(p.numel() for p in model.parameters()) * esize
    embed = model.model.embed_tokens.weight.numel() * esize
    hd = config.hidden_size // config.num_attention_heads
    pos = prompt_len + (SHORT + LONG) // 2
    live_kv = 2 * rows * config.num_hidden_layers * config.num_key_value_heads * pos * hd * esize
    row["floor_ms"] = (weight_bytes - embed + live_kv) / bandwidth * 1e3
    row["copy_TBps"] = bandwidth / 1e12

    poot = PootGenerate(out / name, case, model)
    row["poot_launches_per_decode_step"] = poot.launches
    with torch.no_grad():
        t_short = _seconds(lambda: poot.generate(prompt, SHORT))
        t_long = _seconds(lambda: poot.generate(prompt, LONG))
        row["poot_ms_per_token"] = (t_long - t_short) / (LONG - SHORT) * 1e3
        row["poot_generate_s"] = t_long
        poot_tokens = poot.generate(prompt, LONG).cpu().numpy()
        poot_logits = poot.logits(prompt).double().cpu().numpy()

    def hf(new: int, compiled: bool):
        kwargs = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False,
                      cache_implementation="static", pad_token_id=0)  # fmt: skip
        if not compiled:
            kwargs["disable_compile"] = True
        return model.generate(prompt.cuda(), **kwargs)

    for label, compiled in (("eager", False), ("compile", True)):
        try:
            with torch.no_grad():
                t_short = _seconds(lambda: hf(SHORT, compiled))
                t_long = _seconds(lambda: hf(LONG, compiled))
            row[f"torch_{label}_ms_per_token"] = (t_long - t_short) / (LONG - SHORT) * 1e3
            row[f"torch_{label}_generate_s"] = t_long
        except Exception as error:  # report, keep the rest of the row
            row[f"torch_{label}_error"] = f"{type(error).__name__}: {error}"[:400]
    with torch.no_grad():
        hf_tokens = hf(LONG, False)[:, prompt_len:].cpu().numpy()
        hf_logits = model(prompt.cuda()).logits[:, -1, :].double().cpu().numpy()
        exact = model.double()(prompt.cuda()).logits[:, -1, :].cpu().numpy()
    scale = np.abs(exact).max()
    row["poot_logits_vs_f64"] = float(np.abs(poot_logits - exact).max() / scale)
    row["torch_bf16_logits_vs_f64"] = float(np.abs(hf_logits - exact).max() / scale)
    # Per row: how many leading greedy tokens poot and transformers share
    # (bf16 rounding differs, so a near tie can split them), and the gap of
    # the float64 logits at the first token where any row differs.
    shared = [int(np.argmin(r)) if not r.all() else int(r.size) for r in poot_tokens == hf_tokens]
    row["greedy_tokens_shared_per_row"] = shared
    row["greedy_tokens_shared"] = min(shared)
    first = (poot_tokens[:, 0] != hf_tokens[:, 0])
    if first.any():
        top2 = np.sort(exact[first], axis=-1)[:, -2:]
        row["first_token_f64_gap_where_split"] = float(((top2[:, 1] - top2[:, 0]) / scale).max())
    row["poot_vs_floor"] = row["floor_ms"] / row["poot_ms_per_token"]
    for label in ("eager", "compile"):
        if f"torch_{label}_ms_per_token" in row:
            row[f"speedup_vs_torch_{label}"] = row[f"torch_{label}_ms_per_token"] / row["poot_ms_per_token"]
    return row


def main(argv: list[str]) -> None:
    mode, out, names = argv[0], Path(argv[1]), argv[2:] or list(CASES)
    if mode == "build":
        build(out, names)
        return
    import torch

    from decode_step_h200 import _copy_bandwidth  # one probe of the copy ceiling for the benches

    bandwidth = _copy_bandwidth()
    rows = []
    for name in names:
        try:
            rows.append(run_case(out, name, bandwidth))  # its model and sessions freed on return
        except Exception as error:
            rows.append({"case": name, "error": f"{type(error).__name__}: {error}"[:800]})
        torch.cuda.empty_cache()  # the case's model is gone: the next one gets its memory
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
                      "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
