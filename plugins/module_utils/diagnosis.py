# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn the journal of a failed SGLang start into a diagnosis.

Private to llmops.sglang. Stdlib only, Python 3.8+: it runs on the GPU host.

Patterns and remedies follow SGLang 0.5.23 (python/sglang/srt/...), the version the
collection targets; every flag a remedy names exists in 0.5.23 (checked in
tests/unit/plugins/module_utils/test_diagnosis.py against the recorded contract).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re

from ansible_collections.llmops.sglang.plugins.module_utils.sglang_contract import FLAGS, SGLANG_VERSION

# Flags that older SGLang releases had and 0.5.23 spells differently.
RENAMED_FLAGS = {
    '--cuda-graph-max-bs': '--cuda-graph-max-bs-decode (and --cuda-graph-max-bs-prefill for prefill graphs)',
}

# argparse's own errors (Python 3.11), printed after the usage line as "sglang serve: error: ..."
# by sglang.srt.server_args.prepare_server_args before anything is loaded.
ARGPARSE_ERROR = re.compile(r'(?:^|\s)[\w. -]+: error: (?P<error>(?:ambiguous option|unrecognized arguments|argument |'
                            r'the following arguments are required|expected ).*)$')
_AMBIGUOUS = re.compile(r'ambiguous option: (?P<flag>--[^\s=]+)(?:=\S*)? could match (?P<candidates>.*)$')
_UNRECOGNIZED = re.compile(r'unrecognized arguments: (?P<words>.*)$')
_BAD_VALUE = re.compile(r"argument (?P<flag>\S+): (?P<what>invalid choice|invalid \S+ value|expected \S+ arguments?)"
                        r"(?:: '(?P<value>.*?)')?(?: \(choose from (?P<choices>.*)\))?")


def _spelling(flag):
    """0.5.23's valid spelling of ``flag``: its rename, else the closest long options."""
    if flag in RENAMED_FLAGS:
        return RENAMED_FLAGS[flag]
    close = difflib.get_close_matches(flag, sorted(FLAGS), n=3, cutoff=0.75)
    return ' or '.join(close) if close else None


def argparse_diagnosis(error):
    """(message, remedy) for an argparse error line of SGLang's parser."""
    prefix = 'SGLang %s refused its command line or --config file: ' % SGLANG_VERSION
    where = ('Fix it in sglang_service_extra_args or the role variable that sets it (the --config file '
             'holds the role\'s options as the flags\' long names).')
    match = _AMBIGUOUS.match(error)
    if match:
        flag = match.group('flag')
        spelling = _spelling(flag) or match.group('candidates')
        return (prefix + '%s is not a %s flag; it is a prefix of %s.' % (flag, SGLANG_VERSION, match.group('candidates')),
                'Use %s instead of %s. %s' % (spelling, flag, where))
    match = _UNRECOGNIZED.match(error)
    if match:
        unknown = [w.split('=')[0] for w in match.group('words').split() if w.startswith('-')]
        advice = []
        for flag in unknown:
            spelling = _spelling(flag)
            advice.append('%s: %s' % (flag, ('use ' + spelling) if spelling else 'no such flag in %s' % SGLANG_VERSION))
        return (prefix + 'unrecognized %s.' % ', '.join(unknown or [match.group('words')]),
                '%s. %s' % ('; '.join(advice) or 'Remove the stray words', where))
    match = _BAD_VALUE.match(error)
    if match:
        if match.group('choices'):
            return (prefix + '%s %r is not one of its choices.' % (match.group('flag'), match.group('value')),
                    'Use one of %s for %s. %s' % (match.group('choices'), match.group('flag'), where))
        return (prefix + '%s: %s.' % (match.group('flag'), error.split(': ', 1)[1]),
                'Give %s a value of the right type. %s' % (match.group('flag').split('/')[0], where))
    return prefix + error, where


# Order matters: the first entry whose pattern occurs anywhere in the journal wins.
# "Capture cuda graph failed" usually wraps a CUDA OOM, so it must come before the
# generic out-of-memory entry; "Not enough memory" is SGLang's own KV-pool check and
# is the most specific of all.
DIAGNOSES = (
    {
        'key': 'bad_argument',
        # argparse (allow_abbrev, Python 3.11) under prepare_server_args, SGLang 0.5.23: the server
        # exits with code 2 before it loads anything, so this comes first.
        'pattern': ARGPARSE_ERROR,
        'message': 'SGLang refused an argument of its command line or --config file.',
        'remedy': 'Fix the flag named in the journal line below.',
        'build': argparse_diagnosis,
    },
    {
        'key': 'not_enough_memory',
        # model_runner.py (0.5.x): raise RuntimeError("Not enough memory. Please try to
        # increase --mem-fraction-static.")
        'pattern': re.compile(r'Not enough memory\. Please try to increase --mem-fraction-static'),
        'message': 'The KV cache pool got no memory: the weights plus the memory reserved for '
                   'speculative decoding and CUDA graphs left nothing for it.',
        'remedy': 'SGLang says: "Please try to increase --mem-fraction-static." Alternatively '
                  'lower --speculative-num-steps / --speculative-num-draft-tokens, '
                  '--cuda-graph-max-bs-decode or --context-length.',
    },
    {
        'key': 'unbalanced_memory',
        # 0.5.23 distributed/bootstrap.py _check_tp_memory_balance: raise RuntimeError("The memory
        # capacity is unbalanced. Some GPUs may be occupied by other processes. pre_model_load_memory=...")
        # (older 0.5.x: model_runner.py, "min_per_gpu_memory=...")
        'pattern': re.compile(r'The memory capacity is unbalanced'),
        'message': 'The GPUs have different amounts of free memory: some GPU is still held by '
                   'another process (often a previous SGLang that has not exited yet).',
        'remedy': 'SGLang says: "Some GPUs may be occupied by other processes." Check '
                  'nvidia-smi, stop whatever holds the GPUs (or wait for the old server to exit) '
                  'and start again.',
    },
    {
        'key': 'cuda_graph_capture_failed',
        # runner/decode_cuda_graph_runner.py (0.5.23): raise Exception(f"Capture cuda graph
        # failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}") (runner_backend_utils/__init__.py)
        'pattern': re.compile(r'Capture cuda graph failed'),
        'message': 'CUDA graph capture failed while the server was starting.',
        'remedy': 'SGLang says: "Possible solutions: 1. set --mem-fraction-static to a smaller '
                  'value (e.g., 0.8 or 0.7) 2. set --cuda-graph-max-bs-decode to a smaller value '
                  '(e.g., 16) 3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. '
                  '(Not recommended. Huge performance loss)"',
    },
    {
        'key': 'too_few_gpus',
        # distributed/bootstrap.py (0.5.23) init_parallel_runtime: set_device(gpu_id) for a rank without
        # a GPU; torch raises "CUDA error: invalid device ordinal" ("GPU device may be out of range, do
        # you have enough GPUs?"), after the rank's "Context: device=cuda gpu_id=N ..." warning.
        'pattern': re.compile(r'invalid device ordinal'),
        'message': 'A rank found no GPU: the server asks for more GPUs (--tp-size x --dp-size) than it can see.',
        'remedy': 'Set sglang_service_tp_size x sglang_service_dp_size to at most the GPUs the host has '
                  '(nvidia-smi -L lists them), and sglang_service_cuda_visible_devices to GPUs that exist '
                  '(CUDA skips the ones that do not).',
    },
    {
        'key': 'cuda_out_of_memory',
        # torch: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ..."
        # (older torch: torch.cuda.OutOfMemoryError)
        'pattern': re.compile(r'CUDA out of memory|OutOfMemoryError'),
        'message': 'A CUDA allocation failed: the GPU ran out of memory after the KV cache '
                   'was sized.',
        'remedy': 'Leave more memory outside the static pool: lower --mem-fraction-static, '
                  'lower --cuda-graph-max-bs-decode or --max-running-requests, or shorten '
                  '--chunked-prefill-size.',
    },
    {
        'key': 'systemd_setup',
        # systemd (252) ended the process it forked for ExecStart before exec: "Main process exited,
        # code=exited, status=219/CGROUP", its EXIT_* codes 200-243 (src/basic/exit-status.h), after
        # "Failed at step CGROUP spawning ...". Last: a journal that also holds SGLang's own error (a
        # later attempt that ran) names that error instead.
        'pattern': re.compile(r'Failed at step [A-Z_]+ spawning |status=2(?:[0-3][0-9]|4[0-3])/[A-Z_]+'),
        'message': 'systemd could not start the server process: it failed at a step of its own before SGLang ran '
                   '(the host or the unit, not the configuration).',
        'remedy': 'Read the unit\'s "Failed at step" line (journalctl -b -u UNIT). 219/CGROUP with "Device or resource '
                  'busy" is a cgroup still being removed and passes (the start was tried three times); 200/CHDIR, '
                  '203/EXEC, 217/USER or 226/NAMESPACE name a working directory, program, user or path of the '
                  'unit that the host lacks.',
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

# SGLang 0.5.23 speculative_hook._maybe_disable_adaptive: logger.warning(f"speculative_adaptive disabled:
# {reason}. Falling back to static speculative params."); the server then starts and serves static steps.
ADAPTIVE_DISABLED_LINE = re.compile(r'speculative_adaptive disabled: (?P<reason>.*?)\.? Falling back to static speculative params')

ADAPTIVE_DISABLED = {
    'key': 'speculative_adaptive_disabled',
    'message': 'SGLang runs static speculative decoding although --speculative-adaptive was asked for.',
    'remedy': 'SGLang %s runs adaptive only for EAGLE, EAGLE3 or NEXTN with --speculative-eagle-topk 1 and without '
              'attention data parallelism, multi-layer EAGLE, two-batch overlap or PD multiplexing: change what the '
              'reason names, or set sglang_service_speculative_adaptive false.' % SGLANG_VERSION,
}

DIAGNOSIS_KEYS = tuple(d['key'] for d in DIAGNOSES) + (
    UNKNOWN['key'], TIMEOUT['key'], VERIFICATION_MISMATCH['key'], ADAPTIVE_DISABLED['key'])


# A Python exception's last line, as a traceback ends ("torch.AcceleratorError: CUDA error: ...",
# "ModuleNotFoundError: No module named ..."): without a known cause, the last one is the best evidence.
EXCEPTION_LINE = re.compile(r'^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)(?::\s|$)')


def _public(entry):
    return {'key': entry['key'], 'message': entry['message'], 'remedy': entry['remedy']}


def diagnose(lines):
    """Return the diagnosis dict (key, message, remedy, evidence) for journal ``lines``.

    ``evidence`` is the first journal line that matched; when nothing did (``unknown``), the last exception
    line of a traceback, or None.
    """
    for entry in DIAGNOSES:
        for line in lines:
            match = entry['pattern'].search(line)
            if match:
                result = _public(entry)
                if 'build' in entry:
                    result['message'], result['remedy'] = entry['build'](match.group('error').strip())
                result['evidence'] = line.strip()
                return result
    result = _public(UNKNOWN)
    raised = [line.strip() for line in lines if EXCEPTION_LINE.match(line.strip())]
    result['evidence'] = raised[-1] if raised else None
    return result


def timeout_diagnosis():
    result = _public(TIMEOUT)
    result['evidence'] = None
    return result


def adaptive_disabled_diagnosis(lines, mismatches):
    """The diagnosis when the server reports speculative_adaptive false although it was asked for:
    SGLang's reason from the journal when the line is there (the evidence), else the mismatches."""
    result = _public(ADAPTIVE_DISABLED)
    result['evidence'] = None
    for line in lines:
        match = ADAPTIVE_DISABLED_LINE.search(line)
        if match:
            result['message'] = ('SGLang runs static speculative decoding although --speculative-adaptive was asked '
                                 'for: %s.' % match.group('reason'))
            result['evidence'] = line.strip()
            break
    if result['evidence'] is None:
        result['message'] += ' The journal does not say why (no "speculative_adaptive disabled" line).'
        result['evidence'] = mismatch_diagnosis(mismatches)['evidence']
    return result


def mismatch_diagnosis(mismatches):
    """``mismatches`` is a list of dicts with ``key``, ``expected`` and ``actual``."""
    result = _public(VERIFICATION_MISMATCH)
    result['evidence'] = '; '.join(
        '%s: expected %r, server reports %r' % (m['key'], m['expected'], m['actual']) for m in mismatches)
    return result
