"""SGLang's launch flags (the subset the collection uses) and its defaulting rules.

Flag names, aliases, defaults and choices follow SGLang 0.5.x ``ServerArgs.add_cli_args``;
``--tp`` works as it does on SGLang, through argparse prefix matching of ``--tp-size``.
Flags outside this subset are rejected as argparse rejects unknown flags (SGLang accepts
them; a unit that passes one fails here first -- see README "Where it is not faithful").
"""

import argparse
import logging

from sglang_sim.models import KV_CACHE_DTYPES

SPECULATIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
ATTENTION_BACKENDS = (
    "triton", "torch_native", "flex_attention", "nsa", "cutlass_mla", "fa3", "fa4", "flashinfer",
    "flashmla", "trtllm_mla", "trtllm_mha", "dual_chunk_flash_attn", "aiter", "wave", "intel_amx", "ascend",
)

log = logging.getLogger("sglang_sim")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m sglang_sim",
        description="Simulated SGLang server: takes sglang.launch_server's flags plus --sim-profile.",
    )
    add = parser.add_argument
    add("--model-path", "--model", type=str, required=True, help="The path of the model weights (not read; reported).")
    add("--tokenizer-path", type=str, default=None)
    add("--served-model-name", type=str, default=None)
    add("--host", type=str, default="127.0.0.1")
    add("--port", type=int, default=30000)
    add("--tp-size", "--tensor-parallel-size", type=int, default=1, dest="tp_size")
    add("--dp-size", "--data-parallel-size", type=int, default=1, dest="dp_size")
    add("--kv-cache-dtype", type=str, default="auto", choices=KV_CACHE_DTYPES)
    add("--mem-fraction-static", type=float, default=None)
    add("--max-running-requests", type=int, default=None)
    add("--cuda-graph-max-bs", type=int, default=None)
    add("--context-length", type=int, default=None)
    add("--chunked-prefill-size", type=int, default=None)
    add("--api-key", type=str, default=None)
    add("--enable-metrics", action="store_true")
    add("--trust-remote-code", action="store_true")
    add("--disable-radix-cache", action="store_true")
    add("--watchdog-timeout", type=float, default=300)
    add("--attention-backend", type=str, default=None, choices=ATTENTION_BACKENDS)
    add("--speculative-algorithm", type=str, default=None, choices=SPECULATIVE_ALGORITHMS)
    add("--speculative-draft-model-path", "--speculative-draft-model", type=str, default=None)
    add("--speculative-num-steps", type=int, default=None)
    add("--speculative-eagle-topk", type=int, default=None)
    add("--speculative-num-draft-tokens", type=int, default=None)
    add("--random-seed", type=int, default=None)
    add("--log-level", type=str, default="info")
    add("--sim-profile", type=str, default=None,
        help="Simulator profile (YAML file, or a bundled name: default, deterministic, fast).")
    return parser


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
    for name in ("max_running_requests", "cuda_graph_max_bs", "context_length", "speculative_num_steps",
                 "speculative_eagle_topk", "speculative_num_draft_tokens"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError("--%s must be >= 1, got %d" % (name.replace("_", "-"), value))
    if args.served_model_name is None:
        args.served_model_name = args.model_path
    if args.tokenizer_path is None:
        args.tokenizer_path = args.model_path
    if args.chunked_prefill_size is None:
        args.chunked_prefill_size = 8192
    # SGLang 0.5.x ServerArgs._handle_speculative_decoding
    if args.speculative_algorithm == "NEXTN":
        args.speculative_algorithm = "EAGLE"
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
    out["tensor_parallel_size"] = out.get("tp_size")
    return out
