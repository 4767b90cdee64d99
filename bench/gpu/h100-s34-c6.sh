#!/bin/sh
# Session 34, sixth call: kq_rd_finish past its third sub-level a subtree a
# warp, depth first (no block barrier a sub-level, no walk of the heap from
# the root a node). Rebuilds the fatbin, runs every cudakern test on it,
# kquant quantize cpu against cuda (bytes), then old (4b088eb, main before
# it, its embedded fatbin) against new: ncu's durations of kq_rd_levels and,
# with KQUANT_CUDA_REDUCE=launch, of kq_rd_finish alone (graf1 and home into
# 32768 parts, 3 reductions each), and BenchmarkReduce, 2 rounds.
# Binaries: .gpu/s34/p.txz; images .gpu/s34/imgs; carry [".gpu/s34"].
set -u
. bench/gpu/h100-lib.sh
kq_setup .gpu/s34
kq_check
kq_reduce_ab
