"""Secrets by reference and redaction by value (knee.plan.secrets), and the session's check that
every referenced secret is set before anything boots."""

import pytest

from knee.core.errors import KneeError
from knee.measure import preboot
from knee.plan import secrets

TOKEN = "hf_Qm7cR2xLp9Vt4Kz8Nw3Bj6Hs1Dy5Fg0Ua"


@pytest.mark.parametrize("value", [
    TOKEN, "ghp_" + "a1B2" * 9, "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "sk-proj-abcdefghijklmnopqrstuv", "xoxb-1234567890-abcdefghij", "AKIAABCDEFGHIJKLMNOP",
    "postgres://user:pa55@db.internal:5432/x", "https://me:secret@proxy.example:3128",
    "Bearer abcdefgh12345678", "prefix " + "Zx9Kq2Lm4Np6Rt8Vw1Yb3Cd5Fg7Hj0",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
])
def test_credentials_are_recognised_by_value(value):
    assert secrets.why_secret(value)


@pytest.mark.parametrize("value", [
    "/models/DeepSeek-V4.1-Flash-df42c109f1defefcbfcedbe7d905718a12266e40",
    "Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int4", "resources/models/tiny-llama-s0-l4-h256",
    "sha256:" + "0123456789abcdef" * 4, "nobind", "2", "registry.local/dsv41-vllm:v12-1M",
    '{"method":"ngram","num_speculative_tokens":5}', "http://127.0.0.1:8000/v1",
    "--long-prefill-token-threshold",
])
def test_ordinary_values_are_kept(value):
    assert secrets.why_secret(value) is None
    assert secrets.redact_value(value) == value


@pytest.mark.parametrize(("name", "secret"), [
    ("HF_TOKEN", True), ("GITHUB_PAT", True), ("PASS", True), ("CREDS", True),
    ("VLLM_API_KEY", True), ("COOKIE", True), ("TOKENIZERS_PARALLELISM", False),
    ("VLLM_CPU_KVCACHE_SPACE", False), ("OMP_NUM_THREADS", False), ("KEYRING_BACKEND", False),
])
def test_credential_names_are_whole_words(name, secret):
    assert secrets.secret_name(name) is secret


def test_redaction_replaces_referenced_names_and_credential_values():
    env = {"HF_TOKEN": TOKEN, "EXTRA": TOKEN, "TOKENIZERS_PARALLELISM": "false",
           "DATABASE_URL": "postgres://u:pw@db/x"}
    shown = secrets.redact_env(env, ["HF_TOKEN", "OTHER"])
    assert shown == {"HF_TOKEN": secrets.FROM_ENVIRONMENT, "EXTRA": secrets.REDACTED,
                     "TOKENIZERS_PARALLELISM": "false", "DATABASE_URL": secrets.REDACTED,
                     "OTHER": secrets.FROM_ENVIRONMENT}
    argv = ["python", "--api-key", TOKEN, "--model", "/m"]
    assert secrets.redact_argv(argv) == ["python", "--api-key", secrets.REDACTED, "--model", "/m"]
    arm = {"args": {"api-key": TOKEN, "seed": 0}, "env": {"X": TOKEN}, "secret_env": ["S"]}
    assert TOKEN not in repr(secrets.redact_arm(arm))


def plan(secret_env):
    return {"arms": {"control": {"secret_env": secret_env}}, "runtime": {"engine_cpus": None},
            "model": {"generated": True}}


def test_a_session_refuses_to_boot_without_its_secret(monkeypatch):
    monkeypatch.delenv("KNEE_TEST_ABSENT", raising=False)
    with pytest.raises(KneeError, match=r"\$KNEE_TEST_ABSENT is not set .* nothing was booted"):
        preboot.preflight(plan(["KNEE_TEST_ABSENT"]), "control")
    monkeypatch.setenv("KNEE_TEST_ABSENT", "x")
    preboot.preflight(plan(["KNEE_TEST_ABSENT"]), "control")
