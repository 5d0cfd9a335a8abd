"""Keep a server busy: THREADS clients send /generate back to back for SECONDS (errors are retried after
a short pause: the server may be restarting), the way production traffic keeps arriving during a
deployment. Standard library only (it runs with the test host's python3).

    python3 steady_load.py URL SECONDS THREADS
"""

import json
import sys
import threading
import time
import urllib.request


def client(url, until):
    body = json.dumps({"text": "steady load", "sampling_params": {"max_new_tokens": 96, "temperature": 0,
                                                                  "ignore_eos": True}}).encode()
    while time.monotonic() < until:
        request = urllib.request.Request(url + "/generate", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                resp.read()
        except Exception:  # noqa: BLE001 - a server that restarts fails requests in many ways; keep sending
            time.sleep(0.2)


def main():
    url, seconds, threads = sys.argv[1].rstrip("/"), float(sys.argv[2]), int(sys.argv[3])
    until = time.monotonic() + seconds
    workers = [threading.Thread(target=client, args=(url, until)) for dummy in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main()
