"""The load tool (playground/loadtest/burst.py, ``manage.py loadtest``) against a real daphne serving the
tiny model: intact streams are counted and timed; a killed server, an error answer and a refused
origin show up as what they are; and the stream check catches a lost, duplicated or miscounted token
in frames the real server sent."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.sync.client import connect

from inference.modelbuild import Progress, build_tiny_model, default_tiny_dir
from playground.loadtest import burst
from tests.servers import REPO, Daphne, start_daphne, stop


def start_tiny_server(state: Path) -> Daphne:
    """A ``playground.server`` serving the playground on the tiny model with its embedded worker."""
    model_dir = build_tiny_model(default_tiny_dir(), progress=Progress())
    return start_daphne(state, module="playground.server", PLAYGROUND_MODEL_DIR=str(model_dir))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    daphne = start_tiny_server(tmp_path_factory.mktemp("loadtest"))
    yield daphne
    stop(daphne.process)


def test_the_url_names_the_generate_endpoint_and_its_own_origin() -> None:
    assert burst.endpoint("ws://example.org:8000") == "ws://example.org:8000/ws/generate/"
    assert burst.endpoint("https://example.org/") == "wss://example.org/ws/generate/"
    assert burst.default_origin("wss://example.org/ws/generate/") == "https://example.org"
    with pytest.raises(burst.ConfigError, match="--url"):
        burst.endpoint("example.org:8000")
    with pytest.raises(burst.ConfigError, match="--clients"):
        burst.make_config("ws://h", 0, 10)


def test_every_stream_is_checked_counted_and_timed(server: Daphne) -> None:
    config = burst.make_config(server.url, 3, 12, seed=7)
    summary = burst.run(config)
    assert summary.broken == [], [c.problems for c in summary.broken]
    assert (summary.streams, summary.done, summary.tokens, summary.exit_status) == (3, 3, 36, 0)
    assert not summary.errors
    assert summary.aggregate_rate > 0
    assert set(summary.ttft_ms) == {"min", "p50", "p95", "p99", "max"}
    assert summary.gap_ms["p50"] >= 0 and summary.stream_rates["min"] > 0
    text = burst.format_summary(summary)
    assert "3 done, 0 ended with an error, 0 broken" in text and "tokens: 36 in" in text


def test_the_command_prints_json_and_exits_0(server: Daphne) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "loadtest", "--url", server.url, "--clients", "2", "--tokens", "5", "--json"],
        cwd=REPO,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    assert figures["streams"] == {"total": 2, "done": 2, "error": 0, "broken": 0}
    assert figures["tokens"] == 10 and figures["exit_status"] == 0


def test_error_answers_are_counted_by_code_not_called_broken(server: Daphne) -> None:
    summary = burst.run(burst.make_config(server.url, 2, 5, temperature=5.0))  # out of range
    assert summary.broken == []
    assert summary.errors == {"invalid_value": 2}
    assert summary.exit_status == 2
    assert "invalid_value ×2" in burst.format_summary(summary)


def test_a_refused_origin_is_a_broken_stream(server: Daphne) -> None:
    summary = burst.run(burst.make_config(server.url, 1, 5, origin="http://elsewhere.example"))
    assert summary.exit_status == 1
    assert "handshake was refused (HTTP 403" in summary.broken[0].problems[0]


STREAMING = re.compile(r", [1-9]\d* streaming, [1-9]\d* tokens")  # a progress line with tokens flowing


def test_a_server_killed_mid_stream_breaks_every_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    daphne = start_tiny_server(tmp_path)
    config = burst.make_config(daphne.url, 2, 480, timeout_s=60)  # the tiny model: 512 positions
    result: list[burst.Summary] = []
    progress: list[str] = []
    # a line every 20 ms: the kill comes within ~25 ms of the first token, far inside 480 tokens' time
    monkeypatch.setattr(burst, "PROGRESS_S", 0.02)
    runner = threading.Thread(target=lambda: result.append(burst.run(config, progress.append)))
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while not any(STREAMING.search(line) for line in progress) and time.monotonic() < deadline:
            time.sleep(0.005)  # until the progress lines say tokens are flowing
    finally:
        daphne.process.kill()  # no goodbye to the clients
        daphne.process.wait(timeout=10)
    runner.join(timeout=90)
    summary = result[0]
    assert summary.exit_status == 1
    assert len(summary.broken) == 2
    for check in summary.broken:
        assert "the connection closed" in check.problems[-1] and "before done or error" in check.problems[-1]
    assert "2 broken" in burst.format_summary(summary)
    # While it ran: progress lines, tokens flowing before the kill.
    assert any(" 0/2 streams ended" in line and STREAMING.search(line) for line in progress), progress
    assert sum(check.tokens for check in summary.broken) > 0


@pytest.fixture(scope="module")
def real_frames(server: Daphne) -> list[dict]:
    """One stream's frames exactly as the server sent them: started, 6 tokens, done."""
    with connect(server.websocket_url, origin=server.origin) as socket:
        socket.send(json.dumps(burst.make_config(server.url, 1, 6, seed=3).generate_frame(0)))
        frames = []
        while not frames or frames[-1]["type"] not in burst.END_TYPES:
            frames.append(json.loads(socket.recv(timeout=60)))
    assert [f["type"] for f in frames] == ["started"] + ["token"] * 6 + ["done"]
    return frames


def check_frames(frames: list[dict]) -> burst.StreamCheck:
    check = burst.StreamCheck(0, "load-0", 6, sent_at=0.0)
    for at, frame in enumerate(frames, start=1):
        check.feed(frame, float(at))
    check.close("the connection closed")
    return check


def test_the_real_stream_passes_the_check(real_frames: list[dict]) -> None:
    check = check_frames(real_frames)
    assert check.problems == [] and check.tokens == 6 and check.end["type"] == "done"


def test_a_lost_token_is_caught(real_frames: list[dict]) -> None:
    frames = real_frames[:3] + real_frames[4:]
    problems = check_frames(frames).problems
    assert any("token index 3 where 2 was due (1 lost)" in p for p in problems), problems
    assert any("done counts 6 tokens, 5 received" in p for p in problems), problems


def test_a_duplicated_token_is_caught(real_frames: list[dict]) -> None:
    frames = real_frames[:3] + [real_frames[2]] + real_frames[3:]
    problems = check_frames(frames).problems
    assert any("token index 1 where 2 was due" in p for p in problems), problems


def test_a_miscounted_done_and_a_missing_end_are_caught(real_frames: list[dict]) -> None:
    frames = copy.deepcopy(real_frames)
    frames[-1]["usage"]["completion_tokens"] = 7
    assert any("usage.completion_tokens 7, 6 received" in p for p in check_frames(frames).problems)
    problems = check_frames(real_frames[:-1]).problems
    assert problems == ["the connection closed before done or error (6 tokens received)"]
    after_end = check_frames(real_frames + [real_frames[1]]).problems
    assert any("after the stream's 'done'" in p for p in after_end), after_end


def test_header_options_become_name_value_pairs_and_a_malformed_one_is_refused_by_name():
    assert burst.parse_headers(["X-Forwarded-Proto: https", "X-Empty:"]) == (("X-Forwarded-Proto", "https"), ("X-Empty", ""))
    for bad in ("no colon", ": value", "Two words: x"):
        with pytest.raises(burst.ConfigError, match="--header"):
            burst.parse_headers([bad])
