"""Keep a server busy: THREADS clients send /generate back to back for SECONDS (errors are retried after
a short pause: the server may be restarting), the way production traffic keeps arriving during a
deployment. Standard library only (it runs with the test host's python3).

Each client asks for a different number of tokens: requests of one length, batched together, end in
the same decode step, and then every client is between two requests at once. A drain that looks at
that moment finds nothing in flight and ends by itself (a starved test host made that gap long).

    python3 steady_load.py URL SECONDS THREADS
"""

import json
import sys
import threading
import time
import urllib.request


def client(url, until, max_new_tokens):
    sampling = {"max_new_tokens": max_new_tokens, "temperature": 0, "ignore_eos": True}
    body = json.dumps({"text": "steady load", "sampling_params": sampling}).encode()
    while time.monotonic() < until:
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(url + "/generate", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                resp.read()
        except Exception:  # noqa: BLE001 - a server that restarts fails requests in many ways; keep sending
            time.sleep(0.2)


def main():
    url, seconds, threads = sys.argv[1].rstrip("/"), float(sys.argv[2]), int(sys.argv[3])
    until = time.monotonic() + seconds
    workers = [threading.Thread(target=client, args=(url, until, 96 + 37 * number))
               for number in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main()
