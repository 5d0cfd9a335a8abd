"""Generated text tokenizes to the counts the simulator reports (any client with the same tokenizer).

The reference is the real ``tokenizers`` library (a test dependency, pinned in
requirements-dev.txt); the simulator itself reads tokenizer.json in pure Python.
"""

import json
import random

import pytest

import tokenizers  # the reference; a missing one must fail, not skip

from sglang_sim import vocab
from sglang_sim.testing import Client, SimProcess

CORPUS = (
    "The server decodes a batch of requests at every step. Speculative decoding drafts several tokens "
    "and verifies them in one pass; the accept length is the tokens a verify pass keeps. Memory for the "
    "KV cache limits how many requests run at once. 12 GPUs, 3.5 ms per step, throughput_tok_s = 1234! "
) * 40


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A byte-level BPE trained here (GPT-2 style pre-tokenizer), saved as tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    words = CORPUS.split() + ["%s%s" % (a, b) for a in "abcdefghij" for b in "klmnopqrst"]
    rng = random.Random(0)
    text = [CORPUS] + [" ".join(rng.choice(words) for _word in range(50)) for _line in range(200)]
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path_factory.mktemp("tok")
    tok.save(str(path / "tokenizer.json"))
    return path


def reference(tokenizer_dir):
    return tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))


def test_pure_python_count_matches_the_tokenizers_library(tokenizer_dir):
    ref = reference(tokenizer_dir)
    vocabulary, note = vocab.load(str(tokenizer_dir), 4.0)
    assert note is None and vocabulary.source.endswith("tokenizer.json")
    assert len(vocabulary.words) >= 8
    samples = [CORPUS[:500], "Hello,  world!\n\nfoo_bar 42x  ", "  leading and trailing  ", "über naïve café"]
    for text in samples:
        assert vocabulary.count(text) == len(ref.encode(text, add_special_tokens=False).ids), text
    for word in vocabulary.words:
        assert len(ref.encode(" " + word, add_special_tokens=False).ids) == 1
        assert len(ref.encode(word, add_special_tokens=False).ids) == 1


def test_unusable_tokenizer_falls_back_with_a_reason(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {}}}))
    vocabulary, note = vocab.load(str(tmp_path), 4.0)
    assert vocabulary.words == list(vocab.FALLBACK_WORDS) and "WordPiece" in note
    vocabulary, note = vocab.load("/nonexistent/model", 4.0)
    assert vocabulary.source is None and note is None  # no tokenizer.json: one common word per token
    assert vocabulary.count("a" * 40) == 10  # the profile's characters per token


@pytest.mark.parametrize("flag", ["--tokenizer-path", "--model-path"])
def test_streamed_text_retokenizes_to_the_reported_counts(tokenizer_dir, flag):
    ref = reference(tokenizer_dir)
    args = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", flag, str(tokenizer_dir)]
    with SimProcess(args, profile="fast", model_path="/models/sim") as sim:
        client = Client(sim.url)
        prompt = CORPUS[:700]
        chunks = client.sse("/v1/completions", {
            "prompt": prompt, "max_tokens": 64, "ignore_eos": True, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}})
        content = [c for c in chunks if c["choices"]]
        previous = 0
        for c in content:
            # what bench_serving does: re-tokenize each chunk's text on its own
            piece = c["choices"][0]["text"]
            assert len(ref.encode(piece, add_special_tokens=False).ids) == c["usage"]["completion_tokens"] - previous
            previous = c["usage"]["completion_tokens"]
        text = "".join(c["choices"][0]["text"] for c in content)
        assert len(ref.encode(text, add_special_tokens=False).ids) == 64
        assert chunks[-1]["usage"]["prompt_tokens"] == len(ref.encode(prompt, add_special_tokens=False).ids)
        chat = client.sse("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "ignore_eos": True, "stream": True})
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chat)
        assert len(ref.encode(text, add_special_tokens=False).ids) == 40
        assert "single-token words of" in sim.output()
