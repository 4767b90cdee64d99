#!/bin/sh
# Session 32, sixteenth call: kquant quantize with --backend cpu and
# --backend cuda on every image at k = 16 and 256, bytes compared, on the
# session's final tree (8c7262e). Binary: .gpu/s32b/p.txz; images
# .gpu/s32b/imgs; carry [".gpu/s32b"].
set -u
R=$PWD; mkdir -p /tmp/b /tmp/q; tar xJf $R/.gpu/s32b/p.txz -C /tmp/b; B=/tmp/b
I=$R/.gpu/s32b/imgs
same=0; diff=0
for f in $I/*.png $I/*.jpg; do
	for k in 16 256; do
		n=$(basename $f); n=${n%.*}
		$B/kquant quantize --backend cpu -k $k --force -o /tmp/q/$n-$k-cpu.png $f 2>>/tmp/q/err
		$B/kquant quantize --backend cuda -k $k --force --json -o /tmp/q/$n-$k-cuda.png $f > /tmp/q/$n-$k.json 2>>/tmp/q/err
		if cmp -s /tmp/q/$n-$k-cpu.png /tmp/q/$n-$k-cuda.png; then same=$((same+1)); else diff=$((diff+1)); echo "DIFFERS $n k=$k"; fi
		echo "$n k=$k $(grep -o '"cluster":[0-9.]*' /tmp/q/$n-$k.json)"
	done
done
echo "e2e: $same same bytes, $diff differ"; head -5 /tmp/q/err
