package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkQuantize times the command end to end in process (decode,
// cluster, encode, write) on the images of ../shared/images (PNG ones; set
// KQUANT_BENCH_IMAGES to another directory), at k = 16, 64, 256. It skips
// when there are none. For the comparison with pngquant, see bench/run.sh.
func BenchmarkQuantize(b *testing.B) {
	dir := os.Getenv("KQUANT_BENCH_IMAGES")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "images")
	}
	images, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	if len(images) == 0 {
		b.Skipf("no PNG images in %s", dir)
	}
	out := filepath.Join(b.TempDir(), "out.png")
	for _, img := range images {
		for _, k := range []int{16, 64, 256} {
			b.Run(filepath.Base(img)+"/k="+strconv.Itoa(k), func(b *testing.B) {
				for b.Loop() {
					args := []string{"quantize", "-q", "--force", "-k", strconv.Itoa(k), "-o", out, img}
					if code := run(context.Background(), args, io.Discard, io.Discard, nil); code != exitOK {
						b.Fatalf("exit status %d", code)
					}
				}
			})
		}
	}
}
