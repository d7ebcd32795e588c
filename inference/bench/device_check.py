"""The device check: the GPU build measured against the CPU exact build, one JSON report.

    python -m inference.bench.device_check --model DIR --reference DIR [--provider cuda|cpu] [--serve]

``scripts/device-check`` runs it on a GPU machine after building both models. In order:

1. ``device``: a session on the provider alone (no CPU fallback), so a machine without a GPU fails
   here, at once, with ONNX Runtime's words (exit status 2);
2. ``placement``: one prefill and one decode step profiled (ONNX Runtime's profiler records each
   node's provider): every node that did not run on the provider, by name;
3. ``fidelity``: per reference prompt, the CPU exact build's greedy tokens (``--tokens``, 100) fed to
   both models: whether the model's greedy token agrees at every step, mean and max KL(exact ‖
   model) over the full distributions and the largest difference among the exact build's top-20
   probabilities;
4. ``speed``: decode tokens/s at batch 1, 8 and 32 (aggregate) and a prefill of 512 tokens;
5. ``serve`` (with ``--serve``): the playground started on the provider with the model, its worker's
   log line naming the provider, and one run streamed over the websocket (``manage.py loadtest``).

``--provider cpu`` runs the same steps on the CPU provider (the tests run it on the tiny model).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from inference.device_binding import load_cuda_libraries
from inference.engine import CPU, CUDA, Decoder
from inference.model_dir import MODEL_FILE, REPO_ROOT
from inference.modelbuild import quality
from inference.runtime import load_runtime

PROVIDERS = {"cuda": CUDA, "cpu": CPU}
TOP = 20
BATCHES = (1, 8, 32)
PREFILL = 512


class DeviceUnavailableError(RuntimeError):
    """The provider cannot run a session here (no GPU, no driver, libraries missing)."""


def probe(model_file: Path, provider: str) -> dict[str, Any]:
    """A session on ``provider`` alone; :class:`DeviceUnavailableError` when that fails."""
    if provider not in ort.get_available_providers():
        raise DeviceUnavailableError(
            f"{provider} is not in this ONNX Runtime ({ort.get_available_providers()}): install the cuda extra"
        )
    if provider == CUDA:
        load_cuda_libraries()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(model_file), options, providers=[provider])
    except Exception as exc:  # ONNX Runtime raises its own Fail/RuntimeException types
        raise DeviceUnavailableError(f"no session on {provider}: {exc}") from exc
    if session.get_providers()[0] != provider:
        raise DeviceUnavailableError(f"the session fell back to {session.get_providers()}")
    return {"provider": provider, "onnxruntime": ort.__version__, "device": ort.get_device()}


def placement(model_file: Path, provider: str, prompt: list[int]) -> dict[str, Any]:
    """One prefill and one decode step under ONNX Runtime's profiler: the nodes that did not run on ``provider``."""
    options = ort.SessionOptions()
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = str(Path(tmp) / "profile")
        session = ort.InferenceSession(str(model_file), options, providers=[provider, CPU] if provider != CPU else [CPU])
        logits, past = quality.step(session, prompt, quality.empty_past(session))
        quality.step(session, [int(np.argmax(logits[-1]))], past)
        events = json.loads(Path(session.end_profiling()).read_text())
    nodes: dict[str, str] = {}
    for event in events:
        args = event.get("args", {})
        if event.get("cat") == "Node" and "provider" in args:
            nodes[str(event["name"]).removesuffix("_kernel_time")] = args["provider"]
    elsewhere = sorted(name for name, where in nodes.items() if where != provider)
    return {"nodes": len(nodes), "on_provider": len(nodes) - len(elsewhere), "elsewhere": elsewhere[:50]}


def reference_prompts(codec) -> dict[str, list[int]]:
    """The quality tool's prompts: its greedy prompt and the start of its text."""
    return {
        "greedy": codec.encode(quality.GREEDY_PROMPT, "completion"),
        "text": codec.encode(quality.MIXED_TEXT, "completion")[:64],
    }


def fidelity(model: Decoder, exact: Decoder, prompts: dict[str, list[int]], tokens: int) -> dict[str, Any]:
    """The exact build's greedy continuation of each prompt fed to both models, compared step by step."""
    per_prompt = {}
    kls: list[float] = []
    for name, prompt in prompts.items():
        states = [exact.new_state(), model.new_state()]
        logits = [s.append_tokens(prompt)[0] for s in states]
        agree, top_diff, steps_kl = 0, 0.0, []
        for _ in range(tokens):
            want, got = quality.log_softmax(logits[0]), quality.log_softmax(logits[1])  # float64 [V]
            steps_kl.append(float((np.exp(want) * (want - got)).sum()))
            top = np.argsort(want)[-TOP:]
            top_diff = max(top_diff, float(np.abs(np.exp(want[top]) - np.exp(got[top])).max()))
            token = int(np.argmax(logits[0]))
            agree += int(np.argmax(logits[1]) == token)
            logits = [s.append_tokens([token])[0] for s in states]
        kls += steps_kl
        per_prompt[name] = {"greedy_agreement": agree / tokens, "mean_kl": float(np.mean(steps_kl)), "top20_max_abs": top_diff}
    return {
        "tokens": tokens,
        "greedy_equal": all(p["greedy_agreement"] == 1.0 for p in per_prompt.values()),
        "mean_kl": float(np.mean(kls)),
        "max_kl": float(np.max(kls)),
        "prompts": per_prompt,
    }


def speed(decoder: Decoder, steps: int) -> dict[str, Any]:
    """Decode tokens/s at each batch size (aggregate over the rows) and one prefill of 512 tokens."""
    rng = np.random.default_rng(0)
    vocab = decoder.shape.vocab_size
    result: dict[str, Any] = {}
    for batch in BATCHES:
        state = decoder.new_state(batch)
        state.append_tokens(rng.integers(0, vocab, size=(batch, 16)))
        state.append_tokens(rng.integers(0, vocab, size=(batch, 1)))  # warm
        start = time.perf_counter()
        for _ in range(steps):
            state.append_tokens(rng.integers(0, vocab, size=(batch, 1)))
        result[f"decode_tokens_per_s_batch_{batch}"] = round(batch * steps / (time.perf_counter() - start), 1)
    prompt = rng.integers(0, vocab, size=PREFILL)
    decoder.new_state().append_tokens(prompt)  # warm
    start = time.perf_counter()
    decoder.new_state().append_tokens(prompt)
    result["prefill_512_ms"] = round(1000 * (time.perf_counter() - start), 1)
    result["batch_32_over_batch_1"] = round(result["decode_tokens_per_s_batch_32"] / result["decode_tokens_per_s_batch_1"], 2)
    return result


def serve(model_dir: Path, provider: str, timeout: float = 240.0) -> dict[str, Any]:
    """The playground on ``provider`` with ``model_dir`` as SmolLM2, one run streamed over its websocket."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "playground.settings.dev",
        "PLAYGROUND_MODELS": "smollm2-135m-instruct",
        "PLAYGROUND_MODEL_DIR_SMOLLM2_135M_INSTRUCT": str(model_dir),
        "PLAYGROUND_EXECUTION_PROVIDERS": f"{provider},{CPU}",
        "PLAYGROUND_STATE_DIR": tempfile.mkdtemp(prefix="device-check-state-"),
    }
    python, manage = sys.executable, str(REPO_ROOT / "manage.py")
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        subprocess.run([python, manage, "migrate", "--noinput", "-v", "0"], env=env, check=True, timeout=timeout, cwd=REPO_ROOT)
        server = subprocess.Popen(
            [python, "-m", "playground.server", "-b", "127.0.0.1", "-p", str(port), "playground.asgi:application"],
            env=env,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for(port, server, timeout)
            load = subprocess.run(
                [python, manage, "loadtest", "--url", f"ws://127.0.0.1:{port}", "--clients", "1", "--tokens", "32", "--json"],
                env=env,
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
        log.seek(0)
        served_on = re.findall(r"inference worker serving \S+ \(.*?\) on (\S+)", log.read())
    summary = json.loads(load.stdout) if load.stdout.strip().startswith("{") else {"output": load.stdout[-2000:]}
    return {
        "streamed": load.returncode == 0,
        "worker_provider": served_on[:1],
        "loadtest": summary,
        "stderr": load.stderr[-1000:],
    }


def _wait_for(port: int, server: subprocess.Popen, timeout: float) -> None:
    """Until the server listens on ``port``; ``RuntimeError`` if it exits or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the playground server exited with status {server.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"the playground server did not listen on port {port} within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference.bench.device_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the built model to check (the cuda variant)")
    parser.add_argument("--reference", type=Path, required=True, help="the CPU exact build it is compared with")
    parser.add_argument("--provider", choices=sorted(PROVIDERS), default="cuda")
    parser.add_argument("--tokens", type=int, default=100, help="greedy tokens compared per prompt")
    parser.add_argument("--speed-steps", type=int, default=64, help="decode steps timed per batch size")
    parser.add_argument("--serve", action="store_true", help="also serve the playground and stream one run")
    args = parser.parse_args(argv)
    provider = PROVIDERS[args.provider]
    report: dict[str, Any] = {"provider": provider, "model": str(args.model), "reference": str(args.reference)}
    try:
        report["device"] = probe(args.model / MODEL_FILE, provider)
    except DeviceUnavailableError as exc:
        report["error"] = str(exc)
        print(json.dumps(report, indent=2))
        return 2
    threads = os.cpu_count() or 2
    runtime = load_runtime(args.model, (provider,), intra_op_threads=threads)
    exact = load_runtime(args.reference, (CPU,), intra_op_threads=threads).decoder
    prompts = reference_prompts(runtime.codec)
    report["placement"] = placement(args.model / MODEL_FILE, provider, prompts["greedy"])
    report["fidelity"] = fidelity(runtime.decoder, exact, prompts, args.tokens)
    report["speed"] = speed(runtime.decoder, args.speed_steps)
    if args.serve:
        report["serve"] = serve(args.model, provider)
    report["passed"] = {
        "every_node_on_provider": not report["placement"]["elsewhere"],
        "greedy_equal": report["fidelity"]["greedy_equal"],
        "mean_kl_at_most_1e-3": report["fidelity"]["mean_kl"] <= 1e-3,
        **(
            {"served_on_provider": report["serve"]["worker_provider"] == [provider] and report["serve"]["streamed"]}
            if args.serve
            else {}
        ),
    }
    print(json.dumps(report, indent=2))
    return 0 if all(report["passed"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
