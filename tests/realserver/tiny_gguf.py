"""Write a tiny llama-architecture GGUF model from scratch: no downloads, deterministic, 0.48 MB.

The model is real as far as llama.cpp is concerned — llama architecture, 2 layers, hidden size 64,
4 heads, a byte-level BPE vocabulary (the 256 GPT-2 byte tokens, 21 merges, 3 control tokens) and
a ChatML chat template — but its weights are seeded random numbers, so its text is meaningless.

The output layer is shaped so answers land on option labels: dimension 0 of the residual stream
is a constant "bias channel" (every embedding holds ``BIAS_CHANNEL`` there and no layer writes to
it), and each token's output row puts its bias in that column. Label tokens (``A``..``D`` with and
without a leading space, ``Yes``/``No``) get the largest bias, digits a smaller one, everything
else none; the random rest of the network decides between labels, so different prompts get
different answers with real, non-degenerate top-k logprobs.

Run ``python -m tests.realserver.tiny_gguf OUT.gguf`` to write one by hand.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ARCH = "llama"
N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_FF = 128
N_CTX_TRAIN = 2048
DEFAULT_SEED = 20240611

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

CONTROL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

# Merges in rank order, written with real characters (a leading space is a real space here).
MERGES: tuple[tuple[str, str], ...] = (
    (" ", "A"), (" ", "B"), (" ", "C"), (" ", "D"),
    ("Y", "e"), ("Ye", "s"), ("N", "o"), (" ", "Yes"), (" ", "No"),
    *((" ", d) for d in "0123456789"),
    ("1", "0"), ("10", "0"),
)

# Output bias per token text (before the network's own, context-dependent contribution).
LABEL_BIAS: dict[str, float] = {
    **{t: 6.0 for t in ("A", "B", "C", "D", " A", " B", " C", " D")},
    **{t: 4.5 for t in ("Yes", "No", " Yes", " No")},
    **{t: 3.0 for t in "0123456789"},
    **{" " + d: 3.0 for d in "0123456789"},
    "10": 3.0, "100": 3.0,
}
BIAS_CHANNEL = 4.0  # constant value of residual dimension 0
# Standard deviations of the seeded normal weights.
EMBD_STD = 1.0
QK_STD = 0.5  # sharp attention: the answer depends on a few prompt tokens
VO_STD = 0.125  # ~1/sqrt(N_EMBD): each layer adds about as much as the embedding holds
FFN_STD = 0.125
OUT_STD = 0.2
BIAS_GAIN = 1.5  # output weight on the bias channel per unit of LABEL_BIAS


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable unicode characters (space → 'Ġ', '\\n' → 'Ċ')."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def encode_text(text: str) -> str:
    """A token's text in GPT-2 byte-unicode form, as stored in the GGUF vocabulary."""
    table = byte_to_unicode()
    return "".join(table[b] for b in text.encode("utf-8"))


@dataclass(frozen=True)
class TinyVocab:
    """The vocabulary as written: tokens (byte-unicode form), their types, merges and special ids."""

    tokens: tuple[str, ...]
    token_types: tuple[int, ...]
    merges: tuple[str, ...]
    texts: tuple[str, ...]  # real text of each token ('' for control tokens)
    bos_id: int
    eos_id: int

    def id_of(self, text: str) -> int:
        """Id of the token whose real text is ``text``."""
        return self.texts.index(text)


def build_vocab() -> TinyVocab:
    """256 byte tokens (id = byte value), one token per merge, then the ChatML control tokens."""
    from gguf import TokenType

    table = byte_to_unicode()
    tokens = [table[b] for b in range(256)]
    texts = [bytes([b]).decode("latin-1") if b < 128 else "" for b in range(256)]
    types = [int(TokenType.NORMAL)] * 256
    merges: list[str] = []
    for left, right in MERGES:
        merges.append(f"{encode_text(left)} {encode_text(right)}")
        merged = left + right
        if encode_text(merged) in tokens:
            raise ValueError(f"merge {left!r}+{right!r} repeats token {merged!r}")
        tokens.append(encode_text(merged))
        texts.append(merged)
        types.append(int(TokenType.NORMAL))
    for control in CONTROL_TOKENS:
        tokens.append(control)
        texts.append("")
        types.append(int(TokenType.CONTROL))
    return TinyVocab(
        tokens=tuple(tokens),
        token_types=tuple(types),
        merges=tuple(merges),
        texts=tuple(texts),
        bos_id=tokens.index("<|endoftext|>"),
        eos_id=tokens.index("<|im_end|>"),
    )


def build_weights(vocab: TinyVocab, seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """Seeded weights in llama.cpp's tensor names; numpy shapes are (out, in) like PyTorch."""
    rng = np.random.default_rng(seed)
    n_vocab = len(vocab.tokens)

    def normal(shape: tuple[int, ...], std: float) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def no_write_to_bias_channel(w: np.ndarray) -> np.ndarray:
        w[0, :] = 0.0  # row 0 of an output projection feeds residual dimension 0
        return w

    embd = normal((n_vocab, N_EMBD), EMBD_STD)
    embd[:, 0] = BIAS_CHANNEL
    weights: dict[str, np.ndarray] = {"token_embd.weight": embd}
    for layer in range(N_LAYER):
        p = f"blk.{layer}."
        weights[p + "attn_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
        weights[p + "attn_q.weight"] = normal((N_EMBD, N_EMBD), QK_STD)
        weights[p + "attn_k.weight"] = normal((N_EMBD, N_EMBD), QK_STD)
        weights[p + "attn_v.weight"] = normal((N_EMBD, N_EMBD), VO_STD)
        weights[p + "attn_output.weight"] = no_write_to_bias_channel(normal((N_EMBD, N_EMBD), VO_STD))
        weights[p + "ffn_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
        weights[p + "ffn_gate.weight"] = normal((N_FF, N_EMBD), FFN_STD)
        weights[p + "ffn_up.weight"] = normal((N_FF, N_EMBD), FFN_STD)
        weights[p + "ffn_down.weight"] = no_write_to_bias_channel(normal((N_EMBD, N_FF), FFN_STD))
    weights["output_norm.weight"] = np.ones(N_EMBD, dtype=np.float32)
    out = normal((n_vocab, N_EMBD), OUT_STD)
    out[:, 0] = 0.0
    for text, bias in LABEL_BIAS.items():
        out[vocab.id_of(text), 0] = bias * BIAS_GAIN
    weights["output.weight"] = out
    return weights


def write_tiny_gguf(path: Path, *, seed: int = DEFAULT_SEED, name: str = "tiny") -> Path:
    """Write the model to ``path`` (parent directories must exist) and return the path."""
    from gguf import GGUFWriter, LlamaFileType

    vocab = build_vocab()
    writer = GGUFWriter(str(path), ARCH)
    writer.add_name(name)
    writer.add_file_type(int(LlamaFileType.ALL_F32))
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(vocab.tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(list(vocab.tokens))
    writer.add_token_types(list(vocab.token_types))
    writer.add_token_merges(list(vocab.merges))
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(vocab.eos_id)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML_TEMPLATE)
    for tensor_name, data in build_weights(vocab, seed).items():
        writer.add_tensor(tensor_name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.realserver.tiny_gguf OUT.gguf", file=sys.stderr)
        return 2
    out = write_tiny_gguf(Path(argv[0]))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
