"""Locations as references may record them: no credentials, no signatures.

A generator given a presigned URL (``…?X-Amz-Credential=…&X-Amz-Signature=…``) or a URL with
a user and password reads through it, but references outlive the signature and travel further
than the credential should: `recorded_location` drops, before anything is recorded, the URL's
user info and the query parameters that sign or authorise a request:

- AWS Signature Version 2: ``AWSAccessKeyId``, ``Signature``, ``Expires``;
- AWS Signature Version 4: every ``X-Amz-*`` (``Credential``, ``Signature``,
  ``Security-Token``, ``Date``, ``Expires``, ``SignedHeaders``…);
- Google Cloud Storage: every ``X-Goog-*``, ``GoogleAccessId`` (with ``Signature`` and
  ``Expires``, as V2 has them);
- CloudFront signed URLs: ``Signature``, ``Policy``, ``Key-Pair-Id``;
- Azure shared access signatures, when the query holds ``sig``: ``sig``, ``se``, ``st``,
  ``sp``, ``sv``, ``sr``, ``spr``, ``sip``, ``si``, ``ss``, ``srt``, ``sdd``, ``ses``, ``skoid``,
  ``sktid``, ``skt``, ``ske``, ``sks``, ``skv``, ``saoid``, ``suoid``, ``scid`` and ``rsc*``.

Names are compared without regard to case; other parameters stay, in their order and
encoding. A reader gets access again the way it would to the bare URL: ``storage_options`` for
an ``s3://``/``gs://``/``az://`` location, ``headers`` for a bearer token, or a
``resolve_url`` hook that signs each URL anew (see the store's README).
"""

from __future__ import annotations

__all__ = ["SIGNING_PARAMETERS", "recorded_location", "signing_parameters_in"]

_ALWAYS = frozenset(
    {"awsaccesskeyid", "googleaccessid", "signature", "key-pair-id", "x-goog-signature"}
)
_PREFIXES = ("x-amz-", "x-goog-")
_WITH_A_SIGNATURE = frozenset({"expires", "policy"})
"""Dropped where the query is signed (alone, ``Expires`` may be a parameter of the site's)."""
_AZURE = frozenset(
    {
        "sig",
        "se",
        "st",
        "sp",
        "sv",
        "sr",
        "spr",
        "sip",
        "si",
        "ss",
        "srt",
        "sdd",
        "ses",
        "skoid",
        "sktid",
        "skt",
        "ske",
        "sks",
        "skv",
        "saoid",
        "suoid",
        "scid",
        "rscc",
        "rscd",
        "rsce",
        "rscl",
        "rsct",
    }
)
SIGNING_PARAMETERS = _ALWAYS | _WITH_A_SIGNATURE | _AZURE
"""Every parameter name dropped (lower case), besides those starting ``x-amz-``/``x-goog-``."""


def _name(pair: str) -> str:
    return pair.partition("=")[0].lower()


def _signing(names: list[str]) -> set[str]:
    """The names among ``names`` that sign or authorise the request."""
    signed = {n for n in names if n in _ALWAYS or n.startswith(_PREFIXES)}
    if signed:
        signed |= {n for n in names if n in _WITH_A_SIGNATURE}
    if "sig" in names:
        signed |= {n for n in names if n in _AZURE}
    return signed


def signing_parameters_in(url: str) -> set[str]:
    """The signing parameter names (lower case) in ``url``'s query."""
    query = url.partition("#")[0].partition("?")[2]
    return _signing([_name(pair) for pair in query.split("&") if pair])


def recorded_location(url: str) -> str:
    """``url`` without user info and signing query parameters; anything else (a local path,
    an ``s3://`` URL, a template) unchanged."""
    if "?" not in url and "@" not in url:  # the usual case, per chunk of a generator: fast
        return url
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    rest, hash_mark, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    if question:
        pairs = [pair for pair in query.split("&") if pair]
        signed = _signing([_name(pair) for pair in pairs])
        kept = [pair for pair in pairs if _name(pair) not in signed]
        query = "&".join(kept)
        question = "?" if kept else ""
    return f"{scheme}://{authority}{slash}{path}{question}{query}{hash_mark}{fragment}"
