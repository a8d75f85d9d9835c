"""Who may read the dashboard and /metrics: anyone on a loopback-only service
without tokens; otherwise a token, as a bearer header, or once as `?token=` which
sets an HttpOnly cookie (a browser cannot send headers on a plain link)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from router.auth import Tokens

COOKIE = "simroute_dashboard"


def token_name(request: Request, tokens: Tokens) -> str | None:
    """The name of the request's valid token (bearer header or cookie), else None."""
    return tokens.bearer(request.headers.get("authorization")) or tokens.name_of(request.cookies.get(COOKIE))


def refusal(request: Request, tokens: Tokens) -> Response | None:
    """None when the request may proceed; else the response that refuses it, or the
    redirect that trades a `?token=` for the cookie."""
    if not tokens.enabled:
        return None
    presented = request.query_params.get("token")
    if presented is not None:
        if tokens.name_of(presented) is None:
            return JSONResponse({"error": "simroute: invalid token"}, status_code=401)
        # Drop the token from the address (history, referrers, screenshots) once it is in the cookie.
        query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        response = RedirectResponse(request.url.path + (f"?{query}" if query else ""), status_code=303)
        response.set_cookie(
            COOKIE, presented, httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/"
        )
        return response
    if token_name(request, tokens) is None:
        return JSONResponse(
            {
                "error": "simroute: authentication required: Authorization: Bearer TOKEN, or open "
                "/dashboard?token=TOKEN once"
            },
            status_code=401,
            headers={"www-authenticate": 'Bearer realm="simroute"'},
        )
    return None
