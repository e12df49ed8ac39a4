"""Every page carries the Content-Security-Policy; the API's own docs are exempt."""


def test_pages_carry_a_policy_that_allows_scripts_only_from_the_site(client):
    response = client.get("/")

    policy = response["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "object-src 'none'" in policy
    assert "unsafe-eval" not in policy and "frame-ancestors 'none'" in policy


def test_a_path_the_operator_exempts_gets_no_policy(client, settings):
    settings.CONTENT_SECURITY_POLICY_EXEMPT = ("/",)

    assert "Content-Security-Policy" not in client.get("/")
