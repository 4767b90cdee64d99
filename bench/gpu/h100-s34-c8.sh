#!/bin/sh
# Session 34, eighth call: the ranks of kq_rd_finish's nodes of at most 32
# points over all 32 lanes, unrolled, so that the shuffles pipeline (they
# went a node's c lanes in turn). Rebuilds the fatbin, runs every cudakern test on it,
# kquant quantize cpu against cuda (bytes), then old (67d28dc, main before
# it, its embedded fatbin) against new: ncu's durations of kq_rd_levels and,
# with KQUANT_CUDA_REDUCE=launch, of kq_rd_finish alone (graf1 and home into
# 32768 parts, 3 reductions each), and BenchmarkReduce, 2 rounds.
# (Not kept: the change was reverted after this call.)
# Binaries: .gpu/s34/p.txz; images .gpu/s34/imgs; carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
kq_check
kq_reduce_ab
