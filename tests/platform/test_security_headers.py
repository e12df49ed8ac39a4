"""Every page carries the Content-Security-Policy, the API's own docs included."""


def test_pages_carry_a_policy_that_allows_scripts_only_from_the_site(client):
    response = client.get("/")

    policy = response["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "object-src 'none'" in policy
    assert "unsafe-eval" not in policy and "frame-ancestors 'none'" in policy


def test_the_api_docs_load_swagger_from_the_site_under_the_same_policy(client):
    response = client.get("/v1/docs")

    assert response.status_code == 200
    assert "script-src 'self';" in response["Content-Security-Policy"]
    page = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower() and "https://" not in page
