"""The boot's sampling check against a server that answers as vLLM does (a fake inside this unit
test: the real engine runs it in every session of the workflow tests): the sampled token added
to the 20 asked for when it is not among them, a seed that fixes the text, an engine that
refuses log-probabilities."""

import json
import math
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from knee.measure import samplecheck

VOCAB = [f"t{i}" for i in range(300)]


def key(i: int, body: dict, collides: bool) -> str:
    """A token's key as vLLM writes it: its id when asked for ids, else its text (collides:
    a server that keys by text whatever it is asked, its texts shared by ten tokens each, as
    byte pieces that decode to the same replacement character are)."""
    if collides:
        return f"t{i % 30}"
    return f"token_id:{i}" if body.get("return_tokens_as_token_ids") else VOCAB[i]


def cut(lp: list[float], temperature: float, body: dict) -> list[float]:
    """The weights sampling at `temperature` with the body's top_k and top_p draws from (vLLM's
    order: top_k, then the nucleus of what it keeps)."""
    w = [math.exp(x / temperature) for x in lp]
    order = sorted(range(len(lp)), key=lambda i: -lp[i])
    kept = order[:body["top_k"]] if body.get("top_k", -1) > 0 else order
    total, mass, nucleus = math.fsum(w[i] for i in kept), 0.0, []
    for i in kept:
        if mass >= body.get("top_p", 1.0):
            break
        nucleus.append(i)
        mass += w[i] / total
    return [w[i] if i in set(nucleus) else 0.0 for i in range(len(lp))]


def answer(body: dict, mode: str) -> dict:
    """vLLM's /v1/completions answer with logprobs: 20 likeliest per position, plus the sampled
    token where it is not among them. mode: correct; broken (a third of the tokens drawn
    uniformly); hot (drawn at 1.25 times the temperature asked); uncut (top_k and top_p
    ignored); collides (keyed by text whatever is asked, ten tokens to a text)."""
    rng = random.Random(body["seed"])
    collides = mode == "collides"
    t = body["temperature"] * (1.25 if mode == "hot" else 1.0)
    tokens, sampled, tops = [], [], []
    for j in range(body["max_tokens"]):
        logits = [rng.gauss(0, 2.5) - 0.02 * i for i in range(len(VOCAB))]
        norm = math.log(math.fsum(math.exp(x) for x in logits))
        lp = [x - norm for x in logits]
        w = cut(lp, t, {} if mode == "uncut" else body)
        pick = rng.randrange(len(VOCAB)) if mode == "broken" and j % 3 else \
            rng.choices(range(len(VOCAB)), weights=w)[0]
        order = sorted(range(len(VOCAB)), key=lambda i: -lp[i])[:body["logprobs"]]
        top = {key(i, body, collides): lp[i] for i in order} | \
            {key(pick, body, collides): lp[pick]}
        tokens.append(key(pick, body, collides))
        sampled.append(lp[pick])
        tops.append(top)
    return {"choices": [{"text": "".join(tokens), "logprobs": {
        "tokens": tokens, "token_logprobs": sampled, "top_logprobs": tops}}]}


@pytest.fixture
def server(request):
    mode = request.param

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if mode == "refuses":
                self.send_response(400)
                self.end_headers()
                self.wfile.write(b'{"error": "logprobs are not supported"}')
                return
            data = json.dumps(answer(body, mode)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("server", ["correct"], indirect=True)
def test_a_server_that_samples_as_asked_passes_at_every_temperature(server):
    verdicts = samplecheck.check(server, "m", [0.7, 1.0], seed=5, timeout_s=30)
    assert [v["temperature"] for v in verdicts] == [0.7, 1.0]
    for v in verdicts:
        assert v["passed"], v["why"]
        assert v["repeatable"]
        assert v["tokens"] == len(samplecheck.PROMPTS) * samplecheck.OUTPUT_TOKENS
        assert abs(v["t_hat"] - v["temperature"]) <= v["t_limit"]
        # the sampled token vLLM adds beside the 20 is not taken for one of them
        assert all(len(t) == 20 for r in v["records"] for t in r["top_logprobs"])
        assert v["outside_top"] > 0


@pytest.mark.parametrize("server", ["broken"], indirect=True)
def test_a_server_that_draws_junk_fails_and_says_why(server):
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30)
    assert not v["passed"] and "outside the model's 20 likeliest" in v["why"]


@pytest.mark.parametrize("server", ["refuses"], indirect=True)
def test_a_server_that_refuses_log_probabilities_fails_the_check_not_the_session(server):
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30)
    assert not v["passed"] and v["records"] == []
    assert "did not answer a seeded request with log-probabilities at temperature 0.8" in v["why"]
    assert "400" in v["why"]


@pytest.mark.parametrize("server", ["correct"], indirect=True)
def test_the_check_names_tokens_by_id_so_that_tokens_of_one_text_stay_apart(server):
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30)
    assert all(t.startswith("token_id:") for r in v["records"] for t in r["tokens"])


@pytest.mark.parametrize("server", ["collides"], indirect=True)
def test_records_whose_tokens_collide_decide_nothing_rather_than_fail(server):
    """A server keying the 20 likeliest by colliding texts (as vLLM does without ids, for a
    tokenizer's byte pieces) loses entries: the check is undecided, not failed."""
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30)
    assert v["passed"] is None and "cannot decide" in v["why"], v["why"]


@pytest.mark.parametrize("server", ["hot"], indirect=True)
def test_a_server_that_samples_hotter_than_asked_fails_on_the_estimated_temperature(server):
    """1.0 drawn where 0.8 was asked: the temperature estimated from the records is 1.0 within
    its standard error, far beyond the 0.1 that fails a check."""
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30)
    assert v["passed"] is False and "put the temperature at" in v["why"], v["why"]
    assert abs(v["t_hat"] - 1.0) < 3 * v["t_se"] and v["t_se"] < 0.05


@pytest.mark.parametrize("server", ["correct"], indirect=True)
def test_the_configs_top_k_and_top_p_are_sent_and_an_engine_honouring_them_passes(server):
    config = {"temperature": 0.8, "top_k": 12, "top_p": 0.9}
    checks = samplecheck.check(server, "m", [0.8, 1.1], seed=5, timeout_s=30,
                               sampling_config=config)
    assert [(c["top_k"], c["top_p"]) for c in checks] == [(12, 0.9), (-1, 1.0)]
    assert all(c["passed"] for c in checks), [c["why"] for c in checks]
    assert checks[0]["violations"] == 0 and checks[0]["outside_top_expected"] is None


@pytest.mark.parametrize("server", ["uncut"], indirect=True)
def test_an_engine_ignoring_top_k_and_top_p_fails_where_it_drew_what_they_cut(server):
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30,
                            sampling_config={"temperature": 0.8, "top_k": 12, "top_p": 0.9})
    assert v["passed"] is False and v["violations"] > 0
    assert "top_k 12 and top_p 0.9 leave no chance" in v["why"], v["why"]


def test_every_boot_draws_with_seeds_of_its_own_that_the_config_fixes():
    seeds = {samplecheck.boot_seed(1234, f"{p}-{a}") for p in range(1, 15)
             for a in ("control", "candidate")}
    assert len(seeds) == 28 and all(0 <= s < 2 ** 31 for s in seeds)
    assert samplecheck.boot_seed(1234, "3-control") == samplecheck.boot_seed(1234, "3-control")
    assert samplecheck.boot_seed(1235, "3-control") != samplecheck.boot_seed(1234, "3-control")


def test_the_log_probability_mode_comes_from_the_arms_server_arguments():
    assert samplecheck.logprobs_mode({}) == "raw_logprobs"
    assert samplecheck.logprobs_mode({"logprobs-mode": "processed_logprobs"}) == \
        "processed_logprobs"


@pytest.mark.parametrize("server", ["correct"], indirect=True)
def test_processed_log_probabilities_leave_the_check_undecided(server):
    [v] = samplecheck.check(server, "m", [0.8], seed=5, timeout_s=30,
                            logprobs_mode="processed_logprobs")
    assert v["passed"] is None and v["logprobs_mode"] == "processed_logprobs"
    assert "only the model's raw ones (raw_logprobs)" in v["why"]
