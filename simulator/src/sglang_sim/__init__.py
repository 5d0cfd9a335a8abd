"""sglang-sim: a simulator of an SGLang server for testing without a GPU."""

__version__ = "0.1.0"

# The SGLang release whose flags, log lines and HTTP shapes the simulator follows by default
# (a profile may report another version string): the version of the recorded contract.
from sglang_sim.args import SGLANG_VERSION  # noqa: E402,F401
