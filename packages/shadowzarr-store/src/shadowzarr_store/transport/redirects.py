"""Redirects followed one hop at a time: each hop checked like the first URL, a chain that
comes back to one of its URLs or runs past `MAX_REDIRECTS` hops ended with a `RedirectError`."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin

from shadowzarr_spec import SourceAccessError

from shadowzarr_store.transport.errors import RedirectError
from shadowzarr_store.transport.head_values import refuse_control
from shadowzarr_store.transport.locations import redact

if TYPE_CHECKING:
    from shadowzarr_store.transport.access import AccessPolicy

__all__ = ["MAX_REDIRECTS", "check_chain", "redirect_target"]

MAX_REDIRECTS = 10


def redirect_target(url: str, location: str, shown: str, access: AccessPolicy) -> str:
    """Where a redirect from ``url`` to ``location`` leads, checked as every hop is (http(s)
    only, within the allowed URLs); a Location with a control byte is refused, not cleaned."""
    refuse_control(location, "a redirect's Location", shown)
    try:
        target = urljoin(url, location)
    except ValueError as exc:
        raise SourceAccessError(
            f"{shown}: a redirect to an unusable URL was refused ({exc})"
        ) from exc
    access.check_redirect(target)
    return target


def check_chain(target: str, chain: tuple[str, ...], shown: str) -> None:
    """`RedirectError` when ``target`` was already asked for in this chain of redirects (a
    loop), or would be a hop past the `MAX_REDIRECTS` followed."""
    if target in chain:
        raise RedirectError(
            f"{shown}: a redirect loop ({len(chain)} hops lead back to {redact(target)})"
        )
    if len(chain) > MAX_REDIRECTS:
        raise RedirectError(f"{shown}: more than {MAX_REDIRECTS} redirects")
