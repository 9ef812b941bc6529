"""The 2026 model families: hybrid linear attention (Gated DeltaNet), state-space layers (Mamba-2),
sparse attention (DSA), per-layer head geometries, multimodal wrappers, and the MTP layer count."""

from __future__ import annotations

import pytest

from shardbudget.model import config_from_dict, load_model


def test_mtp_layers_are_read_under_either_spelling():
    # DeepSeek-V3 config.json: "num_nextn_predict_layers": 1; Qwen3.5 text_config: "mtp_num_hidden_layers".
    assert load_model("deepseek-v3").mtp_layers == 1
    assert load_model("llama-3.1-8b").mtp_layers == 0
    raw = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100, "mtp_num_hidden_layers": 3}
    assert config_from_dict(raw, name="t").mtp_layers == 3
    with pytest.raises(Exception, match="num_nextn_predict_layers"):
        config_from_dict({**raw, "num_nextn_predict_layers": -1}, name="t")
