"""The platform's judge tests' keys, question and steps (tests/platform/test_judge_platform.py,
test_judge_budget.py; their fixtures are in tests/platform/conftest.py)."""

from runs.models import Run

PLATFORM_KEY = "platform-key-marker-51c0"


OPERATOR_KEY = "operator-key-marker-9d2e"


QUESTION = "What was 3M's FY2018 capital expenditure?"


def set_judge(client, project, base_url, api_key=""):
    data = {"base_url": base_url, "model": "their-model", "api_key": api_key}
    return client.post(f"/projects/{project.pk}/judge/", data)


def start_run(client, project, judge="own") -> Run:
    response = client.post(
        f"/projects/{project.pk}/runs/new/",
        {"name": "Judged", "preset": "quick-cpu", "judge": judge},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    return Run.objects.get(name="Judged")
