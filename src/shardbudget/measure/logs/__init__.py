"""Reading what others (or the harness) measured into `MeasurementSet`s.

    read             read_log / parse_log_text: nccl-tests text and -J JSON, rccl-tests, shardbudget
                     JSON, told apart by content
    records          Sample, MeasurementSet, IterStats, LogProblem (what check will not certify) and
                     the number readers the parsers share
    shardbudget_json shardbudget's own JSON (what the harness writes)
    nccl_json        nccl-tests' own JSON (-J) with per-iteration timing (-I), format of commit a0b82b2
    nccl_scan        nccl-tests text: lines into tables and their run context
    nccl_tables      nccl-tests tables into samples, with warnings
    nccl_info        NCCL's INFO lines and NCCL_* settings in a log

May import: the ground floor and comm. Not `measure.harness` or `measure.analysis`.
"""
