"""The compiler's Python face: compiles fuse by default, manifests say what was
fused and planned, every error a caller can cause is typed and points at the
caller's source, and PassTrace dumps IR after a pass and times the passes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from poot_mlir import errors, oracle
from poot_mlir.compiler import PassTrace, compile_cpu, compile_gpu, devices, fuse_attention
from poot_mlir.compiler.fuse import count_ops
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime.cpu import CpuArtifact

HERE = Path(__file__).name
CAP = 32


def decode_step(dtype: str = "f32"):
    """One GQA decode attention over a KV cache; returns (module, the line
    of this file that traced the attention)."""
    tr = Tracer("step")
    k0, v0 = tr.state("k0", (1, 2, CAP, 16), dtype), tr.state("v0", (1, 2, CAP, 16), dtype)
    pos = tr.pos(max_pos=CAP - 1)
    q = tr.input("q", (1, 4, 1, 16), dtype)
    k, v = tr.input("k", (1, 2, 1, 16), dtype), tr.input("v", (1, 2, 1, 16), dtype)
    import inspect

    line = inspect.currentframe().f_lineno + 1
    out, k1, v1 = ops.attention_masked(q, k, v, k0, v0, pos)
    tr.output("out", out)
    tr.state_out("k0", k1)
    tr.state_out("v0", v1)
    return tr.finish(), line


def mlp_step():
    tr = Tracer("step")
    x = tr.input("x", (2, 8))
    tr.output("y", ops.exp(x))
    return tr.finish()


def _inputs(rng):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    state = {"k0": f(1, 2, CAP, 16), "v0": f(1, 2, CAP, 16)}
    return {"q": f(1, 4, 1, 16), "k": f(1, 2, 1, 16), "v": f(1, 2, 1, 16), "pos": 5}, state


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


# --- fusion is part of the compile -------------------------------------------


def test_compile_cpu_fuses_and_lists_the_planned_attention(rng, tmp_path):
    module, line = decode_step()
    before = str(module)
    path = compile_cpu(module, tmp_path / "a")
    assert str(module) == before, "compile_cpu must not change the caller's module"
    assert count_ops(module, "poot.attention") == 0
    manifest = _manifest(path)
    assert manifest["fusion"] == {
        "enabled": True, "attention": 1, "block_topk": 0, "selected_attention": 0, "declined": []
    }
    [entry] = manifest["attention"]
    request = entry["request"]
    assert (request["batch"], request["q_heads"], request["kv_heads"], request["key_len"]) == (1, 4, 2, CAP)
    assert request["schedule"] == "cpu_tiled" and request["lanes"] >= 1
    assert entry["location"].endswith(f"{HERE}:{line}:19"), entry["location"]
    assert manifest["notes"] == []
    inputs, state = _inputs(rng)
    got = CpuArtifact(path).run({**inputs, **state}).named["out"]
    want = oracle.run(module, {**inputs, **state}, reference=True).named["out"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_fuse_false_compiles_the_primitive_chain(rng, tmp_path):
    module, _ = decode_step()
    path = compile_cpu(module, tmp_path / "a", fuse=False)
    manifest = _manifest(path)
    assert manifest["fusion"] == {
        "enabled": False, "attention": 0, "block_topk": 0, "selected_attention": 0, "declined": []
    }
    assert manifest["attention"] == []
    assert manifest["notes"] == ["nothing to plan: @step has no poot.attention "
                                 "(fusion was off (fuse=False) and the module has none)"]
    inputs, state = _inputs(rng)
    got = CpuArtifact(path).run({**inputs, **state}).named["out"]
    want = oracle.run(module, {**inputs, **state}, reference=True).named["out"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nothing_to_plan_is_noted_and_logged(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="poot_mlir.compiler"):
        path = compile_cpu(mlp_step(), tmp_path / "a")
    note = "nothing to plan: @step has no poot.attention (fusion found no attention chain)"
    assert _manifest(path)["notes"] == [note]
    assert note in caplog.text


def test_a_declined_chain_is_a_warning_with_its_remark(tmp_path, caplog):
    module, line = decode_step("f64")  # the kernels read f32/f16/bf16: the rewrite declines f64
    with caplog.at_level(logging.WARNING, logger="poot_mlir.compiler"):
        path = compile_cpu(module, tmp_path / "a")
    [remark] = _manifest(path)["fusion"]["declined"]
    assert f"{HERE}:{line}:" in remark and "attention not fused" in remark, remark
    assert "1 attention chain(s) left unfused" in caplog.text and remark in caplog.text


ATTENTION = """
func.func @attn(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>)
    -> tensor<1x4x1x16xf32> {
  %o = poot.attention %q, %k, %v {scale = 0.25 : f64}
      : tensor<1x4x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}"""


def test_compile_gpu_fuses_and_compiles_a_step_with_nothing_to_plan(tmp_path):
    """The attention's record (poot-record-fused-ops, C++) gives the
    manifest its request and source line; a step without attention (an MLP)
    is a program too: whatever compile_cpu takes, compile_gpu takes."""
    manifest = _manifest(compile_gpu(ATTENTION, devices.VULKAN_LAVAPIPE, tmp_path / "a"))
    assert manifest["fusion"]["attention"] == 1
    (entry,) = manifest["attention"]
    assert entry["location"] == "<string>:4:8" and entry["op"] == "attention" and entry["scale"] == 0.25
    assert entry["request"]["batch"] == 1 and entry["request"]["q_heads"] == 4
    assert entry["request"]["key_len"] == 32 and entry["request"]["schedule"] in ("streaming", "split_kv")
    cpu = _manifest(compile_cpu(ATTENTION, tmp_path / "c"))["attention"]
    assert [(e["op"], e["location"], e["scale"]) for e in cpu] == [("attention", "<string>:4:8", 0.25)]
    mlp = _manifest(compile_gpu(mlp_step(), devices.VULKAN_LAVAPIPE, tmp_path / "b"))
    assert mlp["kind"] == "program" and mlp["attention"] == []
    assert any("launch" in c for c in mlp["programs"]["step"]["commands"])


# --- errors are typed and keep the user's locations ---------------------------


def test_unparseable_text_is_a_parse_error_naming_the_line(tmp_path):
    text = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = poot.nope %a\n}"
    for compile_ in (
        lambda: compile_cpu(text, tmp_path / "a"),
        lambda: compile_gpu(text, devices.SM_90, tmp_path / "b"),
    ):
        with pytest.raises(errors.ParseError, match=r"<string>:2:\d+: .*poot.nope") as info:
            compile_()
        assert isinstance(info.value, ValueError) and '"-"' not in str(info.value)
    with pytest.raises(errors.ParseError, match=r"<string>:2:\d+"):
        oracle.run(text, {})  # the oracle reads text the same way


def test_a_file_parses_with_its_own_name(tmp_path):
    bad = tmp_path / "model.mlir"
    bad.write_text("module {\n  func.func @f( {\n}\n")
    with pytest.raises(errors.ParseError, match=r"model\.mlir:2:\d+"):
        compile_cpu(bad, tmp_path / "a")
    with pytest.raises(errors.ParseError, match="no such file"):
        compile_cpu(tmp_path / "missing.mlir", tmp_path / "a")


def test_input_an_upstream_parser_aborts_on_is_a_parse_error(tmp_path):
    """A 2^32-element SPIR-V array: MLIR 22's type parser truncates the count
    and aborts the process; the compile entry points refuse it first (the
    interpreter survives), naming the line (issue-28 fuzz campaign)."""
    text = ("spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {\n"
            "  spirv.GlobalVariable @out : !spirv.ptr<!spirv.struct<(!spirv.array<4294967296 x f32, "
            "stride=4> [0])>, StorageBuffer>\n}\n")
    with pytest.raises(errors.ParseError, match=r"<string>:2: '!spirv.array' with 4294967296"):
        compile_gpu(text, devices.VULKAN_LAVAPIPE, tmp_path / "a")
    path = tmp_path / "big.mlir"
    path.write_text(text.replace("4294967296", "99999999999"))
    with pytest.raises(errors.ParseError, match=r"big\.mlir:2: "):
        compile_cpu(path, tmp_path / "b")
    # The largest count a SPIR-V array holds is not refused by this check.
    fine = text.replace("4294967296", "4294967295")
    with pytest.raises(errors.PootError) as other:
        compile_gpu(fine, devices.VULKAN_LAVAPIPE, tmp_path / "c")
    assert "4294967296" not in str(other.value)


def test_not_a_module_is_typed(tmp_path):
    with pytest.raises(errors.NotAModule):
        compile_cpu(42, tmp_path / "a")  # type: ignore[arg-type]
    with pytest.raises(errors.NotAModule):
        fuse_attention("module {}")  # type: ignore[arg-type]


def test_refused_plan_points_at_the_users_line(tmp_path):
    module, line = decode_step()
    # The seed's GPU schedule as CPU loops: one lane needs (16 + 2) * 4 bytes.
    tiny = devices.CPU_SEED.with_limits(workgroup_memory=16)
    with pytest.raises(errors.AttentionLds) as info:
        compile_cpu(module, tmp_path / "a", device=tiny)
    assert info.value.location.endswith(f"{HERE}:{line}:19"), info.value.location
    assert str(info.value).startswith(info.value.location + ": AttentionLds:")
    with pytest.raises(errors.AttentionLds) as info:
        compile_gpu(ATTENTION, devices.VULKAN_LAVAPIPE.with_limits(workgroup_memory=16), tmp_path / "b")
    assert info.value.location == "<string>:4:8"


# --- PassTrace: IR after a pass, pass timing --------------------------------------


def test_trace_keeps_the_ir_after_a_pass_and_times_every_pipeline(tmp_path):
    module, _ = decode_step()
    trace = PassTrace(print_ir_after=["poot-attention-rewrite", "poot-plan-attention"], timing=True)
    compile_cpu(module, tmp_path / "a", trace=trace)
    fused = trace.ir_after("poot-attention-rewrite")
    assert fused.startswith("module") and "poot.attention " in fused and "#poot.attention_request" not in fused
    assert "#poot.attention_request<" in trace.ir_after("poot-plan-attention")
    assert {d.argument for d in trace.dumps} == {"poot-attention-rewrite", "poot-plan-attention"}
    with pytest.raises(KeyError, match="canonicalize"):
        trace.ir_after("canonicalize")  # ran, but not asked for
    # One timing report per pipeline run: fuse, then lower (which plans once).
    assert len(trace.timing_reports) == len(trace.pipelines) == 2
    names = [name for name, _ in trace.pass_times()]
    assert "PootAttentionRewrite" in names and "PootPlanAttention" in names
    assert "Rest" not in names and all(seconds >= 0 for _, seconds in trace.pass_times())
    assert "Execution time report" in trace.timing_report


def test_trace_every_pass_of_fuse_attention_and_compile_gpu(tmp_path):
    module, _ = decode_step()
    trace = PassTrace(print_ir_after=True)
    report = fuse_attention(module, trace=trace)
    assert report.attention == 1
    assert [d.argument for d in trace.dumps] == [
        "canonicalize", "poot-recognize-rope", "poot-attention-rewrite", "poot-select-blocks", "cse"
    ]
    gpu_trace = PassTrace(print_ir_after=["poot-plan-attention"], timing=True)
    compile_gpu(ATTENTION, devices.SM_90, tmp_path / "g", trace=gpu_trace)
    assert "#poot.attention_request<" in gpu_trace.ir_after("poot-plan-attention")
    assert any(name == "PootPlanAttention" for name, _ in gpu_trace.pass_times())


def test_trace_keeps_the_ir_up_to_a_failing_pass(tmp_path):
    module, _ = decode_step()
    trace = PassTrace(print_ir_after=["poot-attention-rewrite"])
    with pytest.raises(errors.AttentionLds):
        compile_cpu(
            module, tmp_path / "a", device=devices.CPU_SEED.with_limits(workgroup_memory=16), trace=trace
        )
    assert "poot.attention " in trace.ir_after("poot-attention-rewrite")


def test_a_block_label_defined_twice_is_a_parse_error(tmp_path, rng):
    """MLIR 22's parser asserts tearing down a region whose block label is
    defined twice (2026-12-06 fuzz campaign): the compile refuses the text
    first with the line, and the interpreter survives to compile the next
    step (sibling regions reusing a label: test/Support lit test)."""
    twice = (
        "func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  cf.br ^bb1\n"
        "^bb1:\n"
        "  return %x : tensor<4xf32>\n"
        "^bb1:\n"
        "  return %x : tensor<4xf32>\n}\n"
    )
    with pytest.raises(errors.ParseError, match=r"<string>:5: redefinition of block '\^bb1'"):
        compile_cpu(twice, tmp_path / "a")
    text = "func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = poot.exp %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n"
    x = rng.standard_normal(4).astype(np.float32)
    got = CpuArtifact(compile_cpu(text, tmp_path / "b")).run([x]).outputs[0]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=1e-6)


def test_a_negative_reassociation_index_is_a_parse_error(tmp_path, rng):
    """tensor.expand_shape's verifier builds affine maps from the
    reassociation before checking it, and a negative index asserts in
    AffineMap::get (issue-28 long fuzz campaign): the compile refuses it
    first, naming the op and the line, and the interpreter survives. The same
    module with a valid reassociation compiles and runs."""
    text = (
        "func.func @step(%x: tensor<4xf32>) -> tensor<2x2xf32> {\n"
        "  %y = tensor.expand_shape %x [[INDICES]] output_shape [2, 2]"
        " : tensor<4xf32> into tensor<2x2xf32>\n"
        "  return %y : tensor<2x2xf32>\n}\n"
    )
    with pytest.raises(errors.ParseError,
                       match=r"<string>:2: 'tensor.expand_shape' reassociation index -1 "):
        compile_cpu(text.replace("INDICES", "-1, 1"), tmp_path / "a")
    path = compile_cpu(text.replace("INDICES", "0, 1"), tmp_path / "b")
    x = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_array_equal(CpuArtifact(path).run([x]).outputs[0], x.reshape(2, 2))
