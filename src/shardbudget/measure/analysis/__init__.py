"""Measurements against the model: a calibrated profile fitted to them, or a verdict on them.

    fit           measurements -> a calibrated profile in catalog format (refused outside physical
                  bounds); its nccl_line is the one price of a logged sample, shared with check
    fit_write     the node's links scaled together; the profile written so that it loads back
    check         `shardbudget check`: measured vs predicted per size and region, verdicts
    check_causes  why a region is off: told by NCCL's INFO lines, or guessed from the curve's shape
    check_rows    what is never certified whatever the ratios, and the report's last line

May import: the ground floor, fabric, comm and `measure.logs`. Not `measure.harness`.
"""
