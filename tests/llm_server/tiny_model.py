"""Writes tiny GGUF models for llama-server: llama architecture, random weights, 0.5 MB.

No weights can be downloaded on this machine, so the real-server suite makes its own model with
the ``gguf`` package: 2 layers, width 64, a byte-level BPE vocabulary (the 256 GPT-2 byte
symbols, so any prompt tokenizes, plus the ChatML and Hermes tool-call tokens) and a Qwen2.5 /
Hermes chat template that renders tools and ``<tool_call>`` blocks, so llama-server's ``--jinja``
tool-call parser and grammar work on it. The template writes a call as
``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, with no newline after the opening tag:
the server learns the call's opening text from the template, and its grammar lets the reply's
text go on until that exact text appears, so with ``<tool_call>\n`` a model that repeats the
lifted ``<tool_call>`` token would write text forever.

What the model says is random text, but a few logits are under control: hidden dimension 0 of
the residual stream is held constant (the embeddings have 1.0 there, every layer's output
projections have a zero row there), so after the final RMS norm it is about ``sqrt(width)``
whatever the input, and column 0 of the output matrix sets a fixed logit per token:

- end of turn (``<|im_end|>``): ``eos_logit`` (about 4.5: stops after a few tokens; -30: never);
- ``<tool_call>``: ``TOOL_CALL_LOGIT`` (-24: never, unless a request's ``logit_bias`` lifts it);
- byte tokens outside printable ASCII and the other control tokens: -40, so the model only ever
  writes printable ASCII (never invalid UTF-8) and never opens a ChatML turn of its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = [
    "EOS",
    "STOPPER_EOS_LOGIT",
    "NEVER_EOS_LOGIT",
    "TOOL_CALL",
    "TOOL_CALL_LOGIT",
    "Vocab",
    "write_model",
]

WIDTH = 64
LAYERS = 2
HEADS = 4
FFN = 128
EOS = "<|im_end|>"
TOOL_CALL = "<tool_call>"
TOOL_CALL_LOGIT = -24.0
STOPPER_EOS_LOGIT = 4.5
NEVER_EOS_LOGIT = -30.0
_BANNED_LOGIT = -40.0

_SPECIAL = [  # (text, token type); CONTROL = 3, USER_DEFINED = 4
    ("<|endoftext|>", 3),
    ("<|im_start|>", 3),
    (EOS, 3),
    (TOOL_CALL, 4),
    ("</tool_call>", 4),
]

# Qwen2.5's tool template in short (same text around the tools and calls).
CHAT_TEMPLATE = r"""{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}{%- endif %}
{%- endif %}
{%- for message in messages %}
{%- if message.role == "user" or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
{%- elif message.role == "assistant" %}
{{- '<|im_start|>' + message.role }}
{%- if message.content %}{{- '\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\n<tool_call>{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == "tool" %}
{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != "tool" %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\n<tool_response>\n' }}{{- message.content }}{{- '\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != "tool" %}{{- '<|im_end|>\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"""


def _byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table: the symbol of each byte 0..255."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    codes = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + n)
            n += 1
    table = dict(zip(printable, codes))
    return [chr(table[b]) for b in range(256)]


class Vocab:
    """Token texts and ids of the tiny model."""

    def __init__(self) -> None:
        self.tokens: list[str] = _byte_symbols() + [text for text, _ in _SPECIAL]
        self.types: list[int] = [1] * 256 + [kind for _, kind in _SPECIAL]
        self.ids = {text: i for i, text in enumerate(self.tokens)}

    @property
    def eos(self) -> int:
        return self.ids[EOS]

    @property
    def tool_call(self) -> int:
        return self.ids[TOOL_CALL]

    def __len__(self) -> int:
        return len(self.tokens)


def write_model(path: str | Path, *, eos_logit: float, seed: int = 0, context: int = 4096) -> Path:
    """Writes one model to ``path`` and returns the path (well under a second)."""
    import gguf

    path = Path(path)
    vocab = Vocab()
    n_vocab = len(vocab)
    rng = np.random.default_rng(seed)
    f32 = np.float32

    def rand(*shape: int, std: float) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(f32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("agentcore-fx tiny test model")
    writer.add_context_length(context)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(0)  # all F32
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    # llama.cpp wants a merges list: one harmless merge of two space symbols.
    space = _byte_symbols()[ord(" ")]
    writer.add_token_merges([f"{space} {space}"])
    writer.add_bos_token_id(vocab.ids["<|endoftext|>"])
    writer.add_eos_token_id(vocab.eos)
    writer.add_pad_token_id(vocab.ids["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    emb = rand(n_vocab, WIDTH, std=0.05)
    emb[:, 0] = 1.0
    writer.add_tensor("token_embd.weight", emb)
    for i in range(LAYERS):
        b = f"blk.{i}."
        writer.add_tensor(b + "attn_norm.weight", np.ones(WIDTH, dtype=f32))
        writer.add_tensor(b + "attn_q.weight", rand(WIDTH, WIDTH, std=0.1))
        writer.add_tensor(b + "attn_k.weight", rand(WIDTH, WIDTH, std=0.1))
        writer.add_tensor(b + "attn_v.weight", rand(WIDTH, WIDTH, std=0.1))
        out = rand(WIDTH, WIDTH, std=0.01)
        out[0, :] = 0.0  # keeps dimension 0 of the residual stream constant
        writer.add_tensor(b + "attn_output.weight", out)
        writer.add_tensor(b + "ffn_norm.weight", np.ones(WIDTH, dtype=f32))
        writer.add_tensor(b + "ffn_gate.weight", rand(FFN, WIDTH, std=0.1))
        writer.add_tensor(b + "ffn_up.weight", rand(FFN, WIDTH, std=0.1))
        down = rand(WIDTH, FFN, std=0.01)
        down[0, :] = 0.0
        writer.add_tensor(b + "ffn_down.weight", down)
    writer.add_tensor("output_norm.weight", np.ones(WIDTH, dtype=f32))

    # Dimension 0 is ~sqrt(WIDTH) after the final norm: column 0 sets each token's base logit.
    scale = float(np.sqrt(WIDTH))
    head = rand(n_vocab, WIDTH, std=0.5)
    head[:, 0] = 0.0
    allowed = {ord(c) for c in (" \n")} | set(range(ord("!"), ord("~") + 1))
    for b in range(256):
        if b not in allowed:
            head[b, :] = 0.0
            head[b, 0] = _BANNED_LOGIT / scale
    for text, _ in _SPECIAL:
        tid = vocab.ids[text]
        head[tid, :] = 0.0
        head[tid, 0] = _BANNED_LOGIT / scale
    head[vocab.eos, 0] = eos_logit / scale
    head[vocab.tool_call, 0] = TOOL_CALL_LOGIT / scale
    writer.add_tensor("output.weight", head)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
