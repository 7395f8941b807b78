"""Credentials: taken by reference, never written; values that look like one are redacted.

A secret never enters the config: `server.secret_env: [HF_TOKEN]` names variables whose values
the server gets from knee's own environment at boot. Whatever knee records of an environment or
an argv passes through `redact_env` / `redact_argv`, which replace the referenced names' values
and any value that looks like a credential (URL user info, a known token prefix, a long
high-entropy string), whatever its name.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from knee.core.records import Section

FROM_ENVIRONMENT = "<secret from knee's environment>"
REDACTED = "<redacted: looks like a credential>"
# prefixes of well-known token formats (Hugging Face, GitHub, GitLab, OpenAI-style, Slack, AWS,
# Google API keys, JWTs)
TOKEN_PREFIX = re.compile(
    r"(?<![A-Za-z0-9])(hf_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|glpat-[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{8,}|xox[abprs]-[A-Za-z0-9-]{8,}"
    r"|A[KS]IA[A-Z0-9]{12,}|AIza[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+)")
# (the scheme starts where no scheme character precedes it: a long word is scanned once, not
# once per character)
URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
# the same without a scheme, as an image reference carries it (user:password@registry/repo)
REF_USERINFO = re.compile(r"(?:^|\s)[^/\s:@]+:[^/\s@]+@[A-Za-z0-9][A-Za-z0-9.-]*(?:[/:]|\Z)")
AUTH_WORD = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
# a random word: split at separators, so that model names and paths do not read as one
CANDIDATE = re.compile(r"[A-Za-z0-9+=]{20,}")
# words in an environment variable's name that say its value is a credential (matched as whole
# words of the name: TOKENIZERS_PARALLELISM is not one)
SECRET_WORDS = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PAT", "KEY", "APIKEY", "AUTH",
                "CREDENTIAL", "CREDENTIALS", "CREDS", "BEARER", "COOKIE", "SESSION", "PRIVATE"}


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def high_entropy(word: str) -> bool:
    """A long random-looking word: mixed case and digits, 3.8 bits per character or more (hex
    digests and commit ids have no upper case; names split at their separators)."""
    return (any(c.isupper() for c in word) and any(c.islower() for c in word)
            and any(c.isdigit() for c in word) and entropy(word) >= 3.8)


def why_secret(value: str) -> str | None:
    """Why a value looks like a credential, or None."""
    if URL_USERINFO.search(value) or REF_USERINFO.search(value):
        return "a URL with a user and password"
    if TOKEN_PREFIX.search(value):
        return "a known token format"
    if AUTH_WORD.search(value):
        return "an authorization header value"
    if any(high_entropy(w) for w in CANDIDATE.findall(value)):
        return "a long random string"
    return None


def secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    return any(word in SECRET_WORDS for word in re.split(r"[_\W]+", name.upper()) if word)


def found_in(data: object, path: str = "") -> tuple[str, str] | None:
    """The first key or text value of nested data that looks like a credential: (where, why)."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            why = why_secret(str(key))
            if why:
                return f"{where} (the key)", why
            hit = found_in(value, where)
            if hit:
                return hit
    elif isinstance(data, list):
        for i, value in enumerate(data):
            hit = found_in(value, f"{path}[{i}]")
            if hit:
                return hit
    elif isinstance(data, str):
        why = why_secret(data)
        if why:
            return path, why
    return None


def redact_value(value: str) -> str:
    return REDACTED if why_secret(value) else value


def redact_env(env: dict[str, str], secret_env: Sequence[str] = ()) -> dict[str, str]:
    """env as a receipt records it: referenced secrets and credential-like values replaced."""
    return {**{k: redact_value(str(v)) for k, v in env.items()},
            **{k: FROM_ENVIRONMENT for k in secret_env}}


def redact_argv(argv: list[str]) -> list[str]:
    return [redact_value(a) for a in argv]


def redact_arm(arm: Section) -> Section:
    """A resolved arm as a receipt records it (its args and env passed through redaction)."""
    args = {k: redact_value(v) if isinstance(v, str) else v
            for k, v in (arm.get("args") or {}).items()}
    return {**arm, "args": args,
            "env": redact_env(arm.get("env") or {}, arm.get("secret_env") or [])}
