#!/bin/bash
# Builds a reference venv of the real SGLang 0.5.23, pinned below (its argument parser, its sources and its
# bench_serving client), without the GPU server stack. Usage: sglang-reference-venv.sh [DIR].
# Seen working 2026-11-29 and 2026-12-01 (about 6 GB). The machines reach no model hub: give
# bench_serving a local tokenizer, e.g. --tokenizer DIR (a local tokenizer.json directory).
set -eu
V=${1:-${TMPDIR:-/tmp}/sgl}
"${PYTHON:-python3}" -m venv "$V"  # SGLang 0.5.23 needs Python >= 3.11: PYTHON=python3.11 ...
"$V/bin/pip" install -q --no-deps sglang==0.5.23
"$V/bin/pip" install -q aiohttp msgspec numpy orjson requests tqdm transformers tokenizers psutil pybase64 \
  torch==2.14.1 torchvision==0.29.1 pillow starlette pyzmq ipython datasets apache-tvm-ffi sentencepiece compressed-tensors gguf
"$V/bin/python" -m sglang.bench_serving --help >/dev/null && echo "sglang.bench_serving ready in $V"
# Use with: --backend sglang --base-url http://127.0.0.1:PORT --tokenizer ../shared/tools/tokenizer
#           --dataset-name random --random-input-len 128 --random-output-len 256 --num-prompts N --max-concurrency C
