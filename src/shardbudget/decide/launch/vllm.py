"""vLLM's commands for a deployment option (at its pinned release, 0.19.0).

One vLLM server runs DP x TP x PP GPUs, each DP rank its own engine core and scheduler (so
--max-num-seqs is per rank). A MoE model's DP ranks are not independent: its expert layers form one
DP x TP group (docs.vllm.ai/en/v0.19.0/serving/data_parallel_deployment.html). So attention DP is DP
ranks of TP tp / dp, and a MoE model's replicas are separate servers; a dense model's replicas fold
into --data-parallel-size. DP ranks over several nodes take the data-parallel flags (the head
node's address and RPC port; --headless and the first rank elsewhere); a rank larger than a node
(TP / PP across nodes) is one multiprocessing executor over its nodes (--nnodes, --node-rank and the
first node's --master-addr; --headless beyond it), which 0.19.0 runs without Ray. Disaggregated
sides exchange the KV cache through the NixlConnector, joined by vLLM's proxy.
"""

from __future__ import annotations

import json
import math

from ...engines.cli_tables import load_cli
from .builder_kit import Flags, assemble, draft_name, memory_fraction, spec_note
from .layout import DIST_PORT, ROUTER_PORT, Launch, Placer, Step, node_ip
from .priced import Priced, Side

ENGINE = "vllm"
PROXY_COMMIT = "030ea52effcb05071543c8c42b8f0145e94cee43"
"""The vLLM commit whose toy_proxy_server.py the proxy pod runs: a commit, which cannot move as a
tag can. Its parse_args is the one vLLM 0.19.0's flag table was read from ([cli.programs.proxy] of
engines/vllm.toml: unchanged since this commit)."""
PROXY_SHA256 = "1210e5525cc0c57f891734b682d3f8939aa7456a672bea16b44f03b6707136ff"
"""SHA-256 of that file at PROXY_COMMIT (9,017 bytes), computed from the stored copy of the
repository: the pod refuses to run a download that differs."""
MASTER_PORT = 29501
"""The head's torch.distributed port of a multi-node server (ParallelConfig.master_port's default)."""


def _server_flags(p: Priced, side: Side, *, dp: int, port: int | None) -> Flags:
    f = Flags(ENGINE)
    f.append(p.model_id)
    f.add("tensor_parallel", side.tp // side.dp).add("pipeline_parallel", side.pp if side.pp > 1 else None)
    f.add("data_parallel", dp if dp > 1 else None).add("expert_parallel", side.ep > 1)
    if side.max_batch:
        f.add("max_batch", math.ceil(side.max_batch / side.dp))  # per DP rank
    f.add("max_model_len", p.max_model_len).add("max_num_batched_tokens", p.max_num_tokens)
    f.add("memory_fraction", memory_fraction(p, ENGINE))
    f.add("disable_custom_allreduce", not side.custom_ar[ENGINE])
    if p.kv_dtype:
        f.add("kv_cache_dtype", load_cli(ENGINE).kv_cache_dtypes[p.kv_dtype])
    quant = load_cli(ENGINE).quantization_methods
    f.add("quantization", quant.get(p.quantize_to) if p.quantize_to else None)
    f.add("eager", p.eager)
    if p.speculation is not None:
        spec = {
            "method": load_cli(ENGINE).speculative_methods[p.speculation.method],
            "num_speculative_tokens": p.speculation.draft_tokens,
        }
        if p.speculation.method != "mtp":
            spec["model"] = draft_name(p)
        f.add("speculative_config", json.dumps(spec, separators=(",", ":")))
    if side.role != "serve":  # a disaggregated side: prefill produces, decode consumes (kv_both for either)
        f.add("kv_transfer", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":")))
    f.extend(p.moe_a2a_words(ENGINE, side))
    f.add("port", port)
    return f


def _env(side: Side) -> tuple[tuple[str, str], ...]:
    # the preset assumes torch symmetric memory for the sizes its rule gives it: pinned on (0.19.0's
    # default too, vllm/envs.py), so that the line runs what was priced whatever the image sets
    env = (("VLLM_ALLREDUCE_USE_SYMM_MEM", "1"),) if side.symm_mem[ENGINE] else ()
    # FlashInfer's all-reduce is on by default from 0.34.0 and --disable-custom-all-reduce does not
    # reach it (CudaCommunicator gates it on VLLM_ALLREDUCE_USE_FLASHINFER alone): where its rule takes
    # it but every all-reduce was priced as NCCL (--impl nccl), the line turns it off
    if side.flashinfer_off[ENGINE]:
        env += (("VLLM_ALLREDUCE_USE_FLASHINFER", "0"),)
    return env


def _servers(p: Priced, side: Side) -> tuple[int, int]:
    """(servers, DP ranks per server)."""
    rank_gpus, gpn = side.tp // side.dp * side.pp, p.system.host_gpus
    total = rank_gpus * side.replicas * side.dp
    fold = (
        side.role == "serve" and not p.cfg.is_moe and rank_gpus <= gpn and (total <= gpn or total % gpn == 0)
    )  # one node, or whole nodes
    return (1, side.replicas * side.dp) if fold else (side.replicas, side.dp)


def _side_steps(p: Priced, side: Side, placer: Placer, multi: bool) -> tuple[list[Step], list[tuple[int, int]]]:
    """The steps of one side and its servers' (node, port)."""
    gpn = p.system.host_gpus
    rank_gpus = side.tp // side.dp * side.pp
    servers, dp = _servers(p, side)
    steps, ends = [], []
    for k in range(servers):
        first, gpus, span = placer.place(rank_gpus * dp)
        port = placer.port(first) if multi else None
        what = f"{side.role} server {k + 1} of {servers}" if servers > 1 else f"{side.role} server"
        argv = _server_flags(p, side, dp=dp, port=port)
        if rank_gpus > gpn:  # TP / PP across nodes: one multiprocessing executor over the nodes
            for n in range(span):
                extra = [
                    "--nnodes",
                    str(span),
                    "--node-rank",
                    str(n),
                    "--master-addr",
                    node_ip(first),
                    "--master-port",
                    str(MASTER_PORT),
                ] + (["--headless"] if n else [])
                steps.append(
                    Step(
                        node=first + n,
                        what=what if not n else f"{what}, node rank {n}",
                        program="serve",
                        argv=tuple(argv + extra),
                        env=_env(side),
                        background=multi and not n,
                    )
                )
        elif span > 1:  # DP ranks over nodes: the data-parallel flags, headless beyond the head
            local = gpn // rank_gpus
            for n in range(span):
                extra = [
                    "--data-parallel-size-local",
                    str(local),
                    "--data-parallel-address",
                    node_ip(first),
                    "--data-parallel-rpc-port",
                    str(DIST_PORT),
                ]
                if n:
                    extra += ["--headless", "--data-parallel-start-rank", str(n * local)]
                steps.append(
                    Step(
                        node=first + n,
                        what=what if not n else f"{what}, DP ranks {n * local}+",
                        program="serve",
                        argv=tuple(argv + extra),
                        env=_env(side),
                    )
                )
        else:
            steps.append(
                Step(
                    node=first,
                    what=what,
                    program="serve",
                    argv=tuple(argv),
                    env=_env(side),
                    gpus=gpus,
                    background=multi,
                )
            )
        ends.append((first, port))
    return steps, ends


def build(p: Priced) -> Launch:
    placer = Placer(p.system.host_gpus)
    multi = p.disaggregated or sum(_servers(p, s)[0] for s in p.sides) > 1
    steps, ends, notes = [], {}, spec_note(p)
    for side in p.sides:
        s, e = _side_steps(p, side, placer, multi)
        steps += s
        ends[side.role] = e
    if p.disaggregated:
        hosts = lambda role: [node_ip(n) for n, _ in ends[role]]  # noqa: E731
        ports = lambda role: [str(port) for _, port in ends[role]]  # noqa: E731
        steps.append(
            Step(
                node=0,
                what="proxy",
                program="proxy",
                argv=(
                    "--host",
                    "0.0.0.0",
                    "--port",
                    str(ROUTER_PORT),
                    "--prefiller-hosts",
                    *hosts("prefill"),
                    "--prefiller-ports",
                    *ports("prefill"),
                    "--decoder-hosts",
                    *hosts("decode"),
                    "--decoder-ports",
                    *ports("decode"),
                ),
            )
        )
        notes.append(
            f"toy_proxy_server.py is tests/v1/kv_connector/nixl_integration/ in vLLM's repository at commit "
            f"{PROXY_COMMIT[:12]} (sha256 {PROXY_SHA256})"
        )
    elif multi:
        notes.append(f"put a load balancer in front of the {len(ends['serve'])} servers")
    if p.quantize_to and p.quantize_to not in load_cli(ENGINE).quantization_methods:
        notes.append(f"serve a checkpoint already quantized to {p.quantize_to}: vLLM reads its method from config.json")
    if p.moe_a2a == "deepep" and any(s.role == "serve" and s.all_to_all for s in p.sides):
        notes.append(
            "vLLM runs one DeepEP mode per server: low-latency (its prompt chunks were priced on the normal kernels)"
        )
    return assemble(ENGINE, p, steps, notes=notes)


__all__ = ["build"]
