"""Stand-in for the get-pip.py bootstrap that `ansible-test --venv` downloads.

ansible-test fetches get-pip from a host these build machines cannot reach. This shim does
the same job offline: bootstrap pip with the interpreter's own ensurepip, then install what
ansible-test asked for (from PyPI, which is reachable). tools/run-sanity places it in
ansible-test's cache under the name ansible-test looks for.
"""
import subprocess
import sys

GET_PIP_ONLY_OPTIONS = ("--no-setuptools", "--no-wheel")

args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
