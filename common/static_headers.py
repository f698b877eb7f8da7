"""Headers of the static files (settings.WHITENOISE_ADD_HEADERS_FUNCTION).

WhiteNoise answers a request for a static file before the Content-Security-Policy
middleware sees it, so without this a script, stylesheet or SVG of ours would be served
with no policy at all. Each file gets the policy the pages get, built from the same
setting (django-csp's ``CONTENT_SECURITY_POLICY`` and ``…_REPORT_ONLY``).
"""
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.utils import build_policy


def static_file_headers(headers, path: str, url: str) -> None:
    """Add the pages' Content-Security-Policy to a static file's ``headers``
    (WhiteNoise calls this once per file as it lists them)."""
    policy = build_policy()
    if policy:
        headers[HEADER] = policy
    report_only = build_policy(report_only=True)
    if report_only:
        headers[HEADER_REPORT_ONLY] = report_only
