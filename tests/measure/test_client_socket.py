"""The client against a real loopback socket: chunk stamps, a dropped connection, the collector."""

import asyncio
import gc
import hashlib
import itertools
import socket
import sys
import threading
import time

import orjson
import pytest

from knee.measure import client, stream

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def event(tokens: int) -> bytes:
    data = b"data: " + orjson.dumps({"choices": [{"text": "x", "finish_reason": None}],
                                     "usage": {"prompt_tokens": 3,
                                               "completion_tokens": tokens}}) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


class OneResponse(threading.Thread):
    """Answers one request: `script(conn, seen)` writes the response and notes its times."""

    def __init__(self, script):
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.script, self.seen = script, {}

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            self.seen["request"] = time.perf_counter()
            self.script(conn, self.seen)
        self.sock.close()


def run_one(script, through_run: bool = True) -> tuple[dict, dict]:
    """One request through client.run, or through closed_loop on a loop the script can reach."""
    server = OneResponse(script)
    server.start()
    args = (f"http://127.0.0.1:{server.port}", "m", ["hi"], {"max_tokens": 2}, 1, 10)
    if through_run:
        result = client.run(*args)
    else:
        async def main():
            server.seen["loop"] = asyncio.get_running_loop()
            return await client.closed_loop(*args)
        result = asyncio.run(main())
    server.join(5)
    return result["records"][0], server.seen


@pytest.mark.skipif(sys.platform != "linux", reason="kernel receive timestamps are Linux's")
def test_chunks_are_stamped_when_they_arrived_not_when_the_busy_loop_read_them():
    def script(conn, seen):
        conn.sendall(HEAD)
        while "loop" not in seen:
            time.sleep(0.01)
        # block the client's event loop for 300 ms, then send the first chunk into it
        seen["loop"].call_soon_threadsafe(time.sleep, 0.3)
        time.sleep(0.05)
        seen["first"] = time.perf_counter()
        conn.sendall(event(1))
        time.sleep(0.5)  # the loop is free again long before the second chunk
        seen["second"] = time.perf_counter()
        conn.sendall(event(2) + b"0\r\n\r\n")

    rec, seen = run_one(script, through_run=False)
    assert rec["error"] is None and rec["chunk_tokens"] == [1, 1]
    first, second = rec["chunk_times"]
    # the first chunk was read about 250 ms after it arrived; its stamp is its arrival
    assert abs((first - rec["t_send"]) - (seen["first"] - seen["request"])) < 0.03
    assert abs((second - first) - (seen["second"] - seen["first"])) < 0.03
    assert stream.CHUNK_CLOCK.startswith("kernel receive timestamp")


def test_connection_dropped_mid_stream_is_an_error_with_what_was_read():
    def script(conn, seen):
        conn.sendall(HEAD + event(1))
        time.sleep(0.05)
        seen["gc_enabled_during_run"] = gc.isenabled()

    assert gc.isenabled()
    rec, seen = run_one(script)
    assert rec["error"] == "ConnectionError: connection closed: by the server"
    assert rec["chunk_tokens"] == [1] and rec["output_tokens"] == 1
    # the collector is off while the loop runs, and on again after it
    assert seen["gc_enabled_during_run"] is False
    assert gc.isenabled()


def test_error_answer_delimited_by_the_close_keeps_its_status_and_body():
    def script(conn, seen):
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\r\n"
                     b'{"error": "engine overloaded"}')

    rec, _ = run_one(script)
    assert rec["error"] == 'HTTPError: HTTP 503: {"error": "engine overloaded"}'


@pytest.mark.parametrize("sent, sampling, error", [
    (2, {"max_tokens": 2}, None),
    (3, {"max_tokens": 2}, "LengthError: 3 output tokens, more than max_tokens 2"),
    (1, {"max_tokens": 2}, None),  # the model may stop early where EOS counts
    (1, {"max_tokens": 2, "ignore_eos": True},
     "LengthError: 1 output tokens under ignore_eos, not max_tokens 2")])
def test_an_answer_of_another_length_than_asked_is_an_error(sent, sampling, error):
    def script(conn, seen):
        conn.sendall(HEAD + b"".join(event(n) for n in range(1, sent + 1)) + b"0\r\n\r\n")

    server = OneResponse(script)
    server.start()
    result = client.run(f"http://127.0.0.1:{server.port}", "m", ["hi"], sampling, 1, 10)
    server.join(5)
    rec = result["records"][0]
    assert rec["output_tokens"] == sent and rec["error"] == error


def ids_event(total: int, ids: list[int]) -> bytes:
    data = b"data: " + orjson.dumps({"choices": [{"text": "x", "finish_reason": None,
                                                  "token_ids": ids}],
                                     "usage": {"prompt_tokens": 3,
                                               "completion_tokens": total}}) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def answer(*events: bytes):
    def script(conn, seen):
        conn.sendall(HEAD + b"".join(events) + b"0\r\n\r\n")
    return script


def test_the_output_token_ids_and_their_sha256_are_recorded():
    """A chunk of several accepted tokens carries them all."""
    rec, _ = run_one(answer(ids_event(2, [7, 11])))
    assert rec["error"] is None and rec["output_token_ids"] == [7, 11]
    assert rec["output_sha256"] == hashlib.sha256(b"7,11").hexdigest()


def test_token_ids_that_do_not_count_the_usage_are_an_error_and_none_is_no_digest():
    rec, _ = run_one(answer(ids_event(1, [7]), ids_event(2, [])))
    assert rec["error"] == ("TokenIdError: 1 token ids for 2 output tokens counted by the "
                            "server's usage") and rec["output_sha256"] is None
    rec, _ = run_one(answer(event(1), event(2)))  # a server that returns no token ids
    assert rec["error"] is None and rec["output_token_ids"] is None
    assert rec["output_sha256"] is None


def test_every_request_asks_for_its_token_ids():
    body = client.request_body("chat", "m", "hi", {"max_tokens": 2})
    assert body["return_token_ids"] is True
    assert client.request_body("completions", "m", "hi", {})["return_token_ids"] is True


class SlowServer(threading.Thread):
    """Answers every request on every connection after `delay_s`, with two one-token chunks."""

    def __init__(self, delay_s: float):
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.delay_s, self.answered = self.sock.getsockname()[1], delay_s, 0

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(buf) < length:
                    buf += conn.recv(65536)
                buf = buf[length:]
                time.sleep(self.delay_s)
                self.answered += 1
                conn.sendall(HEAD + event(1) + event(2) + b"0\r\n\r\n")


def test_a_held_window_keeps_its_concurrency_for_min_s_from_the_prompts_in_order():
    server = SlowServer(0.02)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    prompts = [f"p{i}" for i in range(400)]
    out = client.run(base, "m", prompts, {"max_tokens": 2}, 2, 10,
                     hold=client.Hold(min_s=0.3, floor=4))
    hold, records = out["hold"], out["records"]
    assert hold["reached"] and out["wall_s"] >= 0.3 and hold["planned"] == 400
    assert 4 <= hold["sent"] == len(records) < 400
    assert [r["index"] for r in records] == list(range(len(records)))  # in order, none skipped
    assert out["concurrency_held_share"] > 0.8
    # the floor is sent however short min_s is; without a hold, every prompt
    assert client.run(base, "m", prompts[:6], {"max_tokens": 2}, 2, 10,
                      hold=client.Hold(min_s=0.0, floor=6))["hold"]["sent"] == 6
    out = client.run(base, "m", prompts[:5], {"max_tokens": 2}, 2, 10)
    assert len(out["records"]) == 5 and "hold" not in out
    # a list that runs out first: every prompt sent, and the window says it ended short
    short = client.run(base, "m", prompts[:4], {"max_tokens": 2}, 2, 10,
                       hold=client.Hold(min_s=5.0, floor=2))["hold"]
    assert short["sent"] == 4 and not short["reached"]
    server.sock.close()


class Partner:
    """A stand-in for the partner session's turns: before every request, 0.15 s of its own."""

    def __init__(self):
        self.taken, self.released = [], 0

    def take(self, label: str) -> float:
        self.taken.append(label)
        time.sleep(0.15)
        return 0.15

    def release(self) -> None:
        self.released += 1


def test_a_loop_taking_turns_keeps_its_own_clock_and_leaves_the_partners_turns_out():
    server = SlowServer(0.02)
    server.start()
    base, partner = f"http://127.0.0.1:{server.port}", Partner()
    out = client.run(base, "m", ["a", "b", "c", "d"], {"max_tokens": 2}, 1, 10, turn=partner)
    assert partner.taken == [f"request {i}" for i in range(4)] and partner.released == 4
    assert out["turn_wait_s"] == pytest.approx(0.6, abs=0.05)
    # 4 requests of about 0.02 s each: the 0.6 s of the partner's turns are not in the wall
    # time nor between one request's end and the next's send
    assert 0.08 <= out["wall_s"] < 0.3
    recs = out["records"]
    assert all(b["t_send"] - a["t_done"] < 0.05 for a, b in itertools.pairwise(recs))
    assert all(r["t_first"] >= r["t_send"] and r["t_last"] >= r["t_first"] for r in recs)
    assert out["concurrency_held_share"] > 0.8
    with pytest.raises(ValueError, match="only with one in flight"):
        client.run(base, "m", ["a", "b"], {"max_tokens": 2}, 2, 10, turn=Partner())
    server.sock.close()


class Stuck:
    """A partner that never ends its turn."""

    def take(self, label: str) -> float:
        while True:
            time.sleep(0.01)

    def release(self) -> None:
        pass


def _wait_for_a_stuck_partner(port: int) -> None:
    import signal

    from knee.measure import session

    signal.signal(signal.SIGTERM, session._raise_on_signal)  # as a session does
    client.run(f"http://127.0.0.1:{port}", "m", ["a"], {"max_tokens": 2}, 1, 10, turn=Stuck())


def test_a_signal_ends_the_wait_for_a_turn_at_once():
    """A session told to stop (SIGTERM, as knee pair stops the partner of a failed session)
    stops its engine: a wait for the partner's turn must not hold the loop's shutdown (as a
    worker thread's wait would) until it ends."""
    import multiprocessing
    import os
    import signal

    server = SlowServer(0.02)
    server.start()
    proc = multiprocessing.get_context("fork").Process(target=_wait_for_a_stuck_partner,
                                                       args=(server.port,))
    proc.start()
    time.sleep(0.5)
    began = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(5)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
        raise AssertionError("the wait for a turn outlived SIGTERM by 5 s")
    assert proc.exitcode != 0 and time.monotonic() - began < 3
    server.sock.close()
