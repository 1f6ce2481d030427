"""Token counts per message, the same numbers as the TypeScript client's
(src/compaction/token-counter.ts and tokens.ts): for an OpenAI model the model's BPE encoding
(``o200k_base`` or ``cl100k_base``) over every text of the message in the lineage's
dialect (``dialects.message_texts``) plus
``MESSAGE_OVERHEAD_TOKENS``; for any other model ``None``, and ``session_append`` stores its
estimate (the same number as the TypeScript estimate; contract/vectors/token-estimates.json).

The encodings run on ``tiktoken`` (OpenAI's own BPE, a Rust extension). tiktoken would
download its rank files at run time; here they are built from the ranks the TypeScript
client uses (gpt-tokenizer's, in node_modules) by ``npm run python:ranks`` into
``session_compaction/ranks/`` and checked against the SHA-256 of OpenAI's published files
before use. contract/vectors/token-counts.json holds the counts both languages must produce.
"""

from __future__ import annotations

import base64
import hashlib
import pathlib
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .dialects import message_texts as dialect_texts
from .errors import TokenizerUnavailableError

TokenizerName = Literal["o200k_base", "cl100k_base", "estimate"]

#: Per-message framing overhead (MESSAGE_OVERHEAD_TOKENS in src/compaction/tokens.ts).
MESSAGE_OVERHEAD_TOKENS = 4

RANKS_DIR = pathlib.Path(__file__).resolve().parent / "ranks"

_O200K = re.compile(r"^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|codex-)")
_CL100K = re.compile(r"^(gpt-4|gpt-3\.5|gpt-35)")
_OPENAI_PREFIX = re.compile(r"^openai/")

# From tiktoken_ext/openai_public.py (tiktoken 0.14): the split patterns, special tokens and
# the SHA-256 of the rank files OpenAI publishes.
_ENCODINGS: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    },
    "cl100k_base": {
        "pat_str": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    },
}


def tokenizer_for(model: str | None) -> TokenizerName:
    """Which encoding an OpenAI model uses; ``"estimate"`` for any other model (tokenizerFor)."""
    if not model:
        return "estimate"
    name = _OPENAI_PREFIX.sub("", model.lower())
    if _O200K.match(name):
        return "o200k_base"
    if _CL100K.match(name):
        return "cl100k_base"
    return "estimate"


def message_texts(message: Mapping[str, Any], dialect: str = "openai-chat") -> list[str]:
    """Every non-empty text of a message a provider counts, in the lineage's dialect
    (``texts`` of src/compaction/dialects). Tolerant of malformed messages: session_append
    refuses those with a typed error."""
    return [t for t in dialect_texts(message, dialect) if t]


_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def _encoding(name: str) -> Any:
    """The tiktoken Encoding, built once from the rank file (a few MB) on first use."""
    with _lock:
        found = _loaded.get(name)
        if found is not None:
            return found
        spec = _ENCODINGS[name]
        path = RANKS_DIR / f"{name}.tiktoken"
        try:
            data = path.read_bytes()
        except OSError as error:
            raise TokenizerUnavailableError(name, f"cannot read {path} ({error.strerror})") from error
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec["sha256"]:
            raise TokenizerUnavailableError(name, f"{path} has SHA-256 {digest}, not that of OpenAI's file ({spec['sha256']})")
        try:
            import tiktoken
        except ImportError as error:
            raise TokenizerUnavailableError(name, "the tiktoken package is not installed") from error
        ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
        found = tiktoken.Encoding(name=name, pat_str=spec["pat_str"], mergeable_ranks=ranks, special_tokens=spec["special_tokens"])
        _loaded[name] = found
        return found


def count_tokens(tokenizer: TokenizerName, message: Mapping[str, Any], dialect: str = "openai-chat") -> int:
    """A message's tokens with an OpenAI encoding, as tokenCounterFor(model, dialect).count does."""
    if tokenizer == "estimate":
        raise ValueError("the estimate is session_append's: pass no counts")
    enc = _encoding(tokenizer)
    return MESSAGE_OVERHEAD_TOKENS + sum(len(enc.encode_ordinary(text)) for text in message_texts(message, dialect))


def token_counts(model: str | None, messages: Sequence[Mapping[str, Any]], dialect: str = "openai-chat") -> list[int] | None:
    """The counts the TypeScript client stores for these messages in a lineage of ``model``
    and ``dialect``, or ``None`` where it stores the estimate (which session_append computes
    itself)."""
    return token_counts_with(tokenizer_for(model), messages, dialect)


def token_counts_with(tokenizer: TokenizerName, messages: Sequence[Mapping[str, Any]], dialect: str = "openai-chat") -> list[int] | None:
    if tokenizer == "estimate":
        return None
    return [count_tokens(tokenizer, m if isinstance(m, Mapping) else {}, dialect) for m in messages]
