"""Stopping a decoder call in flight (inference.call_stop): the cancel flag's watchers, run options
that terminate only once every request a call serves is cancelled, and a real call stopped by them
on the tiny model, after which the decoder serves the next call exactly as before."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from inference.call_stop import CancelFlag, Terminated, is_termination, stopping_when


def test_a_flag_calls_each_watcher_once_on_the_thread_that_raises_it() -> None:
    flag = CancelFlag()
    heard: list[str] = []
    flag.watch(lambda: heard.append(threading.current_thread().name))
    raiser = threading.Thread(target=lambda: (flag.set(), flag.set()), name="cancel path")
    raiser.start()
    raiser.join()
    assert flag.is_set() and heard == ["cancel path"]


def test_a_watcher_of_a_raised_flag_is_called_at_once_and_one_that_stopped_watching_never() -> None:
    raised, lowered = CancelFlag(), CancelFlag()
    raised.set()
    heard: list[str] = []
    raised.watch(lambda: heard.append("raised"))
    stop_watching = lowered.watch(lambda: heard.append("lowered"))
    stop_watching()
    lowered.set()
    assert heard == ["raised"]


def test_a_call_for_several_requests_terminates_only_once_all_are_cancelled() -> None:
    first, second = CancelFlag(), CancelFlag()
    with stopping_when([first, second]) as options:
        first.set()
        assert not options.terminate  # the second request still wants the call's rows
        second.set()
        assert options.terminate
    with stopping_when([first]) as options:  # raised already: terminated from the start
        assert options.terminate
    with stopping_when([]) as options:
        assert not options.terminate


def test_leaving_the_block_stops_watching() -> None:
    flag = CancelFlag()
    with stopping_when([flag]) as options:
        pass
    flag.set()
    assert not options.terminate


def test_only_a_run_that_the_flag_stopped_counts_as_terminated() -> None:
    flag = CancelFlag()
    with stopping_when([flag]) as options:
        failure = RuntimeError("Error in execution: Exiting due to terminate flag being set to true.")
        assert not is_termination(failure, options)  # not asked to stop: any failure stays one
        flag.set()
        assert is_termination(failure, options)
        assert not is_termination(RuntimeError("Error in execution: out of memory"), options)
        assert not is_termination(ValueError("terminate flag"), options)
    assert not is_termination(failure, None)


def test_a_decoder_call_of_a_cancelled_request_stops_and_the_next_call_is_unchanged(tiny_runtime) -> None:
    decoder = tiny_runtime.decoder
    prompt = np.array([[5, 9, 2, 7, 3, 11, 4, 8]], dtype=np.int64)  # [1, S]
    state = decoder.new_state()
    expected = state.append_tokens(prompt)  # [1, V]: what the prompt gives, never stopped
    following = state.append_tokens([6])

    stopped = decoder.new_state()
    flag = CancelFlag()
    flag.set()
    with stopping_when([flag]), pytest.raises(Terminated):
        stopped.append_tokens(prompt)
    assert stopped.length == 0  # a stopped call fed nothing: the state is as it was
    with stopping_when([CancelFlag()]):  # a request still wanted: its calls run to their end
        assert np.array_equal(stopped.append_tokens(prompt), expected)
    assert np.array_equal(stopped.append_tokens([6]), following)
