"""Measurement: a torch.distributed collective benchmark and readers for benchmark logs.

The harness (``shardbudget measure``, ``python -m shardbudget.measure``, torchrun's ``-m``):

    command     the one option parser and printer behind every front end
    harness     run_measure: check, plan the sizes, launch, supervise, save
    protocol    what the parent and the ranks agree on (rank config, events, faults, constants)
    worker      one rank; the only module that imports torch
    checks      refusals before any work (request, address, port, GPUs)
    launchers   torchrun / srun detection
    local       spawning and supervising local ranks
    peers       under a launcher, naming the rank that is gone (heartbeats in the store)
    recorder    the output file (atomic, after every size) and the progress bar
    results     sizes, measured rows, the nccl-tests table

Reading what others measured, and using it:

    logs        read_log / parse_log_text: nccl-tests text and -J JSON, rccl-tests, shardbudget JSON
    log_records Sample, MeasurementSet, LogProblem (what check will not certify) and the number readers
                the parsers share
    log_json    shardbudget's own JSON
    nccl_json   nccl-tests' own JSON (-J) with per-iteration timing (-I), format of commit a0b82b2
    nccl_scan   nccl-tests text: lines into tables and their run context
    nccl_tables nccl-tests tables into samples, with warnings
    fit         measurements -> a calibrated profile in catalog format (refused outside physical bounds)
    check       measured vs predicted per region (check_causes: why; check_rows: what is never certified)
    lab         an emulated fabric in network namespaces, measured vs predicted
"""
