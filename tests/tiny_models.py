"""Tiny model files the tests write themselves (importable: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import numpy as np
import pytest


def write_tiny_llama_gguf(path, *, vocab=64, hidden=32, layers=2, heads=4, kv=2, ff=64):
    """A random-weight Llama GGUF (f32 tensors, byte-level BPE tokenizer metadata)."""
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny")
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_dimension_count(hidden // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_tokenizer_model("gpt2")
    toks = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    toks += [chr(ord("a") + i) for i in range(26)] + ["Ġ", "ab"]
    toks += [f"t{i}" for i in range(vocab - len(toks))]
    w.add_token_list(toks)
    w.add_token_types([3, 3, 3] + [1] * (vocab - 3))
    w.add_token_merges(["a b"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    rng = np.random.default_rng(0)

    def rand(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    hd = hidden // heads
    w.add_tensor("token_embd.weight", rand(vocab, hidden))
    w.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", rand(hidden, hidden))
        w.add_tensor(f"blk.{i}.attn_k.weight", rand(kv * hd, hidden))
        w.add_tensor(f"blk.{i}.attn_v.weight", rand(kv * hd, hidden))
        w.add_tensor(f"blk.{i}.attn_output.weight", rand(hidden, hidden))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rand(ff, hidden))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rand(ff, hidden))
        w.add_tensor(f"blk.{i}.ffn_down.weight", rand(hidden, ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
