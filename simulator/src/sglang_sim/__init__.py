"""sglang-sim: a simulator of an SGLang server for testing without a GPU."""

__version__ = "0.1.0"

# The SGLang release whose flags, log lines and HTTP shapes the simulator follows by default
# (a profile may report another version string).
SGLANG_VERSION = "0.5.6"
