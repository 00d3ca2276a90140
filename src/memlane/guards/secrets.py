"""Secrets in notes: API keys, tokens, passwords and private keys are redacted from anything
memlane injects or prints — a note is plain text on disk, the agent's context is not.

The rule families follow two maintained secret scanners: gitleaks' default config
(``config/gitleaks.toml``: one rule per provider token format, plus ``generic-api-key``) and
Yelp's detect-secrets plugins (AWS, private keys, Basic auth in URLs, JWTs, Slack, Stripe,
Twilio, Mailchimp, SendGrid, npm, PyPI, Discord, Telegram, Azure storage, the keyword
detector). The patterns here are written for memlane, not copied: where a format has a fixed
prefix the rule is that exact format; the assignment rules (``DB_PASSWORD=…``, ``password: …``,
``"api_key": "…"``) keep the name and redact only the value, and a value must pass a check
(not a placeholder such as ``$VAR`` or ``<token>``, not a bare identifier, and — for names
like ``token`` or ``key`` — random-looking) before it counts.

Cost: nothing compiles at import (the hook path measures import time); a rule compiles the
first time a text holds one of its keywords (a fresh hook process compiles a handful, not all
66: ~10 ms). Every rule names keywords; one pass of substring checks over the lower-cased text
finds which occur, and a rule runs only on the lines that hold one of its own — so a note
without a secret costs those checks plus a few regex scans over a handful of lines. Each scan is
linear in its line, a 1 MB one too: a gap stops where its rule's own start recurs, a block at the
next BEGIN, and no quantifier backtracks into its neighbour (the texts that once took minutes are
in tests/test_secrets.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from ..records import dataclass
from functools import cache, lru_cache

REDACTED = "[redacted secret]"


@dataclass(frozen=True)
class Finding:
    """One secret found in a text: its family, its span (``text[start:end]`` is the secret —
    never stored here) and the 1-based line it starts on."""

    family: str
    start: int
    end: int
    line: int


# --- the checks an assigned value must pass (pattern sources, compiled by ``_re`` on first use);
# a value can be a whole line, so none may backtrack over it more than once: ``(?=\S*example)\S*``
# is ``\S*example\S*`` without trying every "example" in it
_PLACEHOLDER = (r"(?i)(?:[$<%]|\{\{|\[redacted|\*\*\*|xxx|\.\.\.|\u2026|your[_-]).*"
                r"|none|null|nil|true|false|yes|no|on|off|~|-|(?=\S*example)\S*|value|string|secret|password|token|")
_IDENTIFIER = r"[A-Za-z_][A-Za-z_.]*(?:\(\))?"  # password=password, token=self.token
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
_PATH_OR_URL = r"(?i)(?:~|\.{1,2})?/|[a-z][a-z0-9+.-]*://"
_VERSION = r"(?i)v?\d+\.\d+(?:\.[\w.]*|(?:\.\d+)*+[-+][\w.]*)?"  # v?\d+(?:\.\d+)+(?:[-+.][\w.]*)?, unambiguous
_TYPE_NAME = r"(?:str|string|bytes|int|bool|SecretStr|Secret|Optional|None)\b"
_CODE = r"[rbfuRBFU]{1,2}[\"']|[A-Za-z_][\w.]*[(\[]|[A-Za-z_]\w*\.[A-Za-z_]"  # r"…", os.environ[…], cfg.x


#: how a sentence gives a password's or a key's value: "… is X", "… for the staging db is X",
#: "… is: X", "… was set to X"
_PROSE_IS = (r"(?:[ \t]+(?:for|of|on|to|in|at)(?:[ \t]+[\w.@-]+){1,3}?)?[ \t]+(?:is|was|reads)"
             r"(?:[ \t]*:|[ \t]+(?:set|changed)[ \t]+to|[ \t]+now)?[ \t]+")
#: what a sentence names where a value could stand, and is no secret: a relative path to a file
#: ("keys/release-2024.asc"), a variable's name ("SECRET_KEY_BASE_V2"), an encoding ("base64-encoded")
_PROSE_NAMED = (r"[a-z0-9_.-]+(?:/[a-z0-9_.-]+)*/[a-z0-9_-]+\.[a-z][a-z0-9]{0,5}|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
                r"|(?i:base(?:64|32|58)|hex|utf-?(?:8|16)|sha-?\d+|md5|aes-?\d+|rsa-?\d+|hmac-sha\d+|pbkdf2)"
                r"(?:[-_](?:encoded|hashed|encrypted|signed|wrapped))?")

_re = cache(re.compile)


def _placeholder(value: str) -> bool:
    return bool(_re(_PLACEHOLDER).fullmatch(value))  # this covers "[redacted secret]" too


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _plausible(value: str, quoted: bool) -> bool:
    """Random-looking enough to be a token or key: long, mixed classes, high entropy."""
    if len(value) < 8 or _placeholder(value) or _re(_PATH_OR_URL).match(value):
        return False
    if _re(_DOTTED).fullmatch(value) or _re(_VERSION).fullmatch(value) or " " in value:
        return False
    classes = sum(any(f(c) for c in value) for f in (str.islower, str.isupper, str.isdigit))
    return classes >= 2 and _entropy(value) >= 3.0


def _given(value: str, quoted: bool) -> bool:
    """A password in a URL or a command line: anything but a placeholder."""
    return not _placeholder(value)


def _any(value: str, quoted: bool) -> bool:
    """A value assigned to a password-like name: anything but a placeholder, and unquoted
    neither a bare identifier (``password=password``) nor a path."""
    if _placeholder(value.strip()) or (not quoted and value.isdigit() and len(value) <= 5):
        return False  # a short number unquoted is a count, a port or an id (JSON: "password": 20786)
    return quoted or not (_re(_IDENTIFIER).fullmatch(value) or _re(_PATH_OR_URL).match(value))


def _env(value: str, quoted: bool) -> bool:
    """``SOME_TOKEN=value``: anything but a placeholder, a path or a short number."""
    return not (_placeholder(value) or _re(_PATH_OR_URL).match(value) or (value.isdigit() and len(value) <= 5))


def _line(value: str, quoted: bool) -> bool:
    """``password: a value with spaces`` (YAML): the whole value, unless a type annotation or code."""
    return not (_placeholder(value) or _re(_TYPE_NAME).match(value) or _re(_CODE).match(value))


def _prose(value: str, quoted: bool) -> bool:
    """A password written in a sentence: a value with a digit, or a sign other than ``_ - .``
    (a word such as "required", "reset-by-IT" or "get_password" is how the sentence or the code
    goes on), not a placeholder, path, URL or dotted name."""
    value = value.strip("\"'`")
    if _placeholder(value) or _re(_PATH_OR_URL).match(value) or " " in value and not quoted:
        return False
    if _re(_DOTTED).fullmatch(value) or not quoted and _re(_PROSE_NAMED).fullmatch(value):
        return False
    return any(c.isdigit() for c in value) or any(not c.isalnum() and not c.isspace() and c not in "_-." for c in value)


def _prose_token(value: str, quoted: bool) -> bool:
    """A key or token written in a sentence: long, with a digit, random-looking (a shortcut such as
    "Cmd+Shift+P" or a word is how the sentence goes on)."""
    value = value.strip("\"'`")
    if not quoted and _re(_PROSE_NAMED).fullmatch(value):
        return False
    return len(value) >= 16 and any(c.isdigit() for c in value) and _plausible(value, quoted)


def _header(value: str, quoted: bool) -> bool:
    return len(value) >= 8 and not _placeholder(value) and value.lower() not in {"bearer", "basic", "token"}


# --- the rules --------------------------------------------------------------------------
# name pieces shared by the assignment rules; matched case-insensitively
_PW_WORDS = r"(?:password|passwd|passphrase|secret|credentials?|[_.-]pwd)"
_TOKEN_WORDS = r"(?:token|key|auth|[_.-]pass)"
_SEP = r"(?:=(?!=)|:=|=>|:(?!:)|\uff1a)[ \t]*"  # \uff1a: a full-width colon
_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s\"'`,;&()\[\]{}<>\\][^\s\"'`,;&()\[\]{}<>]*)"  # not \n…
_ENV_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`;&|]+)"
_HEX32 = r"[0-9a-f]{32}"
_MYSQL = (r"\b(?i:mysql(?:dump|admin|import|check|sh|show|pump|binlog|slap|_upgrade|_secure_installation)?"
          r"|mariadb(?:-dump|-admin|-import|-check|-upgrade|-show|-binlog|-slap)?)\b")
_WORD = r"(?:[ \t]+(?!-p)[^\s|;&`]+)"  # a word of the same command, not the -p option
# the value glued to -p: quoted (with whatever the shell glues to it: -p'ab'cd is "abcd"), or a run
# with a letter or digit in it (not the "`." after `mysql -p`.)
_GLUED = r"(?:[^\s\"'`|;&()<>]+|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*')*"
_MYSQL_PW = (rf"((?:\"(?:[^\"\\\n]|\\.)+\"|'[^'\n]+'){_GLUED}"
             r"|(?=[^\s\"'`]*[A-Za-z0-9])[^\s\"'\[,`)][^\s\"'`)]*)")
_PK_BEGIN = r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
_PK_END = r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
_DOCKER_LOGIN = r"\b(?:docker|podman|buildah)\s+login\b"
_CURL = r"\bcurl\b"


def _until(start: str, char: str = r"[^\n]") -> str:
    """A lazy gap of ``char`` that stops where the rule's own ``start`` matches again: a later
    start finds the same secret, and no stretch of a line is scanned from two starts (linear)."""
    return rf"(?:(?!{start}){char})*?"


_CJK_WORDS = ("密码", "口令", "密钥", "秘钥", "令牌", "パスワード", "비밀번호")  # password, key…

#: (family, keywords, pattern, secret group, value check). A rule runs only on the lines that
#: hold one of its keywords (lower case, or as written when it has a capital; each rule's match
#: lies on one line); a rule without keywords runs on the whole text and must be cheap.
#: Order matters when two rules find the same span: the earlier (more exact) family wins.
_RULES: tuple[tuple[str, tuple[str, ...], str, int, object], ...] = (
    # the block runs to the first END within 16,000 characters (an 8192-bit RSA key is ~6,500) and
    # not past another BEGIN, where the next match starts: no stretch is scanned twice; a longer
    # or unended block keeps its base64 lines
    ("private key", (),
     rf"{_PK_BEGIN}(?:(?:(?!{_PK_BEGIN}|{_PK_END}).){{0,16000}}+{_PK_END}"
     r"|(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+:[^\n]*|(?=\r?\n[A-Za-z0-9+/=]{16,})))*)", 0, None),
    ("AWS access key id", ("akia", "asia", "abia", "acca", "a3t"),
     r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b", 0, None),
    ("AWS secret access key", ("secret",),
     # "= KEY", ": KEY", or a space alone, as ``aws configure set aws_secret_access_key KEY`` writes it
     r"(?i)(?:aws_?)?secret_?access_?key[\"']?(?:[ \t]*[:=][ \t]*|[ \t]+)[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
     1, None),
    # "aws secret: …", "AWS secret key = …": forty characters of the key's alphabet after an AWS label
    ("AWS secret access key", ("aws",),
     r"(?i)\baws[ \t_-]*(?:[a-z]+[ \t_-]+)?secret(?:[ \t_-]*key)?[\"']?[ \t]*[:=][ \t]*[\"']?"
     r"((?=[A-Za-z0-9/+]*[0-9/+])[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", 1, None),
    ("GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", 0, None),
    ("GitHub token", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", 0, None),
    ("GitLab token", ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glsoat-", "glcbt-",
                   "gloas-", "glagent-", "glffct-", "glwt-", "gr1348941"),
     r"\b(?:glpat|gldt|glrt|glptt|glft|glimt|glsoat|glcbt|gloas|glagent|glffct|glwt)-[A-Za-z0-9_-]{20,}"
     r"|\bGR1348941[A-Za-z0-9_-]{20,}", 0, None),
    ("Slack token", ("xox", "xapp-"),
     r"\b(?:xox[a-z]|xapp)(?:\.xox[a-z])?-[A-Za-z0-9-]{10,}", 0, None),
    ("Slack webhook", ("hooks.slack.com",),
     r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})", 1, None),
    ("Stripe key", ("_live_", "_test_", "whsec_"),
     r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,99}\b|\bwhsec_[A-Za-z0-9]{24,}\b", 0, None),
    ("Anthropic API key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}", 0, None),
    ("OpenAI API key", ("sk-",),
     r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|\bsk-(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{20,}\b", 0, None),
    ("Google API key", ("aiza",), r"\bAIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", 0, None),
    ("Google OAuth secret", ("gocspx-", "ya29."),
     r"\bGOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])|\bya29\.[A-Za-z0-9_-]{20,}", 0, None),
    ("Hugging Face token", ("hf_", "api_org_"), r"\b(?:hf_|api_org_)[A-Za-z0-9]{34,}\b", 0, None),
    # from the start of a run of the token's characters to its first eyJ (at the start or after a
    # "-"): a later eyJ of the same run ends its first part where this one does, so it can only fail
    # too, and is never tried (eyJ-eyJ-… stays linear)
    ("JWT", ("eyj",),
     r"(?<![A-Za-z0-9_-])(?>(?:[A-Za-z0-9_-]*?-)??(?=eyJ))"
     r"(eyJ[A-Za-z0-9_-]{8,}+\.ey[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,})", 1, None),
    ("npm token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", 0, None),
    ("npm token", ("_auth",), r"(?i):?_auth(?:token)?[ \t]*=[ \t]*[\"']?([^\s\"']+)", 1, _env),
    ("Twilio key", ("SK", "AC"), rf"\bSK[0-9a-fA-F]{{32}}\b|\bAC{_HEX32}\b", 0, None),
    ("Twilio key", ("twilio",),
     rf"(?i)twilio{_until('twilio', '[a-z0-9_.-]')}(?:auth[_.-]?token|secret)[\"']?[ \t]*[:=][ \t]*[\"']?({_HEX32})\b",
     1, None),
    ("SendGrid API key", ("sg.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", 0, None),
    ("Mailgun key", ("key-",), r"\bkey-[0-9a-zA-Z]{32}\b", 0, None),
    ("Mailgun key", ("mailgun",), rf"\b{_HEX32}-[0-9a-f]{{8}}-[0-9a-f]{{8}}\b", 0, None),
    ("Mailchimp API key", ("-us",), rf"\b{_HEX32}-us\d{{1,2}}\b", 0, None),
    ("Azure storage key", ("accountkey=", "sharedaccesskey=", "sig="),
     r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})|[?&]sig=([A-Za-z0-9%+/=]{30,})", 1, None),
    ("Azure AD client secret", ("q~",), r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])", 0, None),
    ("DigitalOcean token", ("_v1_",), r"\bdo[opr]_v1_[a-f0-9]{64}\b", 0, None),
    ("Heroku API key", ("hrku-",), r"\bHRKU-[A-Za-z0-9_-]{60}", 0, None),
    ("Heroku API key", ("heroku",),
     r"(?i)heroku[\w.-]{0,20}[\"']?[ \t]*[:=][ \t]*[\"']?"
     r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b", 1, None),
    ("Shopify token", ("shp",), r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", 0, None),
    ("PyPI token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}", 0, None),
    ("Docker registry auth", ("auth", "identitytoken"),
     r"(?i)\"(?:auth|identitytoken|registrytoken)\"[ \t]*:[ \t]*\"([A-Za-z0-9+/=._-]{8,})\"", 1, None),
    ("Docker registry auth", ("login",),
     rf"(?i){_DOCKER_LOGIN}{_until(_DOCKER_LOGIN)}\s(?:-p|--password)[ \t=]+[\"']?([^\s\"']+)", 1, _given),
    ("Discord token", ("webhooks",), r"discord(?:app)?\.com/api/webhooks/\d+/([A-Za-z0-9_-]{40,})", 1, None),
    ("Discord token", ("discord", "bot", "token"),
     r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b", 0, None),
    ("Telegram bot token", (":A",), r"(?<![\w:])\d{8,10}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])", 0, None),
    ("Teams webhook", ("webhook.office.com",), r"\.webhook\.office\.com/webhookb2/([A-Za-z0-9@/_.-]{20,})", 1, None),
    ("Atlassian API token", ("atatt3",), r"\bATATT3[A-Za-z0-9_=-]{100,}", 0, None),
    ("Databricks token", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-\d)?\b", 0, None),
    ("Doppler token", ("dp.",), r"\bdp\.(?:pt|st|ct|sa|scim)\.[A-Za-z0-9]{40,}", 0, None),
    ("Dynatrace token", ("dt0c01",), r"\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b", 0, None),
    ("Grafana token", ("glc_", "glsa_"),
     r"\bglc_[A-Za-z0-9+/]{32,}={0,2}|\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b", 0, None),
    ("HashiCorp token", ("hvs.", "hvb.", "atlasv1"),
     r"\bhv[sb]\.[A-Za-z0-9_-]{24,}|\b[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", 0, None),
    ("Linear API key", ("lin_api_",), r"\blin_api_[A-Za-z0-9]{40}\b", 0, None),
    ("New Relic key", ("nrak-",), r"\bNRAK-[A-Z0-9]{27}\b", 0, None),
    ("Postman API key", ("pmak-",), r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", 0, None),
    ("Pulumi token", ("pul-",), r"\bpul-[a-f0-9]{40}\b", 0, None),
    ("Sentry token", ("sntr",), r"\bsntr[ysu]_[A-Za-z0-9+/=_]{40,}", 0, None),
    ("Supabase token", ("sbp_",), r"\bsbp_[a-f0-9]{40}\b", 0, None),
    ("Notion token", ("ntn_",), r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b", 0, None),
    ("Groq API key", ("gsk_",), r"\bgsk_[A-Za-z0-9]{48,}\b", 0, None),
    ("Replicate token", ("r8_",), r"\br8_[A-Za-z0-9]{37}\b", 0, None),
    ("Perplexity API key", ("pplx-",), r"\bpplx-[A-Za-z0-9]{48}\b", 0, None),
    ("xAI API key", ("xai-",), r"\bxai-[A-Za-z0-9]{70,}\b", 0, None),
    ("Artifactory token", ("akcp",), r"\bAKCp[A-Za-z0-9]{60,}\b", 0, None),
    ("Square token", ("sq0",), r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}", 0, None),
    ("age secret key", ("age-secret-key-",), r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", 0, None),
    # --- passwords in URLs and headers ---------------------------------------------------
    ("password in URL", ("://",),
     r"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:@/?#\"'`<>]*:([^\s/?#\"'`<>]+)@[^\s@/?#\"'`<>]", 1, _given),
    ("authorization header", ("authorization",),
     r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:bearer|basic|token|bot|apikey|sso-key)[ \t]+)?"
     r"([A-Za-z0-9._~+/=:-]+)", 1, _header),
    ("bearer token", ("bearer",), r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)", 1, _plausible),
    # ``++``: the separator keeps its "=" (given back, each one rescanned ``-u ====…`` to its end)
    ("password in command line", ("curl",),
     rf"(?i){_CURL}{_until(_CURL)}\s(?:-u|--user)[ \t=]++[\"']?[^\s:\"']*:([^\s\"']+)", 1, _given),
    # MySQL's clients take the password glued to -p (-p alone asks for it; -P is the port). The client
    # must be a command: at a line's start (a shell prompt, a list item, inline code), after a pipe, a
    # semicolon, `&&`, `$(`, sudo or an `exec` (so `find /etc/mysql -print` and `grep mysql -parallel`
    # are not passwords); words, not characters, keep long lines linear
    ("password in command line", ("mysql", "mariadb"),
     rf"(?m:^|[|;&(`]|\$\(|\bsudo[ \t]|\bexec\b[^\n|;&`]{{0,80}}?[ \t])[ \t>*$+-]*(?:[\w./\\:-]*[/\\])?"
     rf"{_MYSQL}(?i:\.exe)?{_WORD}{{0,12}}?[ \t]+-p{_MYSQL_PW}", 1, _given),
    # --- assignments: the name stays, the value goes --------------------------------------
    # a shell-style NAME ending in PASSWORD/PASSWD/PASSPHRASE (PGPASSWORD, MYSQL_ROOT_PASSWORD):
    # whatever value follows is a password, a lower-case word or a short number too
    ("password or secret", ("PASS",),
     rf"(?<![A-Za-z0-9_])[A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE)=(?!=){_ENV_VALUE}", 1, _given),
    ("password or secret", ("pass", "secret", "pwd", "credential"),
     rf"(?:(?<![A-Za-z0-9])(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|CREDENTIALS?)|(?<=_)(?:PWD|PASS|PW))=(?!=){_ENV_VALUE}",
     1, _env),
    ("API key or token", ("token", "key", "auth"),
     rf"(?<![A-Za-z0-9])(?:TOKEN|KEY|APIKEY|AUTH)=(?!=){_ENV_VALUE}", 1, _env),
    # the value runs to the line's last character that is not a blank (greedy: a lazy value tried
    # the blanks-to-the-end from every space of the line)
    ("password or secret", ("pass", "secret", "pwd"),
     r"(?im)^[ \t]*(?:[-*][ \t]+)?([\"']?)[\w.-]*?(?:password|passwd|passphrase|secret|[_.-]pwd)\1"
     r"[ \t]*(?::[ \t]+|\uff1a[ \t]*)(\S(?:[^\r\n]*[^ \t\r\n])?)[ \t]*+$", 2, _line),
    ("password or secret", ("pass", "secret", "pwd", "credential"),
     rf"(?i){_PW_WORDS}[\"']?[ \t]*{_SEP}{_VALUE}", 1, _any),
    ("password or secret", _CJK_WORDS, rf"(?:{'|'.join(_CJK_WORDS)})[ \t]*{_SEP}([!-~]+)", 1, _any),
    # in a sentence, as notes are written: "the VPN password is Blu3Moon!Rising", "pw: Tr0ub4dor&3",
    # 'passphrase is "blue-sky-42"' (a value with a digit or a sign, not a word: "is required")
    ("password or secret", ("pass", "pw", "secret"),
     r"(?i)(?<![a-z])(?:password|passwd|passphrase|pw|secret)(?![a-z])"
     rf"(?:[ \t]*(?:=(?!=)|:(?!:)|\uff1a)[ \t]*|{_PROSE_IS}"
     r"|(?:(?<=\bwith password)|(?<=\buse password)|(?<=\busing password)|(?<=\benter password))"
     r"[ \t]+)"  # "log in with password X"
     # the value ends where the sentence does ("… is hunter2hunter2."), not inside a dotted name
     r"(\"[^\"\n]{6,64}\"|'[^'\n]{6,64}'|`[^`\n]{6,64}`|[^\s\"'`,;()\[\]{}<>]{5,63}[^\s\"'`,;.!?()\[\]{}<>])(?![(\[\w]|\.\w)", 1,
     _prose),
    ("API key or token", ("token", "key", "auth", "pass"),
     rf"(?i){_TOKEN_WORDS}[\"']?[ \t]*{_SEP}{_VALUE}", 1, _plausible),
    # in a sentence: "the staging API key is q8Zr2LmN…", "the deploy token was …" (random-looking only:
    # "the API key is in the vault", "the token is expired" stay); a key that is a credential by its name
    # only (a database's, a cache's or a sort key is what notes name: "the cache key is user_profile_v2_12345")
    ("API key or token", ("token", "key"),
     r"(?i)(?<![a-z])(?:token|(?:api|access|secret|private|signing|auth|deploy|service|master|encryption|client"
     rf"|license|licence|app|bot|webhook|ssh|gpg|pgp)[ _-]?key)(?![a-z]){_PROSE_IS}"
     r"(\"[^\"\n]{8,128}\"|'[^'\n]{8,128}'|`[^`\n]{8,128}`|[^\s\"'`,;()\[\]{}<>]{7,127}[^\s\"'`,;.!?()\[\]{}<>])"
     r"(?![(\[\w]|\.\w)", 1, _prose_token),
)


_KEYWORDS = frozenset(k for _, words, _, _, _ in _RULES for k in words)
#: the rules whose value is a shell word, quotes and what is glued to them alike (MySQL's -p)
_GLUED_RULES = frozenset(n for n, (_, _, source, _, _) in enumerate(_RULES) if _GLUED in source)


@cache
def _pattern(index: int) -> re.Pattern[str]:
    """Rule ``index``'s pattern, compiled the first time it is needed (ASCII classes: CJK around
    a secret is a boundary)."""
    return re.compile(_RULES[index][2], re.ASCII | re.S)


def _span(text: str, m: re.Match[str], group: int, glued: bool = False) -> tuple[int, int, bool]:
    """The secret's span in ``m``; a quoted value loses its quotes (``"x",`` keeps ``"``…``",``).
    ``glued``: the value is a shell word, whatever follows its quotes is part of it (``_GLUED``);
    elsewhere (a YAML line's value) the text after the quotes is the line going on, unless it
    doubles the quote (YAML's ``'it''s'``)."""
    if group and m.group(group) is None:  # an alternation whose other branch matched
        group = next(g for g in range(1, len(m.groups()) + 1) if m.group(g) is not None)
    start, end = m.span(group)
    if end - start >= 2 and text[start] in "\"'`":
        close = text.find(text[start], start + 1, end)
        while close != -1 and _escaped(text, close):  # -p"ab\"cd": the value goes on past \"
            close = text.find(text[start], close + 1, end)
        if close != -1 and (close == end - 1 or text[close + 1] in _AFTER_QUOTES
                            or not glued and text[close + 1] != text[start]):
            return start + 1, close, True
        if close != -1:  # more of a shell word glued after the quotes (-p'ab'cd): all of it is the value
            return start, end, True
    return start, end, False


_AFTER_QUOTES = " \t\n,;)]}>&|"  # what ends a quoted value where the match goes on past it


def _escaped(text: str, at: int) -> bool:
    """Whether ``text[at]`` follows an odd run of backslashes."""
    run = at
    while run > 0 and text[run - 1] == "\\":
        run -= 1
    return (at - run) % 2 == 1


def _lines_holding(text: str, low: str, keywords: tuple[str, ...]) -> list[tuple[int, int]]:
    """The (start, end) of each line of ``text`` that holds one of ``keywords`` (a keyword with
    a capital letter is matched as written, the others in lower case)."""
    if len(low) != len(text):  # lower-casing moved the offsets: scan everything
        return [(0, len(text))]
    lines = set()
    for keyword in keywords:
        hay = low if keyword == keyword.lower() else text
        at = hay.find(keyword)
        while at != -1:
            end = text.find("\n", at)
            end = len(text) if end == -1 else end
            lines.add((text.rfind("\n", 0, at) + 1, end))
            at = hay.find(keyword, end)
    return sorted(lines)


def _spans(text: str) -> list[tuple[int, int, int, str]]:
    """Every secret span (start, end, rule index, family), overlapping ones merged."""
    low = text.lower()
    present = {k for k in _KEYWORDS if k in (low if k == k.lower() else text)}  # the cheap pre-check
    found = []
    for index, (family, words, _source, group, check) in enumerate(_RULES):
        if not words:
            windows = [(0, len(text))]
        elif present.isdisjoint(words):
            continue
        else:
            windows = _lines_holding(text, low, tuple(k for k in words if k in present))
        pattern = _pattern(index)
        for line_start, line_end in windows:
            for m in pattern.finditer(text, line_start, line_end):
                start, end, quoted = _span(text, m, group, index in _GLUED_RULES)
                if end > start and (check is None or check(text[start:end], quoted)):
                    found.append((start, end, index, family))
    found.sort()
    merged: list[tuple[int, int, int, str]] = []
    for start, end, index, family in found:
        if merged and start < merged[-1][1]:
            s, e, i, f = merged[-1]
            merged[-1] = (s, max(e, end), i, f) if (s < start or i <= index) else (s, max(e, end), index, family)
        else:
            merged.append((start, end, index, family))
    return merged


def a_secret(family: str) -> str:
    """``family`` with its article, as a sentence says it: "a GitHub token", "an AWS access key id"."""
    name = family.replace("-", " ")
    spoken_vowel = name[:1].lower() in "aeiou" or name.split(" ")[0] in ("npm", "xAI")
    return f"{'an' if spoken_vowel else 'a'} {name}"


def find_secrets(text: str) -> list[Finding]:
    """What looks like a secret in ``text``: family, span and line — never the value."""
    if not text:
        return []
    found, line, at = [], 1, 0
    for start, end, _, family in _spans(text):  # in order: count the newlines since the last one
        line, at = line + text.count("\n", at, start), start
        found.append(Finding(family, start, end, line))
    return found


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[redacted secret]``, the rest unchanged."""
    if not text:
        return text
    return _redact(text) if len(text) <= _MEMO_CHARS else _redact.__wrapped__(text)


_MEMO_CHARS = 20_000  # a resident process redacts the same notes prompt after prompt: remember them


@lru_cache(maxsize=2048)
def _redact(text: str) -> str:
    spans = _spans(text)
    if not spans:
        return text
    parts, last = [], 0
    for start, end, _, _ in spans:
        parts += [text[last:start], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def redact_data(obj: object) -> object:
    """A copy of a JSON-like structure with every string value redacted (dict keys kept)."""
    return map_strings(obj, redact)


def map_strings(obj: object, change) -> object:
    """A copy of a JSON-like structure (dicts, lists, tuples) with ``change`` applied to every
    string value; dict keys and other values as they are."""
    if isinstance(obj, str):
        return change(obj)
    if isinstance(obj, dict):
        return {key: map_strings(value, change) for key, value in obj.items()}
    if isinstance(obj, list):
        return [map_strings(item, change) for item in obj]
    if isinstance(obj, tuple):
        return tuple(map_strings(item, change) for item in obj)
    return obj


class RedactingFilter:
    """A ``logging`` filter that redacts every record's message (a log line quotes prompts,
    paths and errors; none of it may carry a secret into ``hook.log`` or stderr) and writes its
    control characters out (``sanitize.escape_controls``: a file's name with an escape sequence in
    it is shown, never run by the terminal)."""

    def filter(self, record) -> bool:
        from .sanitize import escape_controls

        message = record.getMessage()
        clean = escape_controls(redact(message))
        if clean != message or record.args:
            record.msg, record.args = clean, None
        return True
