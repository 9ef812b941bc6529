"""The model's kernel-switch falls, listed: MEASURED (the measured rows fall there too, quoted) and
KNOWN (the model's defects: no measurement shows the fall). Both are what `python -m
shardbudget.calibrate --falls` prints from switches.scan() and the data; paste its output here after a
pricing change and read the diff (a KNOWN entry that went is a fixed fall). `python -m
shardbudget.calibrate --report` prints KNOWN as the list of known defects; tests/unit/test_physics.py
fails when a scan meets a fall in neither list, or a listed fall no longer happens.
"""

MEASURED = {
    ('gb200-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 16 GPUs: 57.72 us at 8388608 B, 80.42 us at 16777216 B, 116.16 us at 33554432 B, 182.86 us at 67108864 B',
    ('gb200-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 36 GPUs: 72.38 us at 9437184 B, 104.02 us at 18874368 B, 113.90 us at 37748736 B, 176.66 us at 75497472 B',
    ('gb200-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 64 GPUs: 122.26 us at 16777216 B, 184.00 us at 33554432 B, 193.73 us at 67108864 B, 309.10 us at 134217728 B',
    ('gb200-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 72 GPUs: 136.51 us at 18874368 B, 206.23 us at 37748736 B, 225.46 us at 75497472 B, 348.60 us at 150994944 B',
    ('gb300-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 16 GPUs: 57.39 us at 8388608 B, 79.82 us at 16777216 B, 114.87 us at 33554432 B, 179.74 us at 67108864 B',
    ('gb300-nvl72', 2, 'eager', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv gb300 vLLM_custom_eager 0.19.0, 2 GPUs: 40.91 us at 2097152 B, 64.91 us at 4194304 B, 64.16 us at 8388608 B, 63.77 us at 16777216 B',
    ('gb300-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 36 GPUs: 71.41 us at 9437184 B, 102.57 us at 18874368 B, 112.55 us at 37748736 B, 173.55 us at 75497472 B',
    ('gb300-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 64 GPUs: 119.85 us at 16777216 B, 175.94 us at 33554432 B, 187.19 us at 67108864 B, 296.25 us at 134217728 B',
    ('gb300-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 72 GPUs: 133.85 us at 18874368 B, 197.07 us at 37748736 B, 215.38 us at 75497472 B, 331.92 us at 150994944 B',
    ('hgx-a100', 8, 'eager', 'one-shot', 'two-shot', 262144):
        'measured_comm.csv a100_sxm vLLM_custom_eager 0.14.0, 8 GPUs: 44.74 us at 65536 B, 45.26 us at 131072 B, 44.63 us at 262144 B, 44.76 us at 524288 B',
    ('hgx-a100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152):
        'measured_comm.csv a100_sxm TRTLLM 1.0.0, 8 GPUs: 28.25 us at 524288 B, 83.22 us at 1048576 B, 53.59 us at 2097152 B, 75.86 us at 4194304 B',
    ('hgx-b200', 4, 'trtllm', 'one-shot', 'nccl', 8000000):
        'measured_comm.csv b200_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.58 us at 2097152 B, 26.79 us at 4194304 B, 47.12 us at 8388608 B, 72.70 us at 16777216 B',
    ('hgx-b200', 4, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv b200_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.58 us at 2097152 B, 26.79 us at 4194304 B, 47.12 us at 8388608 B, 72.70 us at 16777216 B',
    ('hgx-b200', 8, 'eager', 'symm-mem-multimem', 'nccl', 134217728):
        'measured_comm.csv b200_sxm vLLM_custom_eager 0.19.0, 8 GPUs: 126.29 us at 33554432 B, 251.17 us at 67108864 B, 427.70 us at 134217728 B, 788.11 us at 268435456 B',
    ('hgx-b200', 8, 'sglang-0.5.14', 'one-shot', 'two-shot', 737280):
        'measured_comm.csv b200_sxm SGLang_CustomAllReduce_graph 0.5.14, 8 GPUs: 8.48 us at 262144 B, 11.56 us at 524288 B, 14.97 us at 1048576 B, 18.91 us at 2097152 B',
    ('hgx-b200', 8, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv b200_sxm TRTLLM 1.3.0rc20, 8 GPUs: 17.78 us at 1048576 B, 30.38 us at 2097152 B, 39.42 us at 4194304 B, 55.36 us at 8388608 B',
    ('hgx-b200', 8, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 134217728):
        'measured_comm.csv b200_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 110.72 us at 33554432 B, 222.48 us at 67108864 B, 396.08 us at 134217728 B, 715.31 us at 268435456 B',
    ('hgx-b200', 8, 'vllm-0.19', 'two-shot', 'symm-mem-multimem', 1048576):
        'measured_comm.csv b200_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 25.95 us at 262144 B, 26.05 us at 524288 B, 16.67 us at 1048576 B, 20.72 us at 2097152 B',
    ('hgx-b300', 2, 'eager', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv b300_sxm vLLM_custom_eager 0.19.0, 2 GPUs: 27.37 us at 2097152 B, 39.35 us at 4194304 B, 45.55 us at 8388608 B, 58.15 us at 16777216 B',
    ('hgx-b300', 4, 'trtllm', 'one-shot', 'nccl', 8000000):
        'measured_comm.csv b300_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.39 us at 2097152 B, 26.22 us at 4194304 B, 47.16 us at 8388608 B, 72.31 us at 16777216 B',
    ('hgx-b300', 4, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv b300_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.39 us at 2097152 B, 26.22 us at 4194304 B, 47.16 us at 8388608 B, 72.31 us at 16777216 B',
    ('hgx-b300', 8, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv b300_sxm TRTLLM 1.3.0rc20, 8 GPUs: 17.41 us at 1048576 B, 29.84 us at 2097152 B, 39.34 us at 4194304 B, 55.52 us at 8388608 B',
    ('hgx-b300', 8, 'vllm-0.19', 'two-shot', 'symm-mem-multimem', 4194304):
        'measured_comm.csv b300_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 27.26 us at 1048576 B, 29.22 us at 2097152 B, 25.39 us at 4194304 B, 38.22 us at 8388608 B',
    ('hgx-h100', 2, 'eager', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0, 2 GPUs: 97.60 us at 16777216 B, 188.68 us at 33554432 B, 293.73 us at 67108864 B, 556.56 us at 134217728 B',
    ('hgx-h100', 2, 'vllm-0.19', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0, 2 GPUs: 82.30 us at 16777216 B, 158.44 us at 33554432 B, 246.87 us at 67108864 B, 465.34 us at 134217728 B',
    ('hgx-h100', 4, 'eager', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0, 4 GPUs: 62.57 us at 8388608 B, 113.93 us at 16777216 B, 201.41 us at 33554432 B, 376.57 us at 67108864 B',
    ('hgx-h100', 4, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 4 GPUs: 12.91 us at 1048576 B, 26.13 us at 2097152 B, 39.74 us at 4194304 B, 63.75 us at 8388608 B',
    ('hgx-h100', 4, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0, 4 GPUs: 53.23 us at 8388608 B, 98.75 us at 16777216 B, 173.69 us at 33554432 B, 325.03 us at 67108864 B',
    ('hgx-h100', 8, 'eager', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0, 8 GPUs: 107.55 us at 16777216 B, 207.98 us at 33554432 B, 362.41 us at 67108864 B, 663.03 us at 134217728 B',
    ('hgx-h100', 8, 'trtllm', 'nccl', 'two-shot', 2097152):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 8 GPUs: 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B, 51.90 us at 4194304 B',
    ('hgx-h100', 8, 'trtllm', 'one-shot', 'nccl', 1048576):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 8 GPUs: 10.17 us at 262144 B, 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B',
    ('hgx-h100', 8, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 8 GPUs: 35.49 us at 2097152 B, 51.90 us at 4194304 B, 79.43 us at 8388608 B, 122.32 us at 16777216 B',
    ('hgx-h100', 8, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 92.37 us at 16777216 B, 177.75 us at 33554432 B, 320.88 us at 67108864 B, 574.62 us at 134217728 B',
    ('hgx-h20', 2, 'eager', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 2 GPUs: 97.60 us at 16777216 B, 188.68 us at 33554432 B, 293.73 us at 67108864 B, 556.56 us at 134217728 B',
    ('hgx-h20', 2, 'vllm-0.19', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 2 GPUs: 82.30 us at 16777216 B, 158.44 us at 33554432 B, 246.87 us at 67108864 B, 465.34 us at 134217728 B',
    ('hgx-h20', 4, 'eager', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 4 GPUs: 62.57 us at 8388608 B, 113.93 us at 16777216 B, 201.41 us at 33554432 B, 376.57 us at 67108864 B',
    ('hgx-h20', 4, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 4 GPUs: 12.91 us at 1048576 B, 26.13 us at 2097152 B, 39.74 us at 4194304 B, 63.75 us at 8388608 B',
    ('hgx-h20', 4, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 4 GPUs: 53.23 us at 8388608 B, 98.75 us at 16777216 B, 173.69 us at 33554432 B, 325.03 us at 67108864 B',
    ('hgx-h20', 8, 'eager', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 107.55 us at 16777216 B, 207.98 us at 33554432 B, 362.41 us at 67108864 B, 663.03 us at 134217728 B',
    ('hgx-h20', 8, 'trtllm', 'nccl', 'two-shot', 2097152):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B, 51.90 us at 4194304 B',
    ('hgx-h20', 8, 'trtllm', 'one-shot', 'nccl', 1048576):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 10.17 us at 262144 B, 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B',
    ('hgx-h20', 8, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 35.49 us at 2097152 B, 51.90 us at 4194304 B, 79.43 us at 8388608 B, 122.32 us at 16777216 B',
    ('hgx-h20', 8, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 92.37 us at 16777216 B, 177.75 us at 33554432 B, 320.88 us at 67108864 B, 574.62 us at 134217728 B',
    ('hgx-h200', 2, 'eager', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h200: SAME_ENGINE_KERNELS), 2 GPUs: 97.60 us at 16777216 B, 188.68 us at 33554432 B, 293.73 us at 67108864 B, 556.56 us at 134217728 B',
    ('hgx-h200', 2, 'vllm-0.19', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h200: SAME_ENGINE_KERNELS), 2 GPUs: 82.30 us at 16777216 B, 158.44 us at 33554432 B, 246.87 us at 67108864 B, 465.34 us at 134217728 B',
    ('hgx-h200', 4, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 4 GPUs: 12.91 us at 1048576 B, 26.13 us at 2097152 B, 39.74 us at 4194304 B, 63.75 us at 8388608 B',
    ('hgx-h200', 8, 'trtllm', 'nccl', 'two-shot', 2097152):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 8 GPUs: 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B, 51.90 us at 4194304 B',
    ('hgx-h200', 8, 'trtllm', 'one-shot', 'nccl', 1048576):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 8 GPUs: 10.17 us at 262144 B, 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B',
    ('hgx-h200', 8, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 8 GPUs: 35.49 us at 2097152 B, 51.90 us at 4194304 B, 79.43 us at 8388608 B, 122.32 us at 16777216 B',
    ('l40s-pcie-nps1-degraded', 2, 'eager', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv l40s vLLM_custom_eager 0.14.0, 2 GPUs: 123.66 us at 2097152 B, 238.16 us at 4194304 B, 454.82 us at 8388608 B, 902.24 us at 16777216 B',
    ('l40s-pcie-nps1-degraded', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv l40s vLLM_custom_graph 0.14.0, 2 GPUs: 116.82 us at 2097152 B, 229.41 us at 4194304 B, 449.95 us at 8388608 B, 891.88 us at 16777216 B',
    ('l40s-pcie-nps1-degraded', 4, 'nccl', 'ring/ll', 'ring/simple'):
        'measured_comm.csv l40s NCCL 2.27.3, 4 GPUs: 57.72 us at 131072 B, 109.70 us at 262144 B, 163.00 us at 524288 B, 268.30 us at 1048576 B',
    ('l40s-pcie-nps1-degraded', 4, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'):
        'measured_comm.csv l40s NCCL 2.27.3 all-gather, 4 GPUs: 36.15 us at 131072 B, 66.63 us at 262144 B, 98.57 us at 524288 B, 154.60 us at 1048576 B',
    ('l40s-pcie-nps1-degraded', 4, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'):
        'measured_comm.csv l40s NCCL 2.27.3 reduce-scatter, 4 GPUs: 36.75 us at 131072 B, 67.37 us at 262144 B, 108.70 us at 524288 B, 152.40 us at 1048576 B',
    ('l40s-pcie-nps1-degraded', 8, 'nccl', 'ring/ll', 'ring/simple'):
        'measured_comm.csv l40s NCCL 2.27.3, 8 GPUs: 426.00 us at 262144 B, 502.60 us at 524288 B, 863.20 us at 1048576 B, 2618.20 us at 2097152 B',
    ('l40s-pcie-nps1-degraded', 8, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'):
        'measured_comm.csv l40s NCCL 2.27.3 all-gather, 8 GPUs: 315.50 us at 262144 B, 619.80 us at 524288 B, 509.90 us at 1048576 B, 1489.60 us at 2097152 B',
    ('l40s-pcie-nps1-degraded', 8, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'):
        'measured_comm.csv l40s NCCL 2.27.3 reduce-scatter, 8 GPUs: 333.30 us at 262144 B, 629.60 us at 524288 B, 540.00 us at 1048576 B, 1232.80 us at 2097152 B',
    ('rtx4090-pcie', 2, 'nccl', 'ring/ll', 'ring/simple'):
        'nccl_tests.csv kalavai-client scripts/README.md (Kubernetes pod), 2 GPUs: 64.38 us at 131072 B, 97.63 us at 262144 B, 161.80 us at 524288 B, 300.60 us at 1048576 B',
}
"""Switch.key -> the measured rows that fall there too (test_physics.test_the_measured_steps_are_in_the_data:
each side extended to the edge falls by more than NOISE, and the model falls there)."""

KNOWN = {
    ('gb200-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'): 'measured 282.49 -> 283.62 us at the edge, no fall',
    ('gb200-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 32, 'trtllm', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb200-nvl72', 32, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb200-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 36, 'trtllm', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb200-nvl72', 36, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb200-nvl72', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'no rows measured at this release',
    ('gb200-nvl72', 4, 'trtllm', 'one-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('gb200-nvl72', 4, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('gb200-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 64, 'trtllm', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb200-nvl72', 64, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb200-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 72, 'trtllm', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb200-nvl72', 72, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb200-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 36.82 -> 47.98 us at the edge, no fall',
    ('gb200-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 8, 'vllm', 'symm-mem-multimem', 'nccl', 134217728): 'no rows measured at this release',
    ('gb200-nvl72', 8, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 134217728): 'no rows measured at this release',
    ('gb300-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'): 'measured 273.36 -> 279.66 us at the edge, no fall',
    ('gb300-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 32, 'trtllm', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb300-nvl72', 32, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb300-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 36, 'trtllm', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb300-nvl72', 36, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb300-nvl72', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'measured 39.93 -> 80.83 us at the edge, no fall',
    ('gb300-nvl72', 4, 'trtllm', 'one-shot', 'nccl', 8000000): 'measured 48.18 -> 47.71 us at the edge, no fall',
    ('gb300-nvl72', 4, 'trtllm', 'two-shot', 'nccl', 8000000): 'measured 48.18 -> 47.71 us at the edge, no fall',
    ('gb300-nvl72', 4, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('gb300-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 64, 'trtllm', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb300-nvl72', 64, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb300-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 72, 'trtllm', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb300-nvl72', 72, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb300-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 36.30 -> 39.90 us at the edge, no fall',
    ('gb300-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('h100-pcie', 2, 'trtllm', 'one-shot', 'nccl', 16000000): 'no rows measured at this release',
    ('h100-pcie', 2, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-a100', 2, 'trtllm', 'one-shot', 'nccl', 16000000): 'no rows measured at this release',
    ('hgx-a100', 4, 'sglang', 'one-shot', 'two-shot', 1048576): 'no rows measured at this release',
    ('hgx-a100', 4, 'trtllm', 'one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-a100', 4, 'trtllm', 'one-shot', 'two-shot', 4194304): 'no rows measured at this release',
    ('hgx-a100', 8, 'sglang', 'one-shot', 'two-shot', 1048576): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm', 'nccl', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'measured 52.19 -> 83.22 us at the edge, no fall',
    ('hgx-a100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 524288): 'measured 25.40 -> 28.25 us at the edge, no fall',
    ('hgx-a100', 8, 'vllm', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('hgx-a100', 8, 'vllm-0.19', 'one-shot', 'two-shot', 262144): 'measured 17.19 -> 17.13 us at the edge, no fall',
    ('hgx-b200', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'measured 40.88 -> 80.80 us at the edge, no fall',
    ('hgx-b200', 8, 'eager', 'two-shot', 'symm-mem-multimem', 1048576): 'measured 34.42 -> 38.04 us at the edge, no fall',
    ('hgx-b200', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 48.23 -> 96.63 us at the edge, no fall',
    ('hgx-b200', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'measured 48.16 -> 91.16 us at the edge, no fall',
    ('hgx-b200', 8, 'vllm', 'flashinfer-one-shot', 'symm-mem-multimem', 1048576): 'no rows measured at this release',
    ('hgx-b200', 8, 'vllm', 'symm-mem-multimem', 'nccl', 134217728): 'no rows measured at this release',
    ('hgx-b300', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'measured 40.33 -> 79.75 us at the edge, no fall',
    ('hgx-b300', 4, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-b300', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 48.20 -> 94.66 us at the edge, no fall',
    ('hgx-b300', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'measured 47.98 -> 90.73 us at the edge, no fall',
    ('hgx-b300', 8, 'sglang-0.5.14', 'one-shot', 'two-shot', 737280): 'measured 14.15 -> 14.30 us at the edge, no fall',
    ('hgx-b300', 8, 'vllm', 'flashinfer-one-shot', 'flashinfer-two-shot', 2097152): 'no rows measured at this release',
    ('hgx-b300', 8, 'vllm', 'flashinfer-two-shot', 'symm-mem-multimem', 4194304): 'no rows measured at this release',
    ('hgx-h100', 2, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h100', 4, 'vllm', 'flashinfer-one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-h100', 4, 'vllm', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h100', 8, 'vllm', 'flashinfer-one-shot', 'symm-mem-multimem', 524288): 'no rows measured at this release',
    ('hgx-h100', 8, 'vllm', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h20', 2, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h20', 4, 'vllm', 'flashinfer-one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-h20', 4, 'vllm', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h20', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h20', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h20', 8, 'vllm', 'flashinfer-one-shot', 'symm-mem-multimem', 524288): 'no rows measured at this release',
    ('hgx-h20', 8, 'vllm', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h200', 2, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h200', 4, 'vllm', 'flashinfer-one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-h200', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h200', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h200', 8, 'vllm', 'flashinfer-one-shot', 'symm-mem-multimem', 524288): 'no rows measured at this release',
    ('hgx-h800', 2, 'eager', 'one-shot', 'symm-mem-two-shot', 8388608): 'no rows measured at this release',
    ('hgx-h800', 2, 'trtllm', 'one-shot', 'nccl', 16000000): 'no rows measured at this release',
    ('hgx-h800', 2, 'vllm', 'flashinfer-two-shot', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h800', 2, 'vllm-0.19', 'one-shot', 'symm-mem-two-shot', 8388608): 'no rows measured at this release',
    ('hgx-h800', 4, 'eager', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('hgx-h800', 4, 'eager', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h800', 4, 'nccl', 'nvls/simple', 'ring/simple'): 'no rows measured at this release',
    ('hgx-h800', 4, 'sglang', 'one-shot', 'two-shot', 393216): 'no rows measured at this release',
    ('hgx-h800', 4, 'sglang-0.5.14', 'one-shot', 'two-shot', 393216): 'no rows measured at this release',
    ('hgx-h800', 4, 'trtllm', 'one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-h800', 4, 'trtllm', 'one-shot', 'two-shot', 4194304): 'no rows measured at this release',
    ('hgx-h800', 4, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('hgx-h800', 4, 'vllm', 'flashinfer-one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-h800', 4, 'vllm', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h800', 4, 'vllm-0.19', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('hgx-h800', 4, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h800', 8, 'eager', 'one-shot', 'symm-mem-multimem', 262144): 'no rows measured at this release',
    ('hgx-h800', 8, 'eager', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h800', 8, 'sglang', 'one-shot', 'two-shot', 131072): 'no rows measured at this release',
    ('hgx-h800', 8, 'sglang', 'two-shot', 'nccl', 16777216): 'no rows measured at this release',
    ('hgx-h800', 8, 'sglang-0.5.14', 'one-shot', 'two-shot', 163840): 'no rows measured at this release',
    ('hgx-h800', 8, 'sglang-0.5.14', 'two-shot', 'nccl', 16777216): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm-1.0', 'one-shot', 'nccl', 524288): 'no rows measured at this release',
    ('hgx-h800', 8, 'vllm', 'flashinfer-one-shot', 'symm-mem-multimem', 524288): 'no rows measured at this release',
    ('hgx-h800', 8, 'vllm', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h800', 8, 'vllm-0.19', 'one-shot', 'symm-mem-multimem', 262144): 'no rows measured at this release',
    ('hgx-h800', 8, 'vllm-0.19', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('l40s-pcie-nps1-degraded', 2, 'nccl', 'ring/ll', 'ring/simple'): 'measured 31.27 -> 37.96 us at the edge, no fall',
    ('l40s-pcie-nps1-degraded', 2, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'measured 20.54 -> 30.05 us at the edge, no fall',
    ('l40s-pcie-nps1-degraded', 2, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'measured 20.33 -> 28.37 us at the edge, no fall',
    ('l40s-pcie-nps1-degraded', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-nps1-degraded', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'measured 458.88 -> 456.71 us at the edge, no fall',
    ('l40s-pcie-nps1-degraded', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-switch', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-switch', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-switch', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-switch', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-switch', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 4, 'sglang', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi300x', 4, 'sglang-0.5.14', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi300x', 8, 'sglang', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('mi300x', 8, 'sglang-0.5.14', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('mi325x', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 4, 'sglang', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi325x', 4, 'sglang-0.5.14', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi325x', 8, 'sglang', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('mi325x', 8, 'sglang-0.5.14', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('mi355x', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 4, 'sglang', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi355x', 4, 'sglang-0.5.14', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('rtx-pro-6000-2s-epyc', 2, 'nccl', 'ring/ll', 'ring/simple'): 'no rows measured at this release',
    ('rtx-pro-6000-2s-epyc', 2, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx-pro-6000-2s-epyc', 2, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
    ('rtx4090-pcie', 2, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx4090-pcie', 2, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
    ('rtx4090-pcie', 4, 'nccl', 'ring/ll', 'ring/simple'): 'no rows measured at this release',
    ('rtx4090-pcie', 4, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx4090-pcie', 4, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'sglang-0.5.14', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'vllm-0.19', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 4, 'nccl', 'ring/ll', 'ring/simple'): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 4, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 4, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
}
"""Switch.key -> why the model's fall there is not a measured one: defects to fix (issue 20), printed by
`python -m shardbudget.calibrate --report`; test_physics.test_every_known_fall_still_happens fails on
one that is gone, so a fixed fall must leave the list."""
