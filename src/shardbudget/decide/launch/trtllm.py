"""TensorRT-LLM's commands for a deployment option (at its pinned release, 1.3.0rc20).

Every replica is one trtllm-serve (--tp_size is its whole TP group, --ep_size its experts); what has
no option (attention DP, the KV-cache dtype, CUDA graphs, the all-reduce strategy, speculation, the
KV transfer) goes into the --extra_llm_api_options YAML, written beside the commands. A replica over
several nodes is one MPI job from its first node (mpirun ... trtllm-llmapi-launch trtllm-serve).
Disaggregated context and generation servers carry a cache_transceiver_config and are joined by
`trtllm-serve disaggregated -c` with their URLs.
"""

from __future__ import annotations

from ...engines.cli_tables import load_cli
from .builder_kit import Flags, assemble, draft_name, memory_fraction, spec_note
from .layout import ROUTER_PORT, Launch, Placer, Step, node_ip, to_yaml
from .priced import Priced, Side

ENGINE = "trtllm"
ROLE_WORDS = {"serve": "serve", "prefill": "context", "decode": "generation"}


def options(p: Priced, side: Side) -> dict:
    """The --extra_llm_api_options of one side (LlmArgs keys, `[cli.yaml]`)."""
    out: dict = {}
    if side.dp > 1:
        out["enable_attention_dp"] = True
    if not side.custom_ar[ENGINE]:
        out["allreduce_strategy"] = "NCCL"
    # CUDA graphs as priced: none (eager), else captured up to the batch
    out["cuda_graph_config"] = None if p.eager else {"max_batch_size": side.max_batch or 1, "enable_padding": True}
    if p.kv_dtype:
        out["kv_cache_config"] = {"dtype": load_cli(ENGINE).kv_cache_dtypes[p.kv_dtype]}
    if p.speculation is not None:
        spec = {"decoding_type": load_cli(ENGINE).speculative_methods[p.speculation.method]}
        if p.speculation.method == "mtp":
            spec["num_nextn_predict_layers"] = p.speculation.draft_tokens
        else:
            spec.update(max_draft_len=p.speculation.draft_tokens, speculative_model_dir=draft_name(p))
        out["speculative_config"] = spec
    if side.role != "serve":
        out["cache_transceiver_config"] = {"backend": load_cli(ENGINE).disaggregation.cache_transceiver_backend}
        if side.role == "prefill":
            out["disable_overlap_scheduler"] = True  # context servers run without the overlap scheduler
    return out


def _server_flags(p: Priced, side: Side, *, port: int | None, yaml_name: str) -> Flags:
    f = Flags(ENGINE)
    f.append(p.model_id)
    f.add("tensor_parallel", side.tp).add("pipeline_parallel", side.pp)
    f.add("expert_parallel", side.ep if side.ep > 1 else None)
    f.add("max_batch", side.max_batch or None).add("max_num_tokens", p.max_num_tokens)
    f.add("max_model_len", p.max_model_len).add("memory_fraction", memory_fraction(p, ENGINE))
    f.add("extra_options", yaml_name)
    if port is not None:
        f.raw("--host", "0.0.0.0").add("port", port)
    return f


def build(p: Priced) -> Launch:
    gpn = p.system.host_gpus
    placer = Placer(gpn)
    multi = p.disaggregated or sum(s.replicas for s in p.sides) > 1
    steps, files, urls = [], [], {}
    for side in p.sides:
        name = f"trtllm-{ROLE_WORDS[side.role]}.yaml"
        files.append((name, to_yaml(options(p, side))))
        urls[side.role] = []
        for k in range(side.replicas):
            first, gpus, span = placer.place(side.gpus)
            port = placer.port(first) if multi else None
            argv = tuple(_server_flags(p, side, port=port, yaml_name=name))
            what = f"{ROLE_WORDS[side.role]} server {k + 1} of {side.replicas}"
            wrapper = ()
            if span > 1:  # one MPI job over the replica's nodes, started from its first node
                hosts = ",".join(f"{node_ip(first + n)}:{gpn}" for n in range(span))
                wrapper = ("mpirun", "-H", hosts, "-np", str(side.gpus), "trtllm-llmapi-launch")
            steps.append(
                Step(node=first, what=what, program="serve", argv=argv, gpus=gpus, wrapper=wrapper, background=multi)
            )
            urls[side.role].append(f"{node_ip(first)}:{port}")
    notes = spec_note(p)
    if p.moe_a2a != "nccl" and any(s.all_to_all for s in p.sides):
        # TensorRT-LLM has no flag for it: its fused MoE picks the all-to-all by the layout
        notes.append(f"TensorRT-LLM picks its MoE all-to-all itself (priced: --moe-a2a {p.moe_a2a})")
    if p.disaggregated:
        files.append(
            (
                "trtllm-disagg.yaml",
                to_yaml(
                    {
                        "hostname": "0.0.0.0",
                        "port": ROUTER_PORT,
                        "backend": "pytorch",
                        "context_servers": {"num_instances": len(urls["prefill"]), "urls": urls["prefill"]},
                        "generation_servers": {"num_instances": len(urls["decode"]), "urls": urls["decode"]},
                    }
                ),
            )
        )
        steps.append(
            Step(node=0, what="disaggregated front end", program="disaggregated", argv=("-c", "trtllm-disagg.yaml"))
        )
    elif multi:
        notes.append(f"put a load balancer in front of the {len(urls['serve'])} servers")
    if p.quantize_to:
        notes.append(
            f"serve a checkpoint quantized to {p.quantize_to} (TensorRT-LLM's PyTorch backend does not "
            f"quantize at load; NVIDIA ModelOpt writes one)"
        )
    return assemble(ENGINE, p, steps, notes=notes, files=files)


__all__ = ["build", "options"]
