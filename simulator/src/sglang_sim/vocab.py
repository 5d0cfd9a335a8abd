"""The words the simulator generates, and how it counts prompt tokens.

A client that re-tokenizes the streamed text (``sglang.bench_serving``'s OpenAI backends split
each chunk's gap by the chunk's token count) must count exactly the tokens the server reports,
or its ITL is wrong by the ratio. So:

- Given a tokenizer.json (``--tokenizer-path``, or the model directory, holding one), the
  simulator emits only whole words that are single tokens of that vocabulary both with and
  without a leading space, and that the tokenizer's own pre-tokenizer keeps apart; any client
  using the same tokenizer counts one token per word. Prompts are counted with the same
  byte-level BPE (pure Python: no ``tokenizers`` wheel needed on the test hosts).
- Without one: about one common English word per token (the fallback list below), and prompts
  are counted at the profile's characters per token.

Supported tokenizer.json: BPE models with a ByteLevel pre-tokenizer (GPT-2, Llama 3, Qwen and
most current models). Anything else falls back, and the server logs why.
"""

import json
import os
import re

# One short word per token: plain lowercase ASCII, so chunks need no JSON escaping.
FALLBACK_WORDS = (
    "the of and to in is that for it as with was on be by at this are from or an which have not "
    "but had they his were one all we can her has there been if more when will would who so no "
    "model token server batch draft step decode cache graph memory speed tensor layer kernel value "
    "data time rate queue request stream chunk throughput latency accept verify sample greedy"
).split()

# How many vocabulary words to cycle through (enough to look like text; lowest ids first, the
# most frequent merges of a trained BPE).
MAX_WORDS = 256

# GPT-2's pre-tokenizer regex (tokenizers' ByteLevel use_regex), with \p{L} / \p{N} spelt for
# Python's re: letters are [^\W\d_], digits \d.
_GPT2_SPLIT = re.compile(r"""'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def _bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map (the ByteLevel alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    chars = keep[:]
    extra = 0
    for byte in range(256):
        if byte not in keep:
            keep.append(byte)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, [chr(c) for c in chars]))


_BYTE_CHARS = _bytes_to_unicode()


class TokenizerUnsupported(Exception):
    pass


class ByteLevelBPE(object):
    """Encodes (counts) text as a ByteLevel BPE tokenizer.json does, for plain text."""

    def __init__(self, doc):
        model = doc.get("model") or {}
        if model.get("type") != "BPE":
            raise TokenizerUnsupported("model type %r (only BPE is read)" % model.get("type"))
        if not _has_byte_level(doc.get("pre_tokenizer")):
            raise TokenizerUnsupported("pre-tokenizer without ByteLevel")
        self.vocab = model.get("vocab") or {}
        self.ignore_merges = bool(model.get("ignore_merges"))
        self.ranks = {}
        for rank, merge in enumerate(model.get("merges") or []):
            pair = tuple(merge.split(" ", 1)) if isinstance(merge, str) else tuple(merge)
            self.ranks.setdefault(pair, rank)
        self.cache = {}

    def bpe(self, piece):
        """Tokens of one pre-token (already mapped to the byte alphabet)."""
        cached = self.cache.get(piece)
        if cached is not None:
            return cached
        if self.ignore_merges and piece in self.vocab:
            parts = [piece]
        else:
            parts = list(piece)
            ranks = self.ranks
            while len(parts) > 1:
                best = None
                for i in range(len(parts) - 1):
                    rank = ranks.get((parts[i], parts[i + 1]))
                    if rank is not None and (best is None or rank < best[0]):
                        best = (rank, i)
                if best is None:
                    break
                i = best[1]
                parts[i:i + 2] = [parts[i] + parts[i + 1]]
        if len(self.cache) < 200000:
            self.cache[piece] = parts
        return parts

    def count(self, text):
        total = 0
        for match in _GPT2_SPLIT.findall(text):
            total += len(self.bpe("".join(_BYTE_CHARS[b] for b in match.encode("utf-8"))))
        return total

    def single_token_words(self, limit=MAX_WORDS):
        """Words w (lowercase ASCII, 2+ letters) such that both " w" and "w" are one token each."""
        space = _BYTE_CHARS[ord(" ")]
        found = []
        for token, _tid in sorted(self.vocab.items(), key=lambda kv: kv[1]):
            if not token.startswith(space):
                continue
            word = token[1:]
            if len(word) < 2 or not word.isascii() or not word.isalpha() or not word.islower():
                continue
            if self.bpe(token) == [token] and self.bpe(word) == [word]:
                found.append(word)
                if len(found) >= limit:
                    break
        return found


def _has_byte_level(pre):
    if not isinstance(pre, dict):
        return False
    if pre.get("type") == "ByteLevel":
        return True
    if pre.get("type") == "Sequence":
        return any(_has_byte_level(p) for p in pre.get("pretokenizers") or [])
    return False


class Vocabulary(object):
    """``words``: what the engine emits (each one token); ``count(text)``: prompt tokens."""

    def __init__(self, words, counter, source):
        self.words = words
        self.spaced = [" " + w for w in words]
        self.counter = counter
        self.source = source

    def count(self, text):
        return self.counter(text) if text else 0


def tokenizer_json_path(path):
    """The tokenizer.json a --tokenizer-path (file or directory, as SGLang takes it) points at, or None."""
    if not path:
        return None
    if os.path.isfile(path) and path.endswith(".json"):
        return path
    candidate = os.path.join(path, "tokenizer.json")
    return candidate if os.path.isfile(candidate) else None


def fallback(chars_per_token):
    def counter(text):
        return max(1, int(-(-len(text) // chars_per_token))) if text else 0
    return Vocabulary(list(FALLBACK_WORDS), counter, None)


def load(tokenizer_path, chars_per_token):
    """(Vocabulary, note or None). The note says why a tokenizer.json given was not used."""
    path = tokenizer_json_path(tokenizer_path)
    if path is None:
        return fallback(chars_per_token), None
    try:
        with open(path, "rb") as handle:
            doc = json.loads(handle.read().decode("utf-8"))
        bpe = ByteLevelBPE(doc)
        words = bpe.single_token_words()
        if len(words) < 8:
            raise TokenizerUnsupported("only %d words are single tokens with and without a leading space" % len(words))
    except (OSError, ValueError, TokenizerUnsupported) as exc:
        return fallback(chars_per_token), "%s not used (%s); generating about one word per token" % (path, exc)
    return Vocabulary(words, bpe.count, path), None
