#!/usr/bin/env bash
# bench/run.sh — kquant against pngquant, side by side, end to end.
#
# Usage: bench/run.sh [IMAGE_DIR]      (default: ../shared/images, from the repository root)
#
# For every PNG or JPEG in IMAGE_DIR and k = 16, 64, 256 it times the whole
# command (process start, decode, quantize, encode, write; no dithering; PNG in,
# paletted PNG out) of
#     kquant quantize -q -k K -o OUT IN.png
#     pngquant --nofs K --force --output OUT IN.png
# RUNS times each (default 3), alternating the two, and takes the median wall
# time. JPEGs are first converted to PNG with ImageMagick (convert in.jpg
# PNG24:out.png, the decoding ANCHORS.md used), so both tools read the same
# pixels. PSNR of each output against the PNG input is ImageMagick's
# `compare -metric PSNR`. The table goes to bench/results.md and stdout.
#
# Environment: RUNS (runs per tool, ≥ 3), KS (default "16 64 256"),
# KQUANT_FLAGS (extra flags for kquant, e.g. "-j 2").
#
# Timings are of this machine at this moment: other work on it adds noise,
# which alternating the tools spreads over both.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
images=${1:-$root/../shared/images}
runs=${RUNS:-3}
ks=${KS:-"16 64 256"}
out_md=$root/bench/results.md

for tool in go pngquant convert compare awk; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found (apt-get install pngquant imagemagick)" >&2; exit 2; }
done
[ "$runs" -ge 3 ] || { echo "bench: RUNS must be at least 3" >&2; exit 2; }
[ -d "$images" ] || { echo "bench: no image directory $images" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && CGO_ENABLED=0 go build -o "$work/kquant" ./cmd/kquant)

# Inputs as PNG.
inputs=()
for f in "$images"/*; do
	name=$(basename "$f")
	case "${name,,}" in
	*.png) cp "$f" "$work/$name"; inputs+=("$name") ;;
	*.jpg | *.jpeg) convert "$f" "PNG24:$work/${name%.*}.png"; inputs+=("${name%.*}.png") ;;
	esac
done
[ ${#inputs[@]} -gt 0 ] || { echo "bench: no PNG or JPEG in $images" >&2; exit 2; }

# seconds CMD...: wall time of CMD in seconds.
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$work/stderr" || { echo "bench: failed: $*" >&2; cat "$work/stderr" >&2; exit 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

psnr() {
	# compare writes the metric on stderr and exits 1 when the images differ.
	local v
	v=$(compare -metric PSNR "$1" "$2" null: 2>&1 || true)
	printf '%.2f' "${v%% *}"
}

{
	echo "# kquant vs pngquant"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start;"
	echo "kquant $("$work/kquant" version | cut -d' ' -f2-), $(pngquant --version 2>&1 | head -1 | sed 's/^/pngquant /')."
	echo "Median of $runs runs, wall time of the whole command (PNG in, paletted PNG out, no dithering); PSNR by ImageMagick \`compare -metric PSNR\`."
	echo
	echo "| image | k | kquant s | pngquant s | kquant PSNR | pngquant PSNR |"
	echo "|---|---|---|---|---|---|"
} >"$work/table.md"
cat "$work/table.md"

for in in "${inputs[@]}"; do
	for k in $ks; do
		kq=() pq=()
		for ((r = 0; r < runs; r++)); do
			# shellcheck disable=SC2086
			kq+=("$(seconds "$work/kquant" quantize -q --force ${KQUANT_FLAGS:-} -k "$k" -o "$work/kq.png" "$work/$in")")
			pq+=("$(seconds pngquant --nofs "$k" --force --output "$work/pq.png" "$work/$in")")
		done
		row="| ${in%.png} | $k | $(median "${kq[@]}") | $(median "${pq[@]}") | $(psnr "$work/$in" "$work/kq.png") | $(psnr "$work/$in" "$work/pq.png") |"
		echo "$row" | tee -a "$work/table.md"
	done
done

cp "$work/table.md" "$out_md"
echo
echo "written to ${out_md#"$root"/}"
