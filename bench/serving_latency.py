"""Latency of the OpenAI-compatible API: a published agent asked one question at a time by
1 client, then by 8 clients at once, through the real `openai` client.

Each client sends its requests one after another; the agent is loaded by a warm-up request
first (not counted), so the figures are those of an agent kept loaded by the inference
worker. Prints p50 and p95 of the request latency and the requests per second of each
concurrency, and the 8-client figures as ratios to the 1-client baseline.

Usage, against a running platform (`make run`) and one of your published agents:
    python bench/serving_latency.py --base-url http://127.0.0.1:8000/v1 \
        --api-key sk-sleuth-… --model my-project-first-agent [--requests 8]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

QUESTION = "what was acme revenue in 2021 ?"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def measure(
    make_client, model: str, *, concurrency: int, requests: int, question: str = QUESTION
) -> dict:
    """`concurrency` clients, each sending `requests` requests in turn; latencies in s."""

    def one_client(_: int) -> list[float]:
        client = make_client()
        latencies = []
        for _ in range(requests):
            started = time.perf_counter()
            client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": question}]
            )
            latencies.append(time.perf_counter() - started)
        return latencies

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        latencies = [t for client in pool.map(one_client, range(concurrency)) for t in client]
    wall = time.perf_counter() - started
    return {
        "clients": concurrency,
        "requests": len(latencies),
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * percentile(latencies, 95),
        "requests_per_s": len(latencies) / wall,
    }


def run(make_client, model: str, *, requests: int, question: str = QUESTION) -> list[dict]:
    """The warm-up, then 1 and 8 concurrent clients; prints and returns both rows."""
    make_client().chat.completions.create(
        model=model, messages=[{"role": "user", "content": question}]
    )
    rows = [
        measure(make_client, model, concurrency=n, requests=requests, question=question)
        for n in (1, 8)
    ]
    print(f"{'clients':>7} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>7}")
    for row in rows:
        print(
            f"{row['clients']:>7} {row['requests']:>8} {row['p50_ms']:>8.0f} "
            f"{row['p95_ms']:>8.0f} {row['requests_per_s']:>7.2f}"
        )
    base, many = rows
    print(
        f"8 clients vs 1: p50 x{many['p50_ms'] / base['p50_ms']:.2f}, "
        f"throughput x{many['requests_per_s'] / base['requests_per_s']:.2f}"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the platform's /v1 URL")
    parser.add_argument("--api-key", required=True, help="a personal API token")
    parser.add_argument("--model", required=True, help="a published agent's name")
    parser.add_argument("--requests", type=int, default=8, help="requests per client")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    run(
        lambda: OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=600),
        args.model,
        requests=args.requests,
        question=args.question,
    )


if __name__ == "__main__":
    main()
