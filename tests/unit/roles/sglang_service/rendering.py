"""Render the sglang_service role's real templates as the template action does, and read back
what systemd and SGLang 0.5.23 would see: the unit's argv, the environment file and the --config
file merged into the argv the way 0.5.23's ConfigArgumentMerger does it.

Shared by the template tests, the role-matrix contract test and tools/check-role-flags (which
feeds the same argv to the real SGLang parser).
"""
import json
import os
import shlex

import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template
from ansible.utils.collection_loader import AnsibleCollectionConfig

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_service")

# The seed campaign's server (Qwen3.5-122B-A10B-FP8 on 4x RTX PRO 6000, tp 4, MTP steps 4): the
# variables the rendering tests start from.
SEED = dict(
    sglang_service_model_path="/models/Qwen3.5-122B-A10B-FP8",
    sglang_service_served_model_name="Qwen3.5-122B-A10B-FP8",
    sglang_service_tp_size=4,
    sglang_service_kv_cache_dtype="bf16",
    sglang_service_speculative_algorithm="NEXTN",
    sglang_service_speculative_num_steps=4,
    sglang_service_speculative_eagle_topk=1,
    sglang_service_cuda_home="/usr/local/cuda-13.0",
    sglang_service_ld_library_path="/usr/local/cuda-13.0/lib64",
    sglang_service_cuda_visible_devices="0,1,2,3",
    sglang_service_nccl_env={"NCCL_IB_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"},
)

# The role's vars use the collection's filters (llmops.sglang.spec_*): resolve them from this
# checkout, as ansible-playbook does from an installed collection (tests/conftest.py links the
# checkout as ansible_collections/llmops/sglang under LLMOPS_PYTEST_COLLECTIONS_PATH).
if AnsibleCollectionConfig.collection_finder is None:
    init_plugin_loader([os.environ["LLMOPS_PYTEST_COLLECTIONS_PATH"]])


def _load(rel):
    with open(os.path.join(ROLE, rel), encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def _trust(value):
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, list):
        return [_trust(v) for v in value]
    if isinstance(value, dict):
        return {k: _trust(v) for k, v in value.items()}
    return value


def _templar(overrides):
    """A templar with defaults < overrides < vars/main.yml (role precedence)."""
    variables = dict(_load("defaults/main.yml"))
    variables.update(overrides)
    variables.update(_load("vars/main.yml"))
    variables.update(role_path=ROLE, ansible_managed="Ansible managed")
    return Templar(loader=DataLoader(), variables=_trust(variables))


def role_var(name, overrides):
    """The value of one of the role's variables (e.g. a vars/main.yml fact) with ``overrides``."""
    return _templar(overrides).template(trust_as_template("{{ %s }}" % name))


def render(name, overrides):
    """Render templates/<name> with defaults < overrides < vars/main.yml (role precedence)."""
    templar = _templar(overrides)
    with open(os.path.join(ROLE, "templates", name), encoding="utf-8") as fh:
        source = trust_as_template(fh.read())
    # The template action's defaults: trim_blocks on, lstrip_blocks off, no backslash escaping.
    return templar.template(source, escape_backslashes=False,
                            overrides=dict(trim_blocks=True, lstrip_blocks=False))


def unit_sections(text):
    """{section: {key: value}} of a unit file, continuation lines joined."""
    sections, current, pending = {}, None, ""
    for raw in text.splitlines():
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, dummy, value = line.partition("=")
        current[key.strip()] = value.strip()
    return sections


def exec_argv(text):
    """The argv systemd builds from ExecStart (quotes and %%/$$ escapes resolved)."""
    execstart = unit_sections(text)["Service"]["ExecStart"]
    return [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(execstart)]


def config_options(overrides):
    """The --config file's mapping, as yaml.safe_load (0.5.23's reader) sees it."""
    return yaml.safe_load(render("sglang.yaml.j2", overrides)) or {}


def config_to_argv(options):
    """0.5.23 ConfigArgumentMerger._convert_config_to_args for the shapes the role writes
    (srt/utils/server_args_config_parser.py): true switches become the bare flag, scalars
    "--KEY VALUE" with str(VALUE). The role writes no false, list or mapping values."""
    argv = []
    for key, value in options.items():
        assert not isinstance(value, (list, dict)) and value is not False, (key, value)
        argv += ["--%s" % key] if value is True else ["--%s" % key, str(value)]
    return argv


def server_argv(overrides):
    """The argv 0.5.23's parser sees: the --config file's options, then the command line's
    (the merger puts the file first, so the command line wins). Interpreter and module dropped."""
    unit_argv = exec_argv(render("sglang.service.j2", overrides))[3:]
    i = unit_argv.index("--config")
    return config_to_argv(config_options(overrides)) + unit_argv[:i] + unit_argv[i + 2:]


def flags(argv, start=0):
    """{--flag: value or True} of an argv (from ``start``)."""
    out, i = {}, start
    while i < len(argv):
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            out[argv[i]] = True
            i += 1
    return out


def _systemd_env_value(value):
    """A double-quoted EnvironmentFile value as systemd reads it (env-file.c: \\ " ` $ escapes)."""
    assert value.startswith('"') and value.endswith('"'), value
    out, chars = [], iter(value[1:-1])
    for c in chars:
        if c == "\\":
            nxt = next(chars)
            out.append(nxt if nxt in '"\\`$' else c + nxt)
        else:
            assert c != '"', "unescaped quote in %r" % value
            out.append(c)
    return "".join(out)


def env_file(text):
    env = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        key, dummy, value = line.partition("=")
        env[key] = _systemd_env_value(value)
    return env


def load_contract(version="0.5.23"):
    with open(os.path.join(ROOT, "docs", "sglang-contract", version + ".json"), encoding="utf-8") as fh:
        return json.load(fh)
