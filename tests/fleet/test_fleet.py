"""One scheduler for several processes: two application processes share one
``python -m sdk.server`` in front of the real llama-server (2 slots). Process B runs
``Client.map`` over 16 long batch requests (300 tokens, concurrency 8); process I, started
4 s later, sends a warm-up stream (it loads the tokenizer, learns the engine) and then 8
short interactive streams, one a second. Both use the public API only:
no header is set by hand, each client learns that the server schedules and sends its
requests' tiers itself.

The interactive requests must not wait for the other process's batch work: their TTFT
p90 stays within 1.5x the idle TTFT + 0.5 s (the bound the single-process scheduler
meets), every batch request still completes, and the server's metrics show the tiers the
clients asked for.
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from tests.fleet.worker import collect, config, idle_ttft, p90, spawn
from tests.llama import LlamaServer
from tests.server.conftest import serving

BATCH_KEY, INTERACTIVE_KEY = "fleet-batch-7c1e", "fleet-web-52ad"


def metric(url: str, line_start: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def test_an_interactive_process_does_not_wait_for_another_process_batch_work(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    with serving([llama_server.url], config(BATCH_KEY, INTERACTIVE_KEY), tmp_path) as (url, _log):
        idle = idle_ttft(url, INTERACTIVE_KEY, tmp_path)

        batch = spawn(
            "batch", url, BATCH_KEY, tmp_path / "batch.json", "--batch-n", "16", "--batch-tokens", "300"
        )
        time.sleep(4)  # the workload's schedule: the interactive process starts 4 s into the batch job
        inter = spawn(
            "interactive",
            url,
            INTERACTIVE_KEY,
            tmp_path / "inter.json",
            *("--n", "9", "--interval", "1", "--warmup"),
        )
        i = collect(inter, tmp_path / "inter.json", 300)
        b = collect(batch, tmp_path / "batch.json", 900)

        assert i["errors"] == [] and i["engine"] == "seam", i
        assert len([t for t in i["ttft"] if t is not None]) == 9
        ttft = i["ttft"][1:]  # as for the idle TTFT: the first, a warm-up, ends first
        assert len(ttft) == 8
        bound = 1.5 * idle + 0.5
        assert p90(ttft) <= bound, (
            f"interactive TTFT {sorted(ttft)} against {bound:.2f} s (idle {idle:.2f} s)"
        )

        assert b["engine"] == "seam"
        failed = [r["error"] for r in b["results"] if not r["ok"]]
        assert failed == [], failed
        assert sorted(r["index"] for r in b["results"]) == list(range(16))
        assert all(r["output_tokens"] > 0 and r["text"] for r in b["results"])

        # what the clients asked for is what the server saw: tiers from the SDK, not the keys
        assert metric(url, 'seam_requests_total{outcome="ok",tier="interactive"}') == 14
        assert metric(url, 'seam_requests_total{outcome="ok",tier="batch"}') == 16
        assert metric(url, "seam_preemptions_total") >= 1
        assert metric(url, "seam_running") == 0 and metric(url, "seam_queue_depth") == 0


def test_a_gateway_key_shares_between_its_end_tenants_by_their_weights(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    """Two batch processes behind one gateway key, acting for end tenants weighted 2:1
    (`seam-tenant`, sent by the SDK's ``tenant=``): while both have work waiting, their
    shares of the completed batch tokens are within 15% of the weights."""
    gateway = "fleet-gateway-4e0b"
    cfg = config(BATCH_KEY, INTERACTIVE_KEY, gateway, {"acme": 2.0, "globex": 1.0})
    with serving([llama_server.url], cfg, tmp_path) as (url, _log):
        runs = {
            name: spawn(
                "batch",
                url,
                gateway,
                tmp_path / f"{name}.json",
                "--batch-n",
                "12",
                "--batch-tokens",
                "100",
                "--tenant",
                name,
                "--offset",
                str(off),
                "--unordered",
            )
            for name, off in (("acme", 0), ("globex", 20))
        }
        got = {name: collect(p, tmp_path / f"{name}.json", 900) for name, p in runs.items()}
    for name, r in got.items():
        assert r["engine"] == "seam" and all(x["ok"] for x in r["results"]), (name, r)
    # the window in which both had work: until the first of them completed its last request
    until = min(max(x["at"] for x in r["results"]) for r in got.values())
    done = {
        name: sum(x["output_tokens"] for x in r["results"] if x["at"] <= until) for name, r in got.items()
    }
    share = done["acme"] / (done["acme"] + done["globex"])
    assert abs(share - 2 / 3) <= 0.15 * 2 / 3, (done, share)
