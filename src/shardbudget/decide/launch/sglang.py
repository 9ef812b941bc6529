"""SGLang's commands for a deployment option (at its pinned release, 0.5.14).

--tp-size is a replica's whole TP group (over nodes too); under DP attention --dp-size splits its
attention into DP ranks (--enable-dp-attention), else --dp-size runs independent replicas, which
SGLang allows on one node only ("multi-node data parallel is not supported unless dp attention").
So plain replicas fold into --dp-size per node; a replica over several nodes runs the same command
on each with --nnodes, its --node-rank and the first node's --dist-init-addr. Disaggregated sides
take --disaggregation-mode with the Mooncake transfer, joined by sglang-router's PD mode; several
plain servers by its --worker-urls. --mem-fraction-static is set only where the plan needs more than
SGLang's own default (computed at launch from the GPU and the plan, as it was priced) or the user
gave --gpu-memory-utilization.
"""

from __future__ import annotations

from ...engines.cli_tables import load_cli
from ...engines.presets import load_engine
from .builder_kit import Flags, assemble, draft_name, memory_fraction, spec_note
from .layout import DIST_PORT, ROUTER_PORT, SERVER_PORT, Launch, Placer, Step, node_ip
from .priced import Priced, Side

ENGINE = "sglang"


def _server_flags(p: Priced, side: Side, *, dp: int, port: int | None, bootstrap: int | None) -> Flags:
    f = Flags(ENGINE)
    f.add("model", p.model_id).add("tensor_parallel", side.tp)
    f.add("pipeline_parallel", side.pp if side.pp > 1 else None).add("data_parallel", dp if dp > 1 else None)
    f.add("dp_attention", side.dp > 1).add("expert_parallel", side.ep if side.ep > 1 else None)
    # one replica's sequences in flight either way (tp_worker.py: // dp under DP attention)
    f.add("max_batch", side.max_batch or None)
    f.add("max_model_len", p.max_model_len).add("max_num_batched_tokens", p.max_num_tokens)
    f.add("memory_fraction", memory_fraction(p, ENGINE, side))
    f.add("disable_custom_allreduce", not side.custom_ar[ENGINE])
    if p.kv_dtype:
        f.add("kv_cache_dtype", load_cli(ENGINE).kv_cache_dtypes[p.kv_dtype])
    f.add("quantization", load_cli(ENGINE).quantization_methods.get(p.quantize_to) if p.quantize_to else None)
    f.add("eager", p.eager).add("eager_prefill", p.eager)  # no graphs in either phase
    if p.speculation is not None:
        k = p.speculation.draft_tokens
        f.raw("--speculative-algorithm", load_cli(ENGINE).speculative_methods[p.speculation.method])
        if p.speculation.method != "mtp":
            f.raw("--speculative-draft-model-path", draft_name(p))
        # a chain of k drafts (top-1 each): k steps, k + 1 tokens verified
        f.raw("--speculative-num-steps", k).raw("--speculative-eagle-topk", 1).raw(
            "--speculative-num-draft-tokens", k + 1
        )
    f.extend(p.moe_a2a_words(ENGINE, side))
    if side.role != "serve":
        f.raw("--disaggregation-mode", side.role)
        f.raw("--disaggregation-transfer-backend", load_cli(ENGINE).disaggregation.transfer_backend)
        if bootstrap is not None:
            f.raw("--disaggregation-bootstrap-port", bootstrap)
    if port is not None:
        f.raw("--host", "0.0.0.0").add("port", port)
    return f


def _servers(p: Priced, side: Side) -> list[int]:
    """DP replicas of each server: plain replicas smaller than a node fold into --dp-size per node."""
    gpn, size = p.system.host_gpus, side.tp * side.pp
    if side.dp > 1 or side.replicas == 1 or size >= gpn or side.role != "serve":
        return [side.dp] * side.replicas
    per = gpn // size
    full, left = divmod(side.replicas, per)
    return [per] * full + ([left] if left else [])


def _side_steps(p: Priced, side: Side, placer: Placer, multi: bool) -> tuple[list[Step], list[tuple[int, int, int]]]:
    servers = _servers(p, side)
    steps, ends = [], []
    for k, dp in enumerate(servers):
        gpus_needed = side.tp * side.pp * (dp if side.dp == 1 else 1)
        first, gpus, span = placer.place(gpus_needed)
        port = placer.port(first) if multi else None
        # each prefill server on a node has its own bootstrap port (8998, 8999, ...)
        bootstrap = (
            load_cli(ENGINE).disaggregation.bootstrap_port + port - SERVER_PORT
            if side.role == "prefill" and port is not None
            else None
        )
        what = f"{side.role} server {k + 1} of {len(servers)}" if len(servers) > 1 else f"{side.role} server"
        argv = _server_flags(p, side, dp=dp, port=port, bootstrap=bootstrap)
        if span > 1:
            for n in range(span):
                extra = [
                    "--nnodes",
                    str(span),
                    "--node-rank",
                    str(n),
                    "--dist-init-addr",
                    f"{node_ip(first)}:{DIST_PORT}",
                ]
                steps.append(
                    Step(node=first + n, what=f"{what}, node rank {n}", program="serve", argv=tuple(argv + extra))
                )
        else:
            steps.append(Step(node=first, what=what, program="serve", argv=tuple(argv), gpus=gpus, background=multi))
        ends.append((first, port, bootstrap))
    return steps, ends


def _version() -> str:
    return load_engine(ENGINE).version


def unsupported(p: Priced) -> str | None:
    """Why SGLang (0.5.14) cannot run this option (None: it can)."""
    spec = p.speculation
    if spec is not None and any(s.pp > 1 for s in p.sides):
        return f"SGLang {_version()} runs no speculative decoding with pipeline parallelism (check_server_args)"
    if spec is not None and spec.method == "draft" and any(s.dp > 1 for s in p.sides):
        return f"SGLang {_version()}'s STANDALONE draft decoding refuses DP attention (_handle_eagle_family)"
    return None


def build(p: Priced) -> Launch:
    placer = Placer(p.system.host_gpus)
    multi = p.disaggregated or sum(len(_servers(p, s)) for s in p.sides) > 1
    steps, ends = [], {}
    for side in p.sides:
        s, e = _side_steps(p, side, placer, multi)
        steps += s
        ends[side.role] = e
    router = ["--host", "0.0.0.0", "--port", str(ROUTER_PORT)]
    if p.disaggregated:
        argv = ["--pd-disaggregation"]
        for node, port, boot in ends["prefill"]:
            argv += ["--prefill", f"http://{node_ip(node)}:{port}", str(boot)]
        for node, port, _ in ends["decode"]:
            argv += ["--decode", f"http://{node_ip(node)}:{port}"]
        steps.append(Step(node=0, what="router", program="router", argv=tuple(argv + router)))
    elif multi:
        urls = [f"http://{node_ip(node)}:{port}" for node, port, _ in ends["serve"]]
        steps.append(Step(node=0, what="router", program="router", argv=("--worker-urls", *urls, *router)))
    notes = spec_note(p)
    if p.quantize_to and p.quantize_to not in load_cli(ENGINE).quantization_methods:
        notes.append(
            f"serve a checkpoint already quantized to {p.quantize_to}: SGLang reads its method from config.json"
        )
    return assemble(ENGINE, p, steps, notes=notes)


__all__ = ["build", "unsupported"]
