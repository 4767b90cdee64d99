#!/bin/sh
# Session 25, fifth call: kquant quantize end to end on every image at k =
# 16, 64 and 256, CPU, CUDA and auto side by side (scripts/gpu-e2e.sh,
# 3 runs each): the same output bytes on all three with the two-m-tile
# loop, the clustering's share of the GPU run's wall time, and where auto
# ran.
# Before the call, here: CGO_ENABLED=0 go build -ldflags='-s -w' -o .gpu/s25e/kquant ./cmd/kquant (gzipped into kq.tgz),
# and the images as PNG in .gpu/s25e/png; carry [".gpu/s25e"].
set -u
R=$PWD
tar xzf $R/.gpu/s25e/kq.tgz -C $R/.gpu/s25e
GPU=$R/.gpu/s25e sh scripts/gpu-e2e.sh 2>&1 | tee $OUT/e2e.md
