"""The step layer: the time of one decode or prefill step of a model under a plan, and what feeds it.

    kernels      kernel floors, efficiencies, tile sizes and launch gaps (catalog/kernels.toml)
    settings     Efficiency (what a step costs beyond FLOPs and bytes, per engine) and PlanSettings
    memory       GPU memory as the engine allocates it: need and capacity per GPU
    price_ops    each op's time: roofline at the kernel's achievable rates, floors, tiles, launches
    price_comm   each collective's time: its group, the engine's all-reduce rule or NCCL's tuner
    overlap      how much communication a mechanism hides behind compute
    compose      StepModel / decode_step: ops + collectives + host + skew + overheads = one step
    speculative  speculative decoding: draft proposals and one verify step
    served       the served TPOT: decode steps with the other requests' prompts mixed in (plan and deploy)
    tail         the p99 of the inter-token latency from collective jitter

May import: the root modules, `fabric`, `comm`, `model`, `engines` and `measure` (measured jitter).
"""
