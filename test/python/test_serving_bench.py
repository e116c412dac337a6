"""The serving benchmark's own arithmetic (bench/causal_lm_serving.py): the
latency figures it reports beside tokens/s, and its whole path end to end on
the tiny config (the CPU engine beside transformers' generate)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import causal_lm_serving as serving  # noqa: E402


def test_latency_is_first_token_and_gap_per_request() -> None:
    # Two requests: tokens at 10, 12, 14 ms and at 30, 40 ms; one that never
    # produced a token is left out.
    got = serving.latency([[0.010, 0.012, 0.014], [0.030, 0.040], []])
    assert got["ttft_ms_mean"] == pytest.approx(20.0)
    assert got["ttft_ms_p90"] == pytest.approx(30.0)
    assert got["tpot_ms_mean"] == pytest.approx((2.0 + 10.0) / 2)
    assert got["tpot_ms_p90"] == pytest.approx(10.0)
    assert all(math.isnan(v) for v in serving.latency([]).values())


def test_tiny_serving_run_reports_throughput_latency_and_agreement(hf, capsys) -> None:
    import json

    assert serving.main(["--target", "cpu", "--tiny", "--repeat", "1"]) == 0
    row = json.loads(capsys.readouterr().out)
    poot, hf = row["poot"], row["transformers"]
    for side in (poot, hf):
        assert side["tokens_per_s"] > 0
        # (mean <= p90 up to rounding: one batch's rows share their times)
        assert 0 < side["ttft_ms_mean"] <= side["ttft_ms_p90"] * (1 + 1e-9)
        assert 0 < side["tpot_ms_mean"] <= side["tpot_ms_p90"] * (1 + 1e-9)
    # Every request's first token comes before the run ends.
    assert poot["ttft_ms_p90"] <= 1e3 * poot["wall_s"]
    # Greedy on the same fp32 weights: most requests are transformers' tokens
    # exactly (left padding can split a near tie in the batched generate).
    assert row["agreement"]["requests_all_equal"] >= row["requests"] // 2
