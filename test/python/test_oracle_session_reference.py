"""A reference (float64) Session carries its state in float64 across steps."""

import numpy as np

from poot_mlir import oracle
from poot_mlir.examples.decoder import DecoderConfig, build_decoder, init_state, init_weights


def test_reference_session_steps_in_float64():
    config = DecoderConfig(cap=8)
    module = build_decoder(config).finish()
    weights = init_weights(config, 0)
    reference = oracle.Session(module, init_state(config), reference=True)
    single = oracle.Session(module, init_state(config))
    for step in range(3):
        inputs = {"pos": np.int32(step), "token": np.array([[1]], np.int32), **weights}
        wide = reference.step(inputs).named["logits"]
        narrow = single.step(inputs).named["logits"]
        assert wide.dtype == np.float64
        np.testing.assert_allclose(narrow, wide, rtol=1e-4, atol=1e-5)
    assert all(v.dtype == np.float64 for v in reference.state.values())
