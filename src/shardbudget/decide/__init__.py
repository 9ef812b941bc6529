"""The decisions layer: the answers the tool gives, built from priced steps.

    verdicts    the verdicts, each defined once over every plan of a sweep
    planner     plan: sweep TP x PP x EP x DP-attention x batch; how far the model can be sharded
    deploy      deploy: how to spend N GPUs (replicas x plan x batch) under the budgets
    deploy_words  deploy's verdict in words
    disagg      disaggregated prefill / decode
    launch      the commands that run a deployment option (per engine; multi-node; disaggregated; Slurm, Kubernetes)
    questions   explain: the three questions, answered from numbers
    compare     systems side by side at the message sizes models send
    tail_plan   the p99 ITL of a plan's rows and deploy's options from measured jitter (`--jitter`)

May import: the root modules, `fabric`, `comm`, `model`, `engines`, `measure` and `step`.
"""
