"""SGLang 0.5.23's launch flags, built from the recorded contract, and its defaulting rules.

The parser is built from ``data/sglang-contract.json``, which ``tools/sglang-contract`` writes from
the real 0.5.23 parser (``ServerArgs.add_cli_args`` under ``prepare_server_args``'s prog ``sglang
serve``): every flag with its spellings, dest, type, choices, nargs and default, in 0.5.23's order.
So argparse fails here exactly as it fails there -- ``unrecognized arguments``, ``ambiguous option:
--cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill`` (prefix
matching, allow_abbrev), ``invalid choice``, the same usage line and exit code 2 -- and the
simulator cannot drift from the contract. ``--config FILE.yaml`` is merged as 0.5.23's
``ConfigArgumentMerger`` does it. The simulator's own flags (``--sim-*``) are hidden from the usage.
"""

import argparse
import json
import logging
import os
import re
from decimal import Decimal

from sglang_sim import adaptive

log = logging.getLogger("sglang_sim")

CONTRACT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sglang-contract.json")


def load_contract():
    with open(CONTRACT_PATH, encoding="utf-8") as handle:
        return json.load(handle)


CONTRACT = load_contract()
SGLANG_VERSION = CONTRACT["sglang_version"]
KV_CACHE_DTYPES = tuple(CONTRACT["kv_cache_dtypes"])
# SpeculativeAlgorithm.from_string (0.5.23) upper-cases the name and knows these plus the aliases.
SPECULATIVE_ALGORITHMS = tuple(CONTRACT["speculative_algorithms"]["builtin"]) + tuple(CONTRACT["speculative_algorithms"]["aliases"])
# The algorithms whose drafting the simulator models (EAGLE family and NGRAM); the others parse
# as on 0.5.23 and then stop with a clear "not simulated" error.
SIMULATED_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")


def human_readable_int(value):
    """sglang.srt.utils.common.human_readable_int (0.5.23): 128k, 1Mi, 25.6k or a plain int."""
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        iec = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError("Decimals are not allowed with IEC suffixes like '%s'." % suffix)
            return int(number) * iec[suffix]
        return int(Decimal(number) * {"k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12}[suffix])
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "Invalid integer value: '%s'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). "
            "Suffixes are case-sensitive." % value)


def _named_passthrough(name):
    """A stand-in for one of SGLang's own type functions: keeps the string, and the name argparse
    prints in ``invalid NAME value`` errors."""
    def convert(value):
        return value
    convert.__name__ = name
    return convert


TYPES = {"str": str, "int": int, "float": float, "loads": json.loads, "human_readable_int": human_readable_int}


def _add_contract_flag(parser, flag):
    kind = flag["action"]
    opts = flag["option_strings"]
    kwargs = {"dest": flag["dest"], "help": argparse.SUPPRESS if flag["help_suppressed"] else None}
    if not isinstance(flag["default"], dict):  # a dict holds the repr of a default JSON cannot carry
        kwargs["default"] = flag["default"]
    if kind == "boolean_optional":
        # BooleanOptionalAction derives the --no- spelling from the first one itself.
        parser.add_argument(opts[0], action=argparse.BooleanOptionalAction, **kwargs)
        return
    if kind in ("store_true", "store_false") or (kind.startswith("custom:") and flag["nargs"] == 0):
        # SGLang's Deprecated*StoreTrue actions are switches: same usage, same prefix matching.
        parser.add_argument(*opts, action="store_false" if kind == "store_false" else "store_true", **kwargs)
        return
    if kind == "store_const":
        parser.add_argument(*opts, action="store_const", const=flag["const"], **kwargs)
        return
    # store and SGLang's valued custom actions (LoRAPathAction, DeprecatedStoreConstAction)
    if flag["type"] is not None:
        kwargs["type"] = TYPES.get(flag["type"]) or _named_passthrough(flag["type"])
    for key in ("choices", "nargs", "metavar"):
        if flag[key] is not None:
            kwargs[key] = flag[key]
    if flag["nargs"] == "?" and flag["const"] is not None:
        kwargs["const"] = flag["const"]
    if flag["required"]:
        kwargs["required"] = True
    parser.add_argument(*opts, **kwargs)


def build_parser():
    contract = CONTRACT
    parser = argparse.ArgumentParser(prog=contract["prog"], allow_abbrev=contract["allow_abbrev"])
    for flag in contract["flags"]:
        if flag["action"] == "help":
            continue  # argparse adds -h/--help itself, first, as it did for SGLang
        _add_contract_flag(parser, flag)
    parser.add_argument("--sim-profile", type=str, default=None, help=argparse.SUPPRESS)
    return parser


def merge_config(parser, argv):
    """0.5.23's ConfigArgumentMerger (srt/utils/server_args_config_parser.py): the YAML file's options
    go before the command line's, so the command line wins. Raises ValueError as it does."""
    indices = [i for i, arg in enumerate(argv) if arg == "--config"]
    if not indices:
        return argv
    if len(indices) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    index = indices[0]
    if index == len(argv) - 1:
        raise ValueError("No config file specified after --config flag!")
    path = argv[index + 1]
    if os.path.splitext(path)[1].lower() not in (".yaml", ".yml"):
        raise ValueError("Config file must be YAML format, got: %s" % os.path.splitext(path)[1])
    if not os.path.exists(path):
        raise ValueError("Config file not found: %s" % path)
    import yaml

    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")

    def keys(action):
        return {action.dest} | {o[2:].replace("-", "_") for o in action.option_strings if o.startswith("--")}

    store_true = {k for a in parser._actions if isinstance(a, argparse._StoreTrueAction) for k in keys(a)}
    supported = [a for a in parser._actions
                 if isinstance(a, argparse._StoreTrueAction) or isinstance(a, argparse._StoreAction) or a.nargs is None]
    supported_keys = {k for a in supported for k in keys(a)}
    unsupported = {k: a for a in parser._actions
                   if a.option_strings and a not in supported and "--config" not in a.option_strings
                   and "--help" not in a.option_strings for k in keys(a) if k not in supported_keys}
    config_args = []
    for key, value in data.items():
        norm = key.replace("-", "_")
        if norm in unsupported:
            raise ValueError("Unsupported config option '%s' with action '%s'" % (norm, type(unsupported[norm]).__name__))
        if isinstance(value, bool):
            if norm in store_true:
                if value:
                    config_args.append("--%s" % key)
            else:
                config_args += ["--%s" % key, str(value).lower()]
        elif isinstance(value, list):
            if value:
                config_args += ["--%s" % key] + [str(item) for item in value]
        elif isinstance(value, dict):
            config_args += ["--%s" % key, json.dumps(value)]
        else:
            config_args += ["--%s" % key, str(value)]
    return config_args + argv[:index] + argv[index + 2:]


def parse_args(argv):
    """prepare_server_args (0.5.23): merge --config, then parse (argparse exits 2 on bad flags)."""
    parser = build_parser()
    return parser.parse_args(merge_config(parser, list(argv)))


def _auto_speculative(args):
    """SGLang 0.5.x ``auto_choose_speculative_params`` for models without a tuned table."""
    return 3, 1, 4


def resolve(args):
    """Apply SGLang's argument post-processing; return the list of warnings it would log.

    Raises ValueError (SGLang raises AssertionError/ValueError) for contradictory flags.
    """
    warnings = []
    for name in ("tp_size", "dp_size"):
        if getattr(args, name) < 1:
            raise ValueError("--%s must be >= 1, got %d" % (name.replace("_", "-"), getattr(args, name)))
    if args.mem_fraction_static is not None and not 0.0 < args.mem_fraction_static < 1.0:
        raise ValueError("--mem-fraction-static must be in (0, 1), got %s" % args.mem_fraction_static)
    for name in ("max_running_requests", "cuda_graph_max_bs_decode", "cuda_graph_max_bs_prefill", "context_length",
                 "speculative_num_steps",
                 "speculative_eagle_topk", "speculative_num_draft_tokens"):
        if name == "speculative_num_steps" and args.speculative_adaptive:
            continue  # 0 (no drafting) is a step count adaptive may start with; checked below
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError("--%s must be >= 1, got %d" % (name.replace("_", "-"), value))
    if args.served_model_name is None:
        args.served_model_name = args.model_path
    if args.tokenizer_path is None:
        args.tokenizer_path = args.model_path
    if args.chunked_prefill_size is None:
        args.chunked_prefill_size = 8192
    if args.speculative_algorithm is not None:
        # SpeculativeAlgorithm.from_string (0.5.23) takes any case and rewrites the alias NEXTN to EAGLE.
        name = args.speculative_algorithm.upper()
        if name not in SPECULATIVE_ALGORITHMS:
            raise ValueError("Unknown speculative algorithm name: %s" % args.speculative_algorithm)
        if name not in SIMULATED_ALGORITHMS:
            raise ValueError("sglang-sim does not simulate --speculative-algorithm %s (it simulates %s)"
                             % (name, ", ".join(SIMULATED_ALGORITHMS)))
        args.speculative_algorithm = CONTRACT["speculative_algorithms"]["aliases"].get(name, name)
    if args.speculative_adaptive:
        # SGLang 0.5.23 speculative_hook.handle_speculative_decoding, after the alias NEXTN -> EAGLE and
        # before the algorithm's own handler: _maybe_disable_adaptive, then _init_adaptive_speculative_params
        # (which reads the config file: its errors stop the server here).
        reason = adaptive.unsupported_reason(args)
        if reason is not None:
            warnings.append(adaptive.disabled_warning(reason))
            args.speculative_adaptive = False
        else:
            adaptive.init_server_args(args)
    if not args.speculative_adaptive and args.speculative_num_steps is not None and args.speculative_num_steps < 1:
        raise ValueError("--speculative-num-steps must be >= 1, got %d" % args.speculative_num_steps)
    # SGLang 0.5.x ServerArgs._handle_speculative_decoding
    if args.speculative_algorithm in ("EAGLE", "EAGLE3", "STANDALONE", "NGRAM"):
        if args.max_running_requests is None:
            args.max_running_requests = 48
            warnings.append("Max running requests is reset to 48 for speculative decoding. "
                            "You can override this by explicitly setting --max-running-requests.")
        warnings.append("Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding.")
        if args.speculative_draft_model_path is None:
            args.speculative_draft_model_path = args.model_path
        if args.speculative_num_steps is None:
            if args.speculative_eagle_topk is not None or args.speculative_num_draft_tokens is not None:
                raise ValueError("AssertionError: speculative_eagle_topk and speculative_num_draft_tokens must be unset "
                                 "when speculative_num_steps is unset (set all three or none)")
            (args.speculative_num_steps, args.speculative_eagle_topk,
             args.speculative_num_draft_tokens) = _auto_speculative(args)
        elif args.speculative_eagle_topk is None:
            # SGLang compares topk with ints right after this point and dies with a TypeError
            raise ValueError("--speculative-num-steps is set but --speculative-eagle-topk is not "
                             "(set steps, topk and draft tokens together, or none of them)")
        elif args.speculative_eagle_topk > 1 and args.speculative_num_draft_tokens is None:
            raise ValueError("--speculative-num-draft-tokens must be set when --speculative-eagle-topk > 1")
        if args.speculative_eagle_topk == 1 and args.speculative_num_draft_tokens != args.speculative_num_steps + 1:
            warnings.append("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 "
                            "when speculative_eagle_topk == 1")
            args.speculative_num_draft_tokens = args.speculative_num_steps + 1
    else:
        for name in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"):
            if getattr(args, name) is not None:
                warnings.append("--%s has no effect without --speculative-algorithm" % name.replace("_", "-"))
                setattr(args, name, None)
    return warnings


def server_args_dict(args):
    """The server arguments as /get_server_info reports them (SGLang's field names)."""
    out = dict(vars(args))
    out.pop("sim_profile", None)
    out.pop("config", None)  # not a ServerArgs field: --config is merged before parsing
    out["tensor_parallel_size"] = out.get("tp_size")
    return out
