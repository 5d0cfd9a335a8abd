# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workloads for llmops.sglang.sglang_bench (private module_utils).

- ``synthetic``: the seed campaign's benchmark. Temperature 0, ignore_eos,
  exactly ``output_len`` new tokens; the prompt is ``input_len`` words drawn
  with the seed from a list of common English words (about one token each
  on BPE tokenizers; the server's own prompt_tokens count is reported, the
  client never tokenizes). Every request gets a different prompt so that
  the radix cache does not turn prefill into a cache hit.
- ``realistic``: the agentic-coding prompt set below, sampled
  (temperature > 0), ending at natural EOS (``output_len`` is only a cap).
  Greedy synthetic text makes drafts far easier to accept than real use;
  this workload shows the accept length users will actually get.
- ``file``: the user's prompts (JSONL read by the module or passed in).

The prompt set lives here, in module_utils, rather than in a data file:
Ansible ships module_utils inside the module's payload, so the set is
there on the GPU host, or on the controller when the task is delegated,
with no copy step and no path to get wrong.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import random


_WORDS = (
    "the of and to in is it you that he was for on are with as his they be at one have this from "
    "or had by hot word but what some we can out other were all there when up use your how said an "
    "each she which do their time if will way about many then them write would like so these her "
    "long make thing see him two has look more day could go come did number sound no most people my "
    "over know water than call first who may down side been now find any new work part take get "
    "place made live where after back little only round man year came show every good me give our "
    "under name very through just form sentence great think say help low line differ turn cause much "
    "mean before move right boy old too same tell does set three want air well also play small end "
    "put home read hand port large spell add even land here must big high such follow act why ask"
).split()

# Agentic-coding style requests: code edits, reviews, tool-call plans,
# repository questions, shell and debugging tasks. Written for this
# project; lengths vary on purpose.
AGENTIC_CODING_PROMPTS = (
    "You are a coding agent. The repository has src/cache.py with an LRU cache class whose get() does not move the key to the most "
    "recently used position. Explain the bug in two sentences, then write the corrected get() method and a pytest test that fails "
    "before the fix.",
    "Write a Python function parse_duration(text) that accepts strings like '1h30m', '45s', '2d' and returns seconds as an int. "
    "Reject anything else with ValueError and a helpful message. Include docstring and five doctest examples.",
    "I get 'RuntimeError: Event loop is closed' at the end of my pytest run that uses aiohttp.ClientSession in a fixture. "
    "What are the likely causes and how do I restructure the fixture so the session is closed inside the loop?",
    "Review this diff for correctness and style:\n\n-    for i in range(len(items)):\n-        if items[i] == target:\n-            return i\n"
    "+    return items.index(target)\n\nThe function must return -1 when the target is missing.",
    "You can call the tools read_file(path), grep(pattern, path) and run(cmd). Plan, as a numbered list of tool calls with "
    "arguments, how you would find where the HTTP timeout for outgoing requests is configured in an unfamiliar Django project.",
    "Convert this shell loop into a robust bash script with set -euo pipefail, argument parsing for --dry-run and --dir, and "
    "proper quoting: for f in $(ls *.log); do gzip $f; mv $f.gz archive/; done",
    "Explain the difference between asyncio.gather and asyncio.TaskGroup in Python 3.11, including how each handles an exception "
    "in one child task. Show a short example where the behaviour differs.",
    "Write a SQL migration for PostgreSQL that adds a non-null column created_at with a default of now() to a table of 200 "
    "million rows without locking writes for long. Explain each step.",
    "Our CI fails with 'fatal: detected dubious ownership in repository at /src'. The job runs git inside a container as root on a "
    "checkout owned by uid 1001. Give two fixes and say which is safer.",
    "Implement a token bucket rate limiter in Go with a NewLimiter(rate float64, burst int) constructor and an Allow() bool method "
    "that is safe for concurrent use. Add a table-driven test.",
    "Given this JSON tool schema: {\"name\": \"create_issue\", \"parameters\": {\"title\": \"string\", \"labels\": \"array\", "
    "\"body\": \"string\"}}, produce the tool call you would make to report that the login page returns HTTP 500 when the "
    "password contains a percent sign.",
    "Refactor this React component to use a custom hook for fetching, with loading and error states and cancellation on unmount: "
    "function Users() { const [u, setU] = useState([]); useEffect(() => { fetch('/api/users').then(r => r.json()).then(setU) }, []); "
    "return <ul>{u.map(x => <li>{x.name}</li>)}</ul> }",
    "Write a Dockerfile for a Python 3.12 FastAPI service using a multi-stage build, a non-root user, and uv for dependency "
    "installation. Keep the final image small and explain each stage in one line.",
    "A Rust function returns Result<Vec<u8>, io::Error> and I want to add context to errors without pulling in anyhow. Show an "
    "idiomatic custom error enum with From implementations and Display.",
    "Summarise what this regular expression matches and give three strings that match and three that do not: "
    "^(?=.*[A-Z])(?=.*\\d)[A-Za-z\\d@$!%*?&]{8,}$",
    "You are working in a monorepo with packages/api and packages/web. The web build fails after upgrading TypeScript to 5.6 with "
    "'TS2322: Type string | undefined is not assignable to type string' in 40 places. Propose a plan to fix them safely and the "
    "first three edits you would make.",
    "Write a systemd unit for a Python worker that must restart on failure with a 10 second delay, stop being restarted after 5 "
    "failures in 5 minutes, log to the journal, and run as user worker with a private /tmp.",
    "Explain how speculative decoding with a draft model speeds up LLM inference, what acceptance length means, and why greedy "
    "decoding usually accepts more draft tokens than sampling at temperature 1.",
    "Write unit tests with pytest for a function slugify(title) that lowercases, replaces runs of non-alphanumerics by one dash, "
    "strips leading and trailing dashes and truncates to 60 characters without cutting a word.",
    "Find the bug: def mean(xs): total = 0\n  for x in xs: total += x\n  return total / len(xs) if xs else None\n"
    "It is used on generators in production and sometimes returns None when there is data.",
    "Plan the tool calls (list_dir, read_file, apply_patch, run_tests) to rename the module utils/strings.py to utils/text.py "
    "across a Python package, updating all imports, and verify nothing broke.",
    "Write a Kubernetes Deployment and Service for an HTTP API on port 8080 with readiness and liveness probes, resource "
    "requests and limits, and a PodDisruptionBudget allowing one unavailable pod.",
    "Explain what this Ansible task does and what is wrong with it: - shell: apt-get install -y nginx && systemctl restart nginx "
    "Rewrite it the idiomatic way with modules and a handler.",
    "Our Python service's memory grows by 50 MB an hour. Describe a step-by-step investigation with tracemalloc and objgraph, "
    "and the three most common causes in long-running asyncio services.",
    "Implement binary search over a sorted list of timestamps to find the first index whose value is >= t, in Python, without "
    "using bisect, and prove the loop invariant in comments.",
    "Write a GitHub Actions workflow that runs ruff, mypy and pytest on Python 3.10 to 3.13 with caching of pip downloads, and "
    "uploads the coverage report as an artifact only on the 3.12 job.",
    "Given a CSV of orders (id, customer_id, amount, created_at), write a pandas snippet that returns each customer's monthly "
    "total and the month-over-month change, sorted by customer and month.",
    "Explain why this C code can crash and fix it: char *copy(const char *s) { char buf[256]; strcpy(buf, s); return buf; }",
    "You are an agent with a shell tool. The command 'npm test' hangs forever in CI but passes locally. List the commands you "
    "would run, in order, to find out why, and what each result would tell you.",
    "Write a bash one-liner and then a Python script that list the 10 largest files under a directory, excluding .git, with "
    "human-readable sizes.",
    "Design the REST endpoints for a small todo service with projects, tasks and comments: paths, methods, status codes and one "
    "example JSON body per resource. Keep it consistent and versioned.",
    "Translate this Python to idiomatic TypeScript with types: def group_by(items, key): out = {}\n for it in items: "
    "out.setdefault(key(it), []).append(it)\n return out",
    "A flaky test fails one run in twenty with 'AssertionError: expected 3 calls, got 2' on a mock of a background thread. "
    "Explain the likely race and two ways to make the test deterministic.",
    "Write a Makefile with targets venv, lint, test and clean for a Python project, where test depends on venv and the venv is "
    "only rebuilt when requirements.txt changes.",
    "Explain the output of git log --graph --oneline for a branch that was rebased onto main and then merged with --no-ff, and "
    "how that differs from a squash merge.",
    "Implement a small LRU cache decorator in Python with a maxsize argument and a cache_info() method, without functools, and "
    "keep get and set O(1).",
    "Read this stack trace and say what to fix: KeyError: 'user_id' in handlers/profile.py line 42, in get_profile: "
    "uid = request.session['user_id'] ... The endpoint is called by a mobile app right after login.",
    "Write an nginx server block that proxies /api/ to 127.0.0.1:8000 with streaming (no buffering) for server-sent events, "
    "a 300 second read timeout, and gzip for JSON responses.",
    "Propose a schema for storing LLM benchmark results (run, server config, concurrency level, metrics) in SQLite, and write "
    "the query that returns the best configuration per concurrency level.",
    "You have tools search_code(query) and open_file(path, start, end). Show the sequence of calls and your reasoning to answer: "
    "where does this codebase retry failed HTTP requests, and with what backoff?",
)


def synthetic_prompt(rng, input_len):
    return " ".join(rng.choice(_WORDS) for _word in range(input_len))


def load_prompt_file(path):
    """Prompts from a JSONL file: one object per line with "prompt" (text)
    or "messages" (chat messages), optionally "max_tokens"."""
    with open(path, "r") as handle:
        return parse_prompt_lines(handle, "prompt_file %s" % path)


def parse_prompt_lines(lines, origin):
    """Prompts from JSONL lines (blank lines skipped). Errors name origin, the line and what is wrong."""
    prompts = []
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise ValueError("%s line %d is not JSON: %s" % (origin, lineno, exc))
        try:
            prompts.extend(normalize_prompts([item], "%s line %d:" % (origin, lineno)))
        except ValueError:
            raise ValueError("%s line %d must be a string or an object with 'prompt' (string) or 'messages' (list); got %s"
                             % (origin, lineno, line[:80]))
    if not prompts:
        raise ValueError("%s holds no prompts (one JSON object per line with 'prompt' or 'messages')" % origin)
    return prompts


def normalize_prompts(items, origin="prompts"):
    """Validate user prompts; strings become {"prompt": str}."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"prompt": item}
        if not isinstance(item, dict) or not (isinstance(item.get("prompt"), str) or isinstance(item.get("messages"), list)):
            raise ValueError("%s item %d must be a string or an object with 'prompt' (string) or 'messages' (list)" % (origin, i + 1))
        out.append(item)
    if not out:
        raise ValueError("%s holds no prompts" % origin)
    return out


def _as_messages(item):
    if "messages" in item:
        return item["messages"]
    return [{"role": "user", "content": item["prompt"]}]


def _as_text(item):
    if "prompt" in item:
        return item["prompt"]
    return "\n\n".join("%s: %s" % (m.get("role", "user"), m.get("content", "")) for m in item["messages"])


def body_factory(api, workload, model, input_len, output_len, temperature, seed, prompts=None):
    """Return make_body(index) -> request JSON for the given workload.

    The same (seed, index) always gives the same request, so two runs
    (two step counts in a sweep) see identical load.
    """
    greedy = workload == "synthetic"
    if workload == "realistic":
        prompts = [{"prompt": p} for p in AGENTIC_CODING_PROMPTS]
    temp = 0.0 if greedy else temperature

    def make_item(index):
        if greedy:
            return {"prompt": synthetic_prompt(random.Random("%s-%d" % (seed, index)), input_len)}
        return prompts[(seed + index) % len(prompts)]

    def make_body(index):
        item = make_item(index)
        max_new = int(item.get("max_tokens") or output_len)
        if api == "native":
            params = {"max_new_tokens": max_new, "temperature": temp}
            if greedy:
                params["ignore_eos"] = True
            return {"text": _as_text(item), "sampling_params": params, "stream": True}
        body = {
            "model": model,
            "max_tokens": max_new,
            "temperature": temp,
            "stream": True,
            # continuous_usage_stats: per-chunk usage, so ITL is exact.
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            # SGLang 0.5.23+: per-request spec_verify_ct in sglext (ignored by older servers).
            "return_spec_tokens_details": True,
        }
        if greedy:
            body["ignore_eos"] = True  # SGLang extension of the OpenAI schema
        if api == "chat":
            body["messages"] = _as_messages(item)
        else:
            body["prompt"] = _as_text(item)
        return body

    return make_body
