"""The README's main job runs end to end: trace, fuse, compile for the CPU,
decode, and every step matches the float64 oracle."""

from poot_mlir.examples import decode


def test_decode_example_runs_and_matches_oracle(capsys):
    assert decode.main(["--steps", "5", "--layers", "2", "--cap", "16"]) == 0
    out = capsys.readouterr().out
    assert "fused 2 attention ops" in out
    assert "every step matched the float64 oracle" in out
