"""Secret redaction: secret-shaped strings never reach a model request, a summary or audit text.

Each default pattern has a kind, and the replacement names it: `sk-ant-api03-...` becomes
`[REDACTED:anthropic_key]`. Where a pattern has a group named `secret`, only that group is
replaced, so context survives: `postgres://app:hunter2@db/x` becomes
`postgres://app:[REDACTED:url_password]@db/x`, `API_KEY=abc123` becomes `API_KEY=[REDACTED:api_key]`.

The patterns aim at secrets, not at code: ordinary identifiers, hex digests, UUIDs,
`max_tokens=4096` and `password = request.form["password"]` stay as they are. Redaction is
idempotent (redacting redacted text changes nothing).

Extra patterns come from `LONGRUN_REDACT_PATTERNS`: regular expressions separated by newlines, or
by commas outside brackets and braces (so `[a-z]{3,8}` survives) when the value has no newline.
Each is redacted as `[REDACTED:custom]` (only its `secret` group, if it has one).

These patterns see text; a file that holds a private key is hidden whole by the readers that show
file content, whatever slice they show (`longrun.redact_files`).

Tracing, logs, the audit and transcripts redact every short string (a tool name, a path, a span
attribute), so `Redactor.redact` first picks, in one pass over literals, the patterns a text can
match at all (issue 28: 2-25 us a string instead of 30-90 us); the tests hold it equal to the
per-pattern path it replaced. Over 400 lines: the patterns and the gates that choose among them
are one table, read together.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from longrun.errors import ConfigError

ENV_VAR = "LONGRUN_REDACT_PATTERNS"


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret. `hints`: literal substrings (lower-case) one of which any match
    contains; text holding none of them skips the regex (the fast path on large text).

    `case_hints` and `needs` only narrow which patterns `Redactor.redact` tries on a text; neither
    may exclude a text the regex could match. `case_hints`: substrings in the text's own case, one
    of which any match contains (so only for a case-sensitive regex); where given, they replace
    `hints`. `needs`: substrings one of which any match also contains (`:` or `=` of an assignment)."""

    kind: str
    regex: re.Pattern[str]
    hints: tuple[str, ...] = ()
    substitute: Callable[[str], str] | None = None
    """Replaces this kind's matches in a text itself, where one `regex.sub` would not be linear."""
    case_hints: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


def _p(kind: str, pattern: str, hints: tuple[str, ...] = (), flags: int = 0, *,
       case: tuple[str, ...] = (), needs: tuple[str, ...] = ()) -> SecretPattern:
    return SecretPattern(kind, re.compile(pattern, flags), hints, case_hints=case, needs=needs)


# A tool's prefix of a line: read_file's `{lineno:>6}\t`, grep's `relpath:lineno:`.
_TOOL_LINE_PREFIX = re.compile(r"[ ]{0,9}[0-9]{1,12}\t|[^\n:]{1,4096}:[0-9]{1,12}:")


def _line_rule(kind: str, pattern: str, hints: tuple[str, ...], case: tuple[str, ...] = ()) -> SecretPattern:
    """A pattern for a line of its own (a `.pgpass` line, a multi-line `.netrc`'s `password`),
    matched at each line's start and, where read_file or grep put their prefix before the line, at
    the end of it. Not `(?m)^` with a look-behind for the prefixes: every `digit:` of a line would
    start a new attempt that scans to the line's end, which is quadratic on `0:0:0:...`."""
    rx = re.compile(pattern)

    def substitute(text: str) -> str:
        out: list[str] = []
        changed = False
        for line in text.splitlines(keepends=True):
            m = rx.match(line)
            if m is None and (prefix := _TOOL_LINE_PREFIX.match(line)) is not None:
                m = rx.match(line, prefix.end())
            if m is not None:
                line, changed = line[: m.start()] + _replace(kind, m) + line[m.end():], True
            out.append(line)
        return "".join(out) if changed else text

    return SecretPattern(kind, rx, hints, substitute=substitute, case_hints=case)


# A URL's password: the text between `user:` and the last `@` (within 256 characters) that a host
# follows, so an unencoded `/`, `#` or `@` in it is covered; a port followed by a path
# (`host:443/@scope/pkg`) is not a password.
_URL_PASSWORD = (
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^:/?#@\s\"'<>]{0,256}:"
    r"(?!\d{1,5}(?:[/?#]|$))(?P<secret>[^\s\"'<>\[\]]{1,256})@(?=[A-Za-z0-9\[])"
)
# A `.pgpass` line: host:port:database:user:password (`*` for any field but the password).
_PGPASS = r"[A-Za-z0-9_.\-*\[\]]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<secret>[^\s:][^\s]{3,})\r?$"
# `password=word` with a plain word (no digit or symbol, which `_VALUE` requires): only after `=`,
# a word that is not code (`password=password`, `password=None`, `password = getpass()`).
_PLAIN_WORD = (
    r"(?:password|passwd|passphrase)\s{0,8}=(?!=)\s{0,8}"
    r"(?!(?:none|null|nil|true|false|str|string|password|passwd|passphrase|pwd|secret|required|optional|self|"
    r"undefined|empty|input|getpass|os|env|config|settings|args|kwargs)(?![A-Za-z_\-]))"
    r"(?P<secret>[A-Za-z][A-Za-z_\-]{3,63})(?![A-Za-z0-9_\-.(\[{:])"
)

# `.netrc` (curl, git, pip, ftp read it): `machine HOST login USER password PW` on one line, or the
# tokens one per line. Case-sensitive, as netrc's keywords are; on one line the host must look like
# one (a dot in it) or a `login`/`account` pair must come first, and a line of its own must hold
# nothing but `password PW` (with a `login` pair before it), so prose that says "password" stays.
_NETRC_PAIR = r"[ \t]++(?:login|account|port)[ \t]++\S++"
_NETRC_INLINE = (
    rf"(?<![A-Za-z0-9_\-])(?:machine[ \t]++(?:(?=[^\s.]*+\.)\S++(?:{_NETRC_PAIR}){{0,3}}|\S++(?:{_NETRC_PAIR}){{1,3}})"
    rf"|default(?:{_NETRC_PAIR}){{1,3}})[ \t]++password[ \t]++(?P<secret>\S++)"
)
_NETRC_LINE = r"[ \t]*+(?:(?:login|account)[ \t]++\S++[ \t]++)?password[ \t]++(?P<secret>\S++)[ \t]*+\r?$"
# An environment variable named `*_KEY` (`SENTRY_AUTH_KEY=...`, `export SIGNING_KEY='...'`, a compose
# file's `ENCRYPTION_KEY: ...`): upper case as environments are, and a value of 12 or more token
# characters with a digit, so `SORT_KEY=name`, `PRIMARY_KEY = True` and `API_KEY_NAME=header` stay.
_ENV_KEY = (
    r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]{0,60}_KEY[\"']?[ \t]*+[:=](?!=)[ \t]*+[\"']?"
    r"(?P<secret>(?=[A-Za-z0-9_\-+/=.~]{0,63}[0-9])[A-Za-z0-9_\-+/=.~]{12,})(?![A-Za-z0-9_\-+/=.~])"
)

# Start of a token: not preceded by a character that could continue it.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# Before a provider key's own prefix a hyphen is still a boundary: `tool-sk-ant-api03-...` (a key
# glued to a name) is a key. Letters and digits are not, so `task-ant...` or `disk-...` never match.
_B_KEY = r"(?<![A-Za-z0-9_])"
# An assignment: `KEY = value`, `KEY: value`, `"KEY": "value"`, `KEY=value` (not `==`, `!=`, `<=`).
_ASSIGN = r"""["']?\s*(?<![=!<>])(?::|=)(?!=)\s*"""
_ASSIGNS = (":", "=")
"""What an assignment pattern's match holds one of (`_ASSIGN`, `[:=]`): its `needs`."""
# A quoted literal, or an unquoted value with a digit or symbol in it (so `token=self.token` and
# `password: str` are left alone) and no call/subscript/brace syntax. The digit or symbol must come
# within the value's first _SYMBOL_WITHIN characters: an unbounded look-ahead rescans the rest of a
# token from every keyword in it, and `pwd:pwd:pwd:...` made redaction quadratic.
_SYMBOL_WITHIN = 64
_CHAR = r"""[^\s"'`,;&()\[\]{}<>$]"""
# An `&` inside an unquoted value (`password: abc&def123`, YAML and .env files), but not one that
# starts the next parameter of a URL query (`?token=abc123&x=1`), and never a value's first
# character (`let password = &args[1];` is Rust, not a secret). The look-ahead for a digit or symbol
# takes `&` as one, in a plain character class: an alternation there made `pwd:pwd:...` 3x slower.
_AMP = rf"&(?![A-Za-z0-9_.\-]{{1,64}}=)(?={_CHAR})"
_VALUE = (
    r"""(?:(?P<q>["'])(?P<secret>[^"'\r\n\[\]{}$<>]{4,})(?P=q)"""
    rf"""|(?P<secret2>(?=[^\s"'`,;()\[\]{{}}<>$]{{0,{_SYMBOL_WITHIN - 1}}}[0-9!@#%^*+/=~&]){_CHAR}(?:{_CHAR}|{_AMP}){{3,}}))"""
)


def _assignment(kind: str, keys: str, hints: tuple[str, ...]) -> SecretPattern:
    # Anchored on the keyword itself (any prefix, `DB_PASSWORD`, is fine): a literal start is what
    # keeps these patterns fast on large text.
    return _p(kind, rf"(?:{keys}){_ASSIGN}{_VALUE}", hints, re.IGNORECASE, needs=_ASSIGNS)


_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# base64 lines, and the `Name: value` header lines of an armored (PGP) or encrypted PEM block
# (`\\n` too: a key in a JSON string, whose line breaks are backslash and n, cut before its END)
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s]|\\[nr]|(?<=\n)[A-Za-z][A-Za-z0-9\-]{0,40}: [^\n]{0,200}\n)*")


# An OpenSSH key's body without its BEGIN line (a command's `tail -n +2 id_ed25519`): its first
# base64 characters say "openssh-key-v1"; the base64 lines after it go too (read_file's prefix allowed).
_OPENSSH_BODY = (
    r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]*+"
    r"(?:\r?\n(?:[ ]{0,9}[0-9]{1,12}\t)?[ \t]*+[A-Za-z0-9+/=]{8,}+(?=\r?\n|$))*+"
)


def _redact_private_keys(text: str) -> str:
    """Each private key block (PEM, OpenSSH, PGP's `PRIVATE KEY BLOCK`), from its BEGIN line to the
    first END line after it, or, with no END line (a truncated block), through the base64 (and the
    armor's header lines) that follows.

    Not one regex: `BEGIN(?:[\\s\\S]*?END|...)` rescans to the end of the text from every BEGIN
    line whose END is missing, which is quadratic (8,000 BEGIN lines took 29 s). Here the next END
    is looked up once and reused while it lies ahead, so the text is scanned a bounded number of
    times."""
    out: list[str] = []
    pos = 0
    end: re.Match[str] | None = None
    searched_from = -1  # `end` is the first END at or after this offset (None: there is none)
    label = "[REDACTED:private_key]"
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        body = begin.end()
        if searched_from < 0 or (end is not None and end.start() < body):
            end, searched_from = _PEM_END.search(text, body), body
        if end is not None:
            stop = end.end()
        else:
            body_run = _PEM_BODY.match(text, body)
            stop = body_run.end() if body_run else body
        out += (text[pos : begin.start()], label)
        pos = stop
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern("private_key", _PEM_BEGIN, ("private key",), substitute=_redact_private_keys,
                  case_hints=("PRIVATE KEY",)),
    _p("private_key", _OPENSSH_BODY, ("b3blbnnzac1rzxktdje",), case=("b3BlbnNzaC1rZXktdjE",)),
    _p("anthropic_key", _B_KEY + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _E, ("sk-ant-",)),
    _p("openai_key", _B_KEY + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}" + _E, ("sk-",)),
    _p("aws_access_key", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Z0-9])", ("akia", "asia", "abia", "acca"),
       case=("AKIA", "ASIA", "ABIA", "ACCA")),
    _p(
        "aws_secret_key",
        r"(?<![A-Za-z0-9])(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        ("secret",),
        re.IGNORECASE,
        needs=_ASSIGNS,
    ),
    _p("github_token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})" + _E, ("gh", "github_pat_"),
       case=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _p("slack_token", _B + r"(?:xox[abposr]|xapp)-[A-Za-z0-9\-]{10,}" + _E, ("xox", "xapp-")),
    _p("stripe_key", _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}" + _E, ("_live_", "_test_")),
    _p("google_api_key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, ("aiza",), case=("AIza",)),
    _p("gitlab_token", _B + r"gl(?:pat|dt|rt|ptt|soat|ffct|cbt|imt|agent)-[A-Za-z0-9_\-]{20,}" + _E, ("gl",),
       case=("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glffct-", "glcbt-", "glimt-", "glagent-")),
    _p("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _E, ("npm_",)),
    _p("huggingface_token", _B + r"hf_[A-Za-z0-9]{30,}" + _E, ("hf_",)),
    # the kinds detect-secrets' plugins catch and these patterns did not (bench/redaction_eval.py)
    _p("sendgrid_key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, ("sg.",), case=("SG.",)),
    _p("twilio_key", r"(?<![A-Za-z0-9])(?:AC|SK)[0-9a-f]{32}(?![A-Za-z0-9])", ("ac", "sk"), case=("AC", "SK")),
    _p("azure_storage_key", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86,88}={0,2})", ("accountkey=",), case=("AccountKey=",)),
    _p("mailchimp_key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])", ("-us",)),
    _p("discord_token", r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + _E,
       (), case=(".",)),
    _p("telegram_bot_token", r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}" + _E, (":aa",), case=(":AA",)),
    _p("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+", ("hooks.slack.com",), case=("https://hooks.slack.com/services/",)),
    _p("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _E, ("eyj",), case=("eyJ",)),
    _p("bearer_token", r"(?<![A-Za-z0-9])bearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)", ("bearer",), re.IGNORECASE),
    _p("basic_auth", r"authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})", ("basic",),
       re.IGNORECASE, needs=_ASSIGNS),
    _p("url_password", _URL_PASSWORD, ("://",)),
    _line_rule("pgpass", _PGPASS, (":",)),
    _p("netrc_password", _NETRC_INLINE, ("password",), case=("password",)),
    _line_rule("netrc_password", _NETRC_LINE, ("password",), case=("password",)),
    _p("env_key", _ENV_KEY, ("_key",), case=("_KEY",), needs=_ASSIGNS),
    _assignment("password", r"password|passwd|passphrase|pwd", ("pass", "pwd")),
    _p("password", _PLAIN_WORD, ("pass",), re.IGNORECASE, needs=("=",)),
    _assignment("api_key", r"api[_\-]?key|access[_\-]?key|private[_\-]?key|secret[_\-]?key", ("key",)),
    _assignment("secret", r"client[_\-]?secret|secret", ("secret",)),
    _assignment("token", r"token|credentials?", ("token", "credential")),
)

_SENSITIVE_KEY = re.compile(
    r"(?:password|passwd|passphrase|secret|api[_\-]?key|access[_\-]?key|private[_\-]?key|token|credentials?)$",
    re.IGNORECASE,
)
"""A JSON object key whose string value `redact_json` redacts whatever it looks like."""


def split_patterns(value: str) -> list[str]:
    """Split the environment variable's value into regexes (see the module docstring)."""
    if "\n" in value:
        parts = value.splitlines()
    else:
        parts, depth, cur, escaped = [], 0, "", False
        for ch in value:
            if escaped:
                cur, escaped = cur + ch, False
                continue
            if ch == "\\":
                cur, escaped = cur + ch, True
                continue
            if ch in "[{(":
                depth += 1
            elif ch in "]})" and depth:
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


class Redactor:
    """Replaces secret-shaped substrings. Patterns are compiled once; reuse the instance."""

    def __init__(self, patterns: list[str] | None = None, *, include_defaults: bool = True) -> None:
        """
        Args:
            patterns: extra regexes, redacted as `[REDACTED:custom]` (only a `secret` group, if any).
            include_defaults: keep the built-in secret patterns (turn off only in tests).

        Raises:
            ConfigError: an extra pattern is not a valid regex or matches the empty string.
        """
        extra = []
        for raw in patterns or []:
            try:
                rx = re.compile(raw)
            except re.error as exc:
                raise ConfigError(f"redaction pattern {raw!r} is not a valid regular expression: {exc}") from exc
            if rx.fullmatch(""):
                raise ConfigError(f"redaction pattern {raw!r} matches the empty string; make it specific")
            extra.append(SecretPattern("custom", rx))
        self.patterns: tuple[SecretPattern, ...] = (DEFAULT_PATTERNS if include_defaults else ()) + tuple(extra)
        self._prepare_gates()

    def _prepare_gates(self) -> None:
        """Bit masks (bit i: pattern i) per literal, so one pass over the literals says which patterns
        a text can match at all: a tracing attribute, a log line or a tool name, mostly none."""
        exact: dict[str, int] = {}
        lowered: dict[str, int] = {}
        needs: dict[str, int] = {}
        self._ungated = self._unneeded = 0
        for i, pat in enumerate(self.patterns):
            bit = 1 << i
            for table, literals in ((exact, pat.case_hints), (lowered, () if pat.case_hints else pat.hints),
                                    (needs, pat.needs)):
                for h in literals:
                    table[h] = table.get(h, 0) | bit
            if not pat.case_hints and not pat.hints:
                self._ungated |= bit
            if not pat.needs:
                self._unneeded |= bit
        shortest = [_min_length(pat.regex) for pat in self.patterns]
        self._fits = tuple(sum(1 << i for i, m in enumerate(shortest) if m <= n) for n in range(max(shortest, default=0)))
        self._all = (1 << len(self.patterns)) - 1
        # per text length below the longest minimum: only the literals of the patterns that fit it
        self._gates = tuple(
            tuple(tuple((h, bits) for h, bits in t.items() if bits & fits) for t in (exact, lowered, needs))
            for fits in (*self._fits, self._all)
        )

    def _candidates(self, text: str) -> int:
        """The patterns (bit i: pattern i) that may match `text`: those its length allows, one of whose
        hints it holds (none needed without hints) and, with `needs`, one of those too."""
        n = min(len(text), len(self._fits))
        mask = self._fits[n] if n < len(self._fits) else self._all
        exact, lowered, needs = self._gates[n]
        found = self._ungated
        for h, bits in exact:
            if h in text:
                found |= bits
        if lowered:
            low = text.lower()
            for h, bits in lowered:
                if h in low:
                    found |= bits
        mask &= found
        if not mask & ~self._unneeded:
            return mask
        ok = self._unneeded
        for h, bits in needs:
            if h in text:
                ok |= bits
        return mask & ok

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """The defaults plus the extra patterns of `LONGRUN_REDACT_PATTERNS`."""
        env = os.environ if environ is None else environ
        return cls(split_patterns(env.get(ENV_VAR, "")))

    def redact(self, text: str) -> str:
        """`text` with every secret-shaped substring replaced by `[REDACTED:<kind>]`.

        The patterns run in order, as `redact_per_pattern` runs them, but only those `_candidates`
        leaves; after a replacement the rest are chosen again on the new text. A short string
        with no candidate costs one pass over the literals and no regex."""
        if not text:
            return text
        mask = self._candidates(text)
        while mask:
            bit = mask & -mask
            pat = self.patterns[bit.bit_length() - 1]
            if pat.substitute is not None:
                new = pat.substitute(text)
            else:
                new = pat.regex.sub(functools.partial(_replace, pat.kind), text)
            if new != text:
                text = new
                mask = self._candidates(text) & ~((bit << 1) - 1)
            else:
                mask ^= bit
        return text

    def redact_per_pattern(self, text: str) -> str:
        """`redact` as it was before issue 28: every pattern in turn, its `hints` tested one by one
        (25-40 us on a short string). Kept as the reference the tests hold `redact` equal to on
        the corpora, and as the bench's "before"."""
        if not text:
            return text
        lowered: str | None = None
        for pat in self.patterns:
            if pat.hints:
                if lowered is None:
                    lowered = text.lower()
                if not any(h in lowered for h in pat.hints):
                    continue
            if pat.substitute is not None:
                new = pat.substitute(text)
            else:
                new = pat.regex.sub(functools.partial(_replace, pat.kind), text)
            if new != text:
                text, lowered = new, None
        return text

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON-like value with every string redacted; a string under a key named like a
        secret (`password`, `api_key`, `token`, ...) is replaced whole."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                if isinstance(k, str) and isinstance(v, str) and v and _SENSITIVE_KEY.search(k):
                    out[k] = v if v.startswith("[REDACTED:") else f"[REDACTED:{_key_kind(k)}]"
                else:
                    out[k] = self.redact_json(v)
            return out
        if isinstance(value, list):
            return [self.redact_json(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.redact_json(v) for v in value)
        return value


def _min_length(rx: re.Pattern[str]) -> int:
    """The fewest characters a match of `rx` spans, from the parser the `re` module compiles with (its
    engine skips a shorter string on the same figure); 0, no skipping, where that parser is missing."""
    try:
        parser: Any = importlib.import_module("re._parser")
        return int(parser.parse(rx.pattern, rx.flags).getwidth()[0])
    except Exception:  # a private module of the standard library: absent or changed means no bound
        return 0


def _key_kind(key: str) -> str:
    k = key.lower()
    for kind, words in (("password", ("pass",)), ("api_key", ("key",)), ("token", ("token", "credential"))):
        if any(w in k for w in words):
            return kind
    return "secret"


def _replace(kind: str, m: re.Match[str]) -> str:
    label = f"[REDACTED:{kind}]"
    groups = m.re.groupindex
    for name in ("secret", "secret2"):
        if name in groups and m.group(name) is not None:
            start, end = m.span(name)
            return m.string[m.start() : start] + label + m.string[end : m.end()]
    return label


@functools.lru_cache(maxsize=1)
def default_redactor() -> Redactor:
    """The process-wide redactor: defaults plus `LONGRUN_REDACT_PATTERNS` as read on first use."""
    return Redactor.from_env()
