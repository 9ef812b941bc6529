"""The measurement harness: ``shardbudget measure``, ``python -m shardbudget.measure`` and torchrun's
``-m shardbudget.measure`` time collectives between real processes over `torch.distributed`.

    command     the one option parser and printer behind every front end
    run         run_measure: check, plan the sizes, launch, supervise, save
    protocol    what the parent and the ranks agree on (rank config, events, faults, constants)
    worker      one rank; the only module that imports torch
    preflight   refusals before any work (request, address, port, GPUs)
    launchers   torchrun / srun detection
    local       spawning and supervising local ranks
    launched    this process is one rank under a launcher: the sweep in a thread, the watchdog
    peers       under a launcher, naming the rank that is gone (heartbeats in the store)
    recorder    the output file (atomic, after every size) and the progress bar
    results     sizes, measured rows, the nccl-tests table
    lab         an emulated fabric in network namespaces: the harness run in it, measured vs predicted

May import: the ground floor and comm; torch in `worker` alone. Not `measure.logs` or
`measure.analysis`: what the harness writes is read back by `logs` like any other log.
"""
