"""The pages run under their Content-Security-Policy, which blocks injected scripts."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def violations(page) -> list[str]:
    found: list[str] = []
    page.on(
        "console",
        lambda message: (
            found.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return found


def test_the_pages_scripts_run_under_the_policy_without_a_violation(page, live_server):
    seen = violations(page)

    for path in ("/", "/accounts/login/"):
        response = page.goto(live_server.url + path)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.htmx") == "object"  # the site's own script ran

    assert seen == []


def test_the_api_docs_render_from_the_site_s_own_scripts_without_a_violation(page, live_server):
    seen = violations(page)
    outside: list[str] = []
    page.on(
        "request",
        lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None,
    )

    response = page.goto(live_server.url + "/v1/docs")

    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.locator(".swagger-ui .info .title").filter(has_text="Sleuth API").wait_for()
    assert page.locator(".opblock-summary-path").count() > 10  # the endpoints, from the schema
    assert seen == [] and outside == []


def test_an_injected_inline_script_does_not_run(page, live_server):
    seen = violations(page)
    page.goto(live_server.url)

    page.evaluate(
        """() => { const s = document.createElement('script');
                   s.textContent = 'window.injected = true'; document.body.appendChild(s); }"""
    )

    assert page.evaluate("window.injected === undefined")
    assert seen  # the browser reported the blocked script
