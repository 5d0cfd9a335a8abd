# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn the journal of a failed SGLang start into a diagnosis.

Private to llmops.sglang. Stdlib only, Python 3.8+: it runs on the GPU host.

Patterns and remedies follow SGLang 0.5.x (python/sglang/srt/...); the messages
have been stable on master (2026) as well.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Order matters: the first entry whose pattern occurs anywhere in the journal wins.
# "Capture cuda graph failed" usually wraps a CUDA OOM, so it must come before the
# generic out-of-memory entry; "Not enough memory" is SGLang's own KV-pool check and
# is the most specific of all.
DIAGNOSES = (
    {
        'key': 'not_enough_memory',
        # model_runner.py (0.5.x): raise RuntimeError("Not enough memory. Please try to
        # increase --mem-fraction-static.")
        'pattern': re.compile(r'Not enough memory\. Please try to increase --mem-fraction-static'),
        'message': 'The KV cache pool got no memory: the weights plus the memory reserved for '
                   'speculative decoding and CUDA graphs left nothing for it.',
        'remedy': 'SGLang says: "Please try to increase --mem-fraction-static." Alternatively '
                  'lower --speculative-num-steps / --speculative-num-draft-tokens, '
                  '--cuda-graph-max-bs or --context-length.',
    },
    {
        'key': 'unbalanced_memory',
        # model_runner.py (0.5.x): "The memory capacity is unbalanced. Some GPUs may be
        # occupied by other processes. min_per_gpu_memory=..."
        'pattern': re.compile(r'The memory capacity is unbalanced'),
        'message': 'The GPUs have different amounts of free memory: some GPU is still held by '
                   'another process (often a previous SGLang that has not exited yet).',
        'remedy': 'SGLang says: "Some GPUs may be occupied by other processes." Check '
                  'nvidia-smi, stop whatever holds the GPUs (or wait for the old server to exit) '
                  'and start again.',
    },
    {
        'key': 'cuda_graph_capture_failed',
        # cuda_graph_runner.py (0.5.x): raise Exception(f"Capture cuda graph failed: {e}\n"
        # CUDA_GRAPH_CAPTURE_FAILED_MSG)
        'pattern': re.compile(r'Capture cuda graph failed'),
        'message': 'CUDA graph capture failed while the server was starting.',
        'remedy': 'SGLang says: "Possible solutions: 1. set --mem-fraction-static to a smaller '
                  'value (e.g., 0.8 or 0.7) 2. set --cuda-graph-max-bs to a smaller value '
                  '(e.g., 16) 3. disable torch compile by not using --enable-torch-compile '
                  '4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge '
                  'performance loss)"',
    },
    {
        'key': 'cuda_out_of_memory',
        # torch: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ..."
        # (older torch: torch.cuda.OutOfMemoryError)
        'pattern': re.compile(r'CUDA out of memory|OutOfMemoryError'),
        'message': 'A CUDA allocation failed: the GPU ran out of memory after the KV cache '
                   'was sized.',
        'remedy': 'Leave more memory outside the static pool: lower --mem-fraction-static, '
                  'lower --cuda-graph-max-bs or --max-running-requests, or shorten '
                  '--chunked-prefill-size.',
    },
)

UNKNOWN = {
    'key': 'unknown',
    'message': 'The server exited during startup and the journal shows no known cause.',
    'remedy': 'Read the journal lines below (journalctl -u UNIT) for the traceback.',
}

TIMEOUT = {
    'key': 'timeout',
    'message': 'The server did not become ready within the timeout.',
    'remedy': 'Big models need minutes to load and capture CUDA graphs: raise '
              'sglang_service_ready_timeout if the journal shows progress, otherwise read the '
              'journal for where it hangs.',
}

VERIFICATION_MISMATCH = {
    'key': 'verification_mismatch',
    'message': 'The running server does not report the configuration that was deployed.',
    'remedy': 'Check that the unit was reloaded and that nothing else answers on the port; '
              'compare the mismatches below with the ExecStart line.',
}

DIAGNOSIS_KEYS = tuple(d['key'] for d in DIAGNOSES) + (
    UNKNOWN['key'], TIMEOUT['key'], VERIFICATION_MISMATCH['key'])


def _public(entry):
    return {'key': entry['key'], 'message': entry['message'], 'remedy': entry['remedy']}


def diagnose(lines):
    """Return the diagnosis dict (key, message, remedy, evidence) for journal ``lines``.

    ``evidence`` is the first journal line that matched, or None when nothing matched.
    """
    for entry in DIAGNOSES:
        for line in lines:
            if entry['pattern'].search(line):
                result = _public(entry)
                result['evidence'] = line.strip()
                return result
    result = _public(UNKNOWN)
    result['evidence'] = None
    return result


def timeout_diagnosis():
    result = _public(TIMEOUT)
    result['evidence'] = None
    return result


def mismatch_diagnosis(mismatches):
    """``mismatches`` is a list of dicts with ``key``, ``expected`` and ``actual``."""
    result = _public(VERIFICATION_MISMATCH)
    result['evidence'] = '; '.join(
        '%s: expected %r, server reports %r' % (m['key'], m['expected'], m['actual']) for m in mismatches)
    return result
